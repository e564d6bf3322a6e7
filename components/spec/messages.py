"""Validation errors as the user reads them: each names the field path, what was wrong and what is accepted, and
for a near miss (a misspelt field, a value close to a choice) the likely intended one. Pydantic's own wording
("Input should be a valid dictionary or instance of DataSourceSpec") never reaches the user."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ValidationError

from components.spec.suggest import nearest
from gpulease.core.validation_words import BOUNDS, KIND_ACCEPTED, bound_words, kind_of, shown

# The union member names pydantic puts in an error's location ("forward", 0, "int"): not field names.
_UNION_MEMBER = re.compile(r"^(int|str|float|bool|none|list\[.*\]|dict\[.*\]|literal\[.*\]|tuple\[.*\]|"
                           r"function-.*|[A-Z][A-Za-z]*|json-or-python\[.*\]|lax-or-strict\[.*\])$")

def path_of(prefix: str, loc: tuple[Any, ...]) -> str:
    out = prefix
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _UNION_MEMBER.match(str(part)):
            continue
        else:
            out += f".{part}"
    return out


def model_at(model: type[BaseModel], loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The model class a location points into, to list the accepted fields of an unknown key."""
    current: Any = model
    for part in loc:
        if isinstance(part, int) or current is None or _UNION_MEMBER.match(str(part)):
            continue
        fields = {(f.alias or n): f for n, f in current.model_fields.items()}
        field = fields.get(part)
        if field is None:
            return current
        current = _first_model(field.annotation)
    return current


def _first_model(ann: Any) -> type[BaseModel] | None:
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return ann
    for arg in getattr(ann, "__args__", ()) or ():
        found = _first_model(arg)
        if found is not None:
            return found
    return None


def field_names(model: type[BaseModel] | None) -> list[str]:
    return sorted((f.alias or n) for n, f in model.model_fields.items()) if model else []


def _described(model: type[BaseModel], loc: tuple[Any, ...]) -> str:
    parent = model_at(model, loc[:-1])
    fields = {(f.alias or n): f for n, f in parent.model_fields.items()} if parent else {}
    field = fields.get(str(loc[-1])) if loc else None
    description = (field.description or "").rstrip(".") if field is not None else ""
    return description[:1].lower() + description[1:] if description else "the field, as docs/config.md describes it"


def _type_message(err: dict[str, Any], model: type[BaseModel], loc: tuple[Any, ...]) -> str:
    kind = err["type"]
    given = err.get("input")
    ctx = err.get("ctx") or {}
    if kind in ("model_type", "model_attributes_type"):
        target = model_at(model, loc)
        names = ", ".join(field_names(target)[:8])
        return f"{shown(given)} is {kind_of(given)}; accepted: a mapping of fields ({names}{', ...' if target and len(target.model_fields) > 8 else ''})"
    if kind == "literal_error":
        expected = ctx.get("expected", "")
        choices = re.findall(r"'([^']*)'", str(expected))
        hint = nearest(str(given), choices) if isinstance(given, str) else None
        return (f"{shown(given)} is not one of the choices; accepted: {expected}"
                + (f" (did you mean {hint}?)" if hint and hint != given else ""))
    if kind in BOUNDS:
        return f"{shown(given)} is out of range; accepted: {bound_words(kind, ctx)}"
    if kind in KIND_ACCEPTED:
        return f"{shown(given)} is {kind_of(given)}; accepted: {KIND_ACCEPTED[kind]}"
    return f"{shown(given)} is not accepted here; accepted: what docs/config.md says of this field"


def format_errors(prefix: str, exc: ValidationError, model: type[BaseModel], field_error: type[Exception]) -> list[tuple[str, str]]:
    """``(field path, message)`` per problem; ``field_error`` is the cross-field error carrying its own paths."""
    errors = exc.errors()
    unknown = [tuple(e["loc"]) for e in errors if e["type"] == "extra_forbidden"]
    suggested: dict[tuple[Any, ...], str] = {}
    for loc in unknown:
        choices = field_names(model_at(model, loc[:-1]))
        hint = nearest(str(loc[-1]), choices)
        if hint is not None:
            suggested[loc] = hint
    # A misspelt required field is one mistake, not an unknown field plus a missing one.
    covered = {(*loc[:-1], hint) for loc, hint in suggested.items()}
    problems: list[tuple[str, str]] = []
    union: dict[str, list[str]] = {}
    for err in errors:
        loc = tuple(err["loc"])
        ctx_error = (err.get("ctx") or {}).get("error")
        kind = err["type"]
        path = path_of(prefix, loc)
        if isinstance(ctx_error, field_error):
            problems += [(f"{path}.{sub}", msg) for sub, msg in ctx_error.problems]  # type: ignore[attr-defined]
        elif kind == "extra_forbidden":
            if loc in suggested:
                hint = suggested[loc]
                case = " (fields are camelCase)" if hint.lower() == str(loc[-1]).lower().replace("_", "") else ""
                problems.append((path, f"unknown field; did you mean {hint}?{case} accepted: the fields docs/config.md "
                                 "lists here"))
            else:
                names = field_names(model_at(model, loc[:-1]))
                problems.append((path, f"unknown field; accepted fields here: {', '.join(names)}"))
        elif kind == "missing":
            if loc not in covered:
                problems.append((path, f"is required; accepted: {_described(model, loc)}"))
        elif kind == "value_error":
            problems.append((path, str(ctx_error) if ctx_error is not None else err["msg"]))
        elif any(_UNION_MEMBER.match(str(p)) for p in loc if not isinstance(p, int)) and kind in KIND_ACCEPTED:
            union.setdefault(path, []).append(KIND_ACCEPTED[kind])
            if len(union[path]) == 1:
                problems.append((path, f"{shown(err.get('input'))} is {kind_of(err.get('input'))}; accepted: {{union}}"))
        else:
            problems.append((path, _type_message(err, model, loc)))
    out = []
    for path, msg in problems:
        if "{union}" in msg:
            msg = msg.replace("{union}", " or ".join(dict.fromkeys(union[path])))
        out.append((path, msg))
    return list(dict.fromkeys(out))
