"""Pydantic's validation errors → one line naming the field and the fix."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from ccarena import flavors as flavor_catalog
from ccarena.errors import FieldError
from ccarena.scenario.schema import Scenario
from ccarena.topology import KINDS as TOPOLOGY_KINDS


def _loc_to_path(loc: tuple[Any, ...]) -> str:
    """Pydantic's error location → ``flows[2].flavor`` (dropping union/tag artifacts)."""
    parts: list[str] = []
    skip_next_tag = False
    for item in loc:
        if skip_next_tag:
            skip_next_tag = False
            if item in TOPOLOGY_KINDS:
                continue
        if isinstance(item, int):
            parts.append(f"[{item}]")
            continue
        item = str(item)
        if item.startswith("function-") or item in ("list[AccessLink]", "AccessLink"):
            continue
        parts.append(("." if parts else "") + item)
        if item == "topology":
            skip_next_tag = True
    return "".join(parts)


def _model_fields_by_alias(loc: tuple[Any, ...]) -> list[str]:
    """Names a user may write at the location of an unknown field (for 'did you mean')."""
    model: Any = Scenario
    for item in loc[:-1]:
        if isinstance(item, int) or model is None:
            continue
        if item in TOPOLOGY_KINDS and model is None:
            continue
        if isinstance(item, str) and item in TOPOLOGY_KINDS:
            model = TOPOLOGY_KINDS[item]
            continue
        fields = {(f.alias or n): f for n, f in model.model_fields.items()}
        field = fields.get(item)
        model = _model_class(field.annotation) if field is not None else None
    if model is None:
        return []
    return [(f.alias or n) for n, f in model.model_fields.items()]


def _model_class(annotation: Any) -> Any:
    """The pydantic model class inside a field annotation (``list[Flow]`` → Flow), if any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        found = _model_class(arg)
        if found is not None:
            return found
    return None


def format_validation_error(err: ValidationError) -> str:
    """One line for the first problem in ``err``: ``<field path>: <what is wrong>``.

    When pydantic found several problems, the line ends with ``(and N more problems)``.
    """
    errors = err.errors(include_url=False)
    # A union (e.g. one access table or a list of them) reports a type mismatch for each branch it
    # did not take; the error inside the branch the user meant is the useful one.
    mismatches = {"model_type", "list_type", "dict_type", "model_attributes_type"}
    specific = [e for e in errors if e["type"] not in mismatches]
    if specific and len(specific) < len(errors):
        errors = specific
    first = errors[0]
    path = _loc_to_path(first["loc"])
    kind = first["type"]
    cause = (first.get("ctx") or {}).get("error")
    if isinstance(cause, FieldError):
        path = f"{path}.{cause.field}" if path else cause.field
        message = cause.message
    elif kind == "extra_forbidden":
        allowed = _model_fields_by_alias(first["loc"])
        name = str(first["loc"][-1])
        hint = flavor_catalog.suggest(name, allowed)
        listing = f"; allowed here: {', '.join(allowed)}" if allowed else ""
        message = f"unknown field{hint}{listing}"
    elif kind == "missing":
        message = "is required"
    elif kind == "union_tag_invalid":
        tag = (first.get("ctx") or {}).get("tag")
        path = f"{path}.kind" if path else "kind"
        message = (f"unknown topology kind '{tag}'{flavor_catalog.suggest(str(tag), list(TOPOLOGY_KINDS))}; "
                   f"available: {', '.join(TOPOLOGY_KINDS)}")
    elif kind == "union_tag_not_found":
        path = f"{path}.kind" if path else "kind"
        message = f"is required; one of {', '.join(TOPOLOGY_KINDS)}"
    elif kind == "value_error":
        message = first["msg"].removeprefix("Value error, ")
    else:
        message = first["msg"]
        if "input" in first and not isinstance(first["input"], (dict, list)):
            message = f"{message} (got {first['input']!r})"
    more = len(errors) - 1
    tail = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
    return f"{path}: {message}{tail}" if path else f"{message}{tail}"
