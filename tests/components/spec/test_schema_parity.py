"""The JSON Schema and the loader are one contract: every example stack, mutated the ways a user gets a stack file
wrong (a type flipped, a number written as text, a boolean for a number, a field in another casing, an unknown
field, a malformed CIDR), gets the same verdict from both."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest

from components.spec.load import SpecError, load_stack_spec
from gpulease.cli.schema import SCHEMA_PATH
from gpulease.review.render import load_stack_file
from tests.support.paths import STACKS_DIR

STACK_FILES = sorted(STACKS_DIR.glob("Pulumi.*.yaml"))
VALIDATOR = jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text()))
BAD_CIDRS = ("abc", "1.2.3.4/33", "300.1.1.1/32", "1.2.3/24", "203.0.113.7/", "2001:db8::/129", "1.2.3.4/032x",
             # IPv6 edge cases the old pattern ([0-9A-Fa-f:.]* around a colon) accepted and the loader refuses
             ":::", "1:2:3:4:5:6:7:8:9/128", "12345::/128", "2001:db8:::7/128", "1::2::3/128", "2001:db8::g/128",
             "1:2:3:4:5:6:7/128", ":1::/128", "1::2:/128", "::ffff:300.1.1.1/128", "::ffff:1.2.3.04/128",
             "2001:db8::7/0128", "1.2.3.4/032", "2001:db8::7/", ":/64")
GOOD_IPV6 = ("2001:db8::7/128", "2001:DB8:0:0:0:0:0:7/128", "2001:db8::7", "2001:db8:0:1:2:3:4.5.6.7/128",
             "2001:db8::5.6.7.8/128", "2001:db8:1:2:3:4:5:6/128", "2001:db8::/48")
"""Networks both accept (as the only SSH CIDR: global, long enough, host bits clear)."""

Path = tuple[Any, ...]


def _leaves(value: Any, path: Path = ()) -> Iterator[tuple[Path, Any]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _leaves(item, (*path, i))
    else:
        yield path, value


def _mappings(value: Any, path: Path = ()) -> Iterator[Path]:
    if isinstance(value, dict):
        yield path
        for key, item in value.items():
            yield from _mappings(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _mappings(item, (*path, i))


def _set(doc: Any, path: Path, value: Any) -> None:
    for part in path[:-1]:
        doc = doc[part]
    doc[path[-1]] = value


def _rename(doc: Any, path: Path, new: str) -> None:
    for part in path[:-1]:
        doc = doc[part]
    doc[new] = doc.pop(path[-1])


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name)


def mutations(spec: dict) -> Iterator[tuple[str, dict]]:
    """(what changed, the mutated spec)."""
    for path, value in _leaves(spec):
        if "overrides" in path:  # a sweep run's overrides are merged into base before either check reads them
            continue
        where = ".".join(map(str, path))
        flips: list[tuple[str, Any]] = []
        if isinstance(value, bool):
            flips = [("as text", "true" if value else "false"), ("as 'yes'", "yes"), ("as 1", int(value))]
        elif isinstance(value, int | float):
            flips = [("as text", str(value)), ("as true", True), ("as a list", [value])]
            if isinstance(value, int):
                flips.append(("as 2.5", value + 0.5))
        elif isinstance(value, str):
            flips = [("as a number", 7), ("as true", True), ("as a mapping", {"a": value})]
            if "allowedCidrs" in path:
                flips += [(f"as {c}", c) for c in BAD_CIDRS]
        for label, new in flips:
            mutated = copy.deepcopy(spec)
            _set(mutated, path, new)
            yield f"{where} {label}", mutated
        if isinstance(path[-1], str) and any(c.isupper() for c in path[-1]):
            for label, name in (("snake_case", _snake(path[-1])), ("lowercase", path[-1].lower()),
                                ("PascalCase", path[-1][0].upper() + path[-1][1:])):
                mutated = copy.deepcopy(spec)
                _rename(mutated, path, name)
                yield f"{where} in {label}", mutated
    for path in _mappings(spec):
        if "overrides" in path:
            continue
        mutated = copy.deepcopy(spec)
        _set(mutated, (*path, "colour"), "blue")
        yield f"{'.'.join(map(str, path)) or '(top)'} with an unknown field", mutated


def _loader_accepts(stack: str, key: str, spec: dict, config: dict) -> bool:
    try:
        load_stack_spec(stack, {**config, key: spec})
    except SpecError:
        return False
    return True


def _schema_accepts(key: str, spec: dict, config: dict) -> bool:
    return VALIDATOR.is_valid({"config": {**config, key: spec}})


def _stack(path) -> tuple[str, str, dict, dict]:
    config = load_stack_file(path)
    key = "gpulease:experiment" if "gpulease:experiment" in config else "gpulease:sweep"
    others = {k: v for k, v in config.items() if k != key}
    return path.stem.removeprefix("Pulumi."), key, config[key], others


@pytest.mark.parametrize("path", STACK_FILES, ids=lambda p: p.name)
def test_schema_and_loader_give_every_mutation_the_same_verdict(path) -> None:
    stack, key, spec, others = _stack(path)
    assert _loader_accepts(stack, key, spec, others) and _schema_accepts(key, spec, others)
    disagreements = []
    count = 0
    for label, mutated in mutations(spec):
        count += 1
        schema, loader = _schema_accepts(key, mutated, others), _loader_accepts(stack, key, mutated, others)
        if schema != loader:
            disagreements.append(f"{label}: schema {'accepts' if schema else 'refuses'}, loader "
                                 f"{'accepts' if loader else 'refuses'}")
    assert count > 50
    assert not disagreements, "\n".join(disagreements)


def test_ipv6_edge_cases_get_the_same_verdict_from_schema_and_loader() -> None:
    stack, key, spec, others = _stack(STACKS_DIR / "Pulumi.aws-lora-7b.yaml")
    for cidr, accepted in [*((c, False) for c in BAD_CIDRS), *((c, True) for c in GOOD_IPV6)]:
        mutated = {**spec, "ssh": {**spec["ssh"], "allowedCidrs": [cidr]}}
        assert _schema_accepts(key, mutated, others) is accepted, cidr
        assert _loader_accepts(stack, key, mutated, others) is accepted, cidr


def test_the_examples_of_the_issue_agree() -> None:
    stack, key, spec, others = _stack(STACKS_DIR / "Pulumi.aws-lora-7b.yaml")
    for change in ({"maxRuntimeHours": "8"}, {"gpu": {**spec["gpu"], "count": True}}, {"idle_minutes": 30},
                   {"ssh": {**spec["ssh"], "allowedCidrs": ["1.2.3.4/33"]}}, {"name": "My_Exp"},
                   {"checkpoints": {**spec.get("checkpoints", {}), "bucket": "Bad_Bucket"}},
                   {"job": {"command": "python train.py", "session": "a.b"}}):
        mutated = {**spec, **change}
        assert not _schema_accepts(key, mutated, others), change
        assert not _loader_accepts(stack, key, mutated, others), change
