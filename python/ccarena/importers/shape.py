"""The shape of an imported JSON document, checked before the parser reads it: every object, list
and number the parser uses must be one, so a file of the right outline with a wrong inner shape is
one line naming the key path (``intervals[3].streams[0]: expected an object, got a string``)
instead of an ``AttributeError`` deep in the parser.

A shape is :class:`Obj` (an object with known keys, each optional unless ``required``),
:class:`Map` (an object of any keys, each value of one shape), :class:`Arr` (a list of one
shape), a scalar (:data:`NUMBER`, :data:`INTEGER`, :data:`STRING`, :data:`FLAG`), :data:`ANY`, or
:func:`nullable` of one of those. Keys a shape does not name are not checked (the parser does not
read them). Text from the file appears in a message only as a key, JSON-escaped and cut short.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any, Union

from ccarena.importers.model import ImportProblem

MAX_FLOAT = 1.7976931348623157e308


@dataclass(frozen=True)
class Scalar:
    """A JSON scalar: ``kind`` is ``number``, ``integer``, ``string``, ``flag`` (true/false or
    0/1 as some tools write it) or ``any`` (no check)."""

    kind: str
    null: bool = False


@dataclass(frozen=True)
class Obj:
    """An object whose keys ``fields`` have the given shapes; ``required`` keys must be present."""

    fields: dict[str, "Shape"]
    required: tuple[str, ...] = ()
    null: bool = False
    numbers: tuple[str, ...] = field(init=False, repr=False, compare=False)
    others: tuple[tuple[str, "Shape"], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Plain numbers are most of a measurement: checked inline (check's fast path).
        numbers = tuple(k for k, v in self.fields.items() if v == NUMBER)
        object.__setattr__(self, "numbers", numbers)
        object.__setattr__(self, "others", tuple((k, v) for k, v in self.fields.items()
                                                 if k not in numbers))


@dataclass(frozen=True)
class Map:
    """An object of any keys whose values all have the shape ``value``."""

    value: "Shape"
    null: bool = False


@dataclass(frozen=True)
class Arr:
    """A list whose items all have the shape ``item``."""

    item: "Shape"
    null: bool = False


Shape = Union[Scalar, Obj, Map, Arr]

NUMBER = Scalar("number")
INTEGER = Scalar("integer")
STRING = Scalar("string")
FLAG = Scalar("flag")
ANY = Scalar("any")


def nullable(shape: Shape) -> Shape:
    """``shape``, or JSON null."""
    return replace(shape, null=True)


_WANT = {"number": "a number", "integer": "a whole number", "string": "a string",
         "flag": "true or false"}


def _what(value: Any) -> str:
    """The kind of a JSON value, in words."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object"


def key_path(path: str, key: str) -> str:
    """``path.key``, or ``path["key"]`` for a key that is not a plain word (JSON-escaped and cut
    to 40 characters: the key is the file's text)."""
    if key.isidentifier() and key.isascii() and len(key) <= 40:
        return f"{path}.{key}" if path else key
    quoted = json.dumps(key[:40] + ("…" if len(key) > 40 else ""))
    return f"{path}[{quoted}]"


def _scalar_ok(value: Any, kind: str) -> str | None:
    """Why ``value`` is not of ``kind`` (None when it is); exact types, as JSON gives them."""
    t = type(value)
    if kind == "number" or kind == "integer":
        if t is float and kind == "number":
            return None
        if t is int:
            return None if -MAX_FLOAT <= value <= MAX_FLOAT else "a number within range"
        return _WANT[kind]
    if kind == "string":
        return None if t is str else _WANT[kind]
    if kind == "flag":
        return None if t is bool or (t is int and value in (0, 1)) else _WANT[kind]
    return None


class _Bad(Exception):
    """Where a value is off its shape: raised at the value, its key path completed on the way
    out (so a document of the right shape costs no path strings)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        self.parts: list[str | int] = []


def _walk(value: Any, shape: Shape) -> None:
    if value is None and shape.null:
        return
    kind = type(shape)
    if kind is Scalar:
        want = _scalar_ok(value, shape.kind)
        if want is not None:
            raise _Bad(f"expected {want}, got {_what(value)}")
    elif kind is Arr:
        if type(value) is not list:
            raise _Bad(f"expected a list, got {_what(value)}")
        item = shape.item
        for i, x in enumerate(value):
            try:
                _walk(x, item)
            except _Bad as bad:
                bad.parts.append(i)
                raise
    elif type(value) is not dict:
        raise _Bad(f"expected an object, got {_what(value)}")
    elif kind is Map:
        for key, x in value.items():
            try:
                _walk(x, shape.value)
            except _Bad as bad:
                bad.parts.append(key)
                raise
    else:
        for key in shape.required:
            if key not in value:
                raise _Bad(f"has no {json.dumps(key)}")
        get = value.get
        for key in shape.numbers:
            x = get(key)
            t = type(x)
            if t is float or x is None or (t is int and -MAX_FLOAT <= x <= MAX_FLOAT):
                if x is None and key in value:
                    bad = _Bad("expected a number, got null")
                    bad.parts.append(key)
                    raise bad
                continue
            bad = _Bad(f"expected {_scalar_ok(x, 'number')}, got {_what(x)}")
            bad.parts.append(key)
            raise bad
        for key, sub in shape.others:
            x = get(key, _MISSING)
            if x is _MISSING:
                continue
            try:
                if type(sub) is Scalar and not (x is None and sub.null):
                    want = _scalar_ok(x, sub.kind)
                    if want is not None:
                        raise _Bad(f"expected {want}, got {_what(x)}")
                else:
                    _walk(x, sub)
            except _Bad as bad:
                bad.parts.append(key)
                raise


_MISSING = object()


def check(value: Any, shape: Shape, path: str = "") -> None:
    """Check that ``value`` (a parsed JSON document or part of it, at key path ``path``) has
    ``shape``. Linear in the size of what the shape names; no recursion beyond the shape's depth.

    Raises:
        ImportProblem: the first place it does not, as ``PATH: expected X, got Y`` or ``PATH:
            has no KEY``.
    """
    try:
        _walk(value, shape)
    except _Bad as bad:
        where = path
        for part in reversed(bad.parts):
            where = f"{where}[{part}]" if isinstance(part, int) else key_path(where, part)
        raise ImportProblem(f"{where or 'the top level'}: {bad.message}") from None
