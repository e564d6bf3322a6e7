"""A lookup's arguments as the provider reads them: coerced to the types the provider declares, or refused.

Programs write ``aws.ec2.get_ami(most_recent="true", ...)``: the SDK sends the string, and the provider (the
Terraform bridge) reads it into its boolean field as Go's ``strconv.ParseBool`` does ("1", "t", "true", "TRUE",
"0", "f", "false" ... ; https://pkg.go.dev/strconv#ParseBool), a number from its decimal string, and a string from a
number or a boolean. The mocks echo arguments into the result, which the SDK's result class then type-checks: so
each argument the result declares (its getters' engine names and return types, ``pulumi.getter``) is coerced
here first, and a value the provider would refuse stops the program with the lookup, the argument, the program's
``file:line`` and what is accepted.
"""

from __future__ import annotations

import types
import typing
from functools import lru_cache
from typing import Any

_TRUE = {"1", "t", "T", "TRUE", "true", "True"}
_FALSE = {"0", "f", "F", "FALSE", "false", "False"}
_PULUMI_NAME = "_pulumi_name"


class LookupArgumentError(TypeError):
    """An argument of a lookup the provider would refuse (its type cannot be read from the value)."""

    def __init__(self, token: str, key: str, value: Any, expected: str, site: str | None):
        where = f" at {site}" if site else ""
        what = {"bool": "a bool", "int": "an integer", "float": "a number", "str": "a string"}[expected]
        accepted = ("true or false (or one of the strings " + ", ".join(sorted(_TRUE | _FALSE)) + ")"
                    if expected == "bool" else f"{what} (or its decimal string)" if expected != "str" else what)
        super().__init__(f"the lookup {token}{where}: argument {key}={value!r} is not {what}; accepted: {accepted}")
        self.site = site


@lru_cache(maxsize=512)
def _declared(result_type: type) -> dict[str, type]:
    """Engine name -> the scalar type the result class declares for it (bool, int, float, str), where it is one."""
    out: dict[str, type] = {}
    for attribute in vars(result_type).values():
        getter = getattr(attribute, "fget", None)
        name = getattr(getter, _PULUMI_NAME, None)
        if name is None:
            continue
        try:
            hint = typing.get_type_hints(getter).get("return")
        except Exception:  # an annotation that does not resolve: nothing to coerce by
            continue
        origin = typing.get_origin(hint)
        if origin is not None and origin not in (typing.Union, types.UnionType):
            continue  # a list or a map: its elements are not coerced here
        args = [a for a in typing.get_args(hint) if a is not type(None)] if origin else [hint]
        if len(args) == 1 and args[0] in (bool, int, float, str):
            out[name] = args[0]
    return out


def _coerce(value: Any, kind: type) -> Any:
    """The value as the provider reads it into ``kind``; raises ValueError when it cannot."""
    if value is None or (isinstance(value, kind) and not (kind is int and isinstance(value, bool))):
        return value
    if kind is bool:
        if isinstance(value, str) and value in _TRUE | _FALSE:
            return value in _TRUE
        raise ValueError
    if kind is str:
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int | float):
            return str(value)
        raise ValueError
    if isinstance(value, bool):
        raise ValueError
    if kind is int:
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            return int(value.strip())
        raise ValueError
    if isinstance(value, int | str):
        return float(value)
    raise ValueError


def coerce_args(token: str, args: dict[str, Any], result_type: type | None, site: str | None) -> dict[str, Any]:
    """``args`` with each value the result declares read as the provider reads it (``LookupArgumentError``)."""
    if result_type is None:
        return args
    declared = _declared(result_type)
    out = dict(args)
    for key, value in args.items():
        kind = declared.get(key)
        if kind is None:
            continue
        try:
            out[key] = _coerce(value, kind)
        except (ValueError, OverflowError):
            raise LookupArgumentError(token, key, value, kind.__name__, site) from None
    return out
