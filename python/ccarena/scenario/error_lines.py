"""Pydantic's validation errors → one line naming the field and the fix."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from ccarena import flavors as flavor_catalog
from ccarena.errors import FieldError, FieldErrors
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
    """Every problem in ``err``, one line each: ``<field path>: <what is wrong>[; hint]``.

    A union's type mismatches for the branches the user did not mean are left out when a more
    specific problem exists; the same line is not repeated.
    """
    errors = err.errors(include_url=False)
    # A union (e.g. one access table or a list of them) reports a type mismatch for each branch it
    # did not take; the error inside the branch the user meant is the useful one.
    mismatches = {"model_type", "list_type", "dict_type", "model_attributes_type"}
    specific = [e for e in errors if e["type"] not in mismatches]
    if specific and len(specific) < len(errors):
        errors = specific
    return "\n".join(dict.fromkeys(line for e in errors for line in _problem_lines(e)))


def _problem_lines(problem: Any) -> list[str]:
    """One pydantic error as lines: one, or one per :class:`FieldError` of a validator that
    found several (:class:`ccarena.errors.FieldErrors`)."""
    cause = (problem.get("ctx") or {}).get("error")
    if isinstance(cause, FieldErrors):
        return [_problem_line({**problem, "ctx": {**problem["ctx"], "error": e}}) for e in cause.errors]
    return [_problem_line(problem)]


def _problem_line(problem: Any) -> str:
    """One pydantic error (a dict of ``err.errors()``) as ``<field path>: <what is wrong>``."""
    path = _loc_to_path(problem["loc"])
    kind = problem["type"]
    cause = (problem.get("ctx") or {}).get("error")
    if isinstance(cause, FieldError):
        path = f"{path}.{cause.field}" if path else cause.field
        message = cause.message
    elif kind == "extra_forbidden":
        allowed = _model_fields_by_alias(problem["loc"])
        name = str(problem["loc"][-1])
        hint = flavor_catalog.suggest(name, allowed)
        listing = f"; allowed here: {', '.join(allowed)}" if allowed else ""
        message = f"unknown field{hint}{listing}"
    elif kind == "missing":
        message = "is required"
    elif kind == "union_tag_invalid":
        tag = (problem.get("ctx") or {}).get("tag")
        path = f"{path}.kind" if path else "kind"
        message = (f"unknown topology kind '{tag}'{flavor_catalog.suggest(str(tag), list(TOPOLOGY_KINDS))}; "
                   f"available: {', '.join(TOPOLOGY_KINDS)}")
    elif kind == "union_tag_not_found":
        path = f"{path}.kind" if path else "kind"
        message = f"is required; one of {', '.join(TOPOLOGY_KINDS)}"
    elif kind == "value_error":
        message = problem["msg"].removeprefix("Value error, ")
    else:
        message = problem["msg"]
        if "input" in problem and not isinstance(problem["input"], (dict, list)):
            message = f"{message} (got {problem['input']!r})"
    return f"{path}: {message}" if path else message
