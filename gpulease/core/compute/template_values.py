"""The values a setting of a CloudFormation template's resource may take, for the rules that judge one setting.

A resource a template creates (``units.embedded``) holds ``UNKNOWN`` where the template has an intrinsic function:
at a path in its ``choices`` when the template lists the values (``Fn::If``, ``Fn::FindInMap``, a parameter's
``AllowedValues``), at a path in its ``opaque`` set when nothing does (``Fn::GetAtt``, ``Fn::ImportValue``, a
pseudo parameter, a parameter with no value). The pack never sees those values, not even when the stack runs
(``gpulease.core.compute.cloudformation``), so a rule judging a setting there (``httpTokens``, a volume's
``encrypted``) judges every listed value and reports an opaque one as not judgeable; it never skips it as a value
"not known during preview".
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from gpulease.core.compute.cloudformation import camel
from gpulease.core.compute.units import Registered


def covers(pattern: str, path: str) -> bool:
    """Whether a setting's dotted path (``*`` for each element of a list) and an intrinsic's path meet: one is the
    other or lies inside it (``metadataOptions`` chosen whole covers ``metadataOptions.httpTokens``)."""
    want, got = pattern.split("."), path.split(".")
    return all(w == g or (w == "*" and g.isdigit()) for w, g in zip(want, got, strict=False))


def _camel_keys(value: Any) -> Any:
    """A chosen value as the resource's props spell it (a mapping's CloudFormation keys camelCased)."""
    if isinstance(value, Mapping):
        return {camel(k) if isinstance(k, str) else k: _camel_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_camel_keys(v) for v in value]
    return value


def _with(props: Mapping[str, Any], path: str, value: Any) -> Mapping[str, Any]:
    out: Any = copy.deepcopy(dict(props))
    node = out
    keys = path.split(".")
    for key in keys[:-1]:
        node = node[int(key)] if isinstance(node, list) else node.setdefault(key, {})
    if isinstance(node, list):
        node[int(keys[-1])] = value
    elif isinstance(node, dict):
        node[keys[-1]] = value
    return out


def variants(res: Registered, settings: Iterable[str]) -> tuple[list[Mapping[str, Any]], list[str]]:
    """``res``'s props once per value an intrinsic at (or around) one of ``settings`` may take, and the paths
    there whose intrinsic the pack cannot resolve. Empty for a resource outside a template."""
    wanted = [s for s in settings if s]
    if not res.host:
        return [], []
    opaque = sorted(p for p in res.opaque if any(covers(s, p) for s in wanted))
    found: list[Mapping[str, Any]] = []
    for where, values in res.choices.items():
        if any(covers(s, where) for s in wanted):
            found += [_with(res.props, where, _camel_keys(value)) for value in values]
    return found, opaque


def not_judged(what: str, paths: list[str], setting: str) -> str:
    """The finding for settings a template sets by an intrinsic the pack cannot resolve."""
    return (f"{what}: {', '.join(paths)} is a CloudFormation intrinsic function the pack cannot resolve (a pseudo "
            f"parameter, Fn::GetAtt, Fn::ImportValue, a parameter with neither value nor AllowedValues, a Fn::Sub of "
            f"one), so {setting} cannot be judged, offline or when the stack runs; accepted: a literal value, or an "
            "Fn::If / Fn::FindInMap / parameter whose every value the template lists")
