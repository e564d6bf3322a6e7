"""A misspelt policy config key under `pulumi preview`: the CLI cannot refuse it (the protocol's schema has no
additionalProperties), so the rule it was meant for reports it, once, instead of silently running on its default."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from pulumi_policy import StackValidationPolicy

from policies.guardrails import common as c
from policies.guardrails import pack


def _stack_args(config: dict[str, Any]) -> Any:
    return SimpleNamespace(resources=[], get_config=lambda: config)


def test_an_unknown_key_is_reported_once_naming_the_rule_and_what_is_accepted() -> None:
    seen: list[tuple[str, Any]] = []
    rule = c.judges(StackValidationPolicy(
        name="demo", description="d", validate=lambda args, report: seen.append(("ran", args.get_config())),
        enforcement_level=c.level("mandatory"),
        config_schema=c.schema({"requiredTags": {"type": "array", "default": []}})), ())
    reports: list[str] = []
    rule.validate(_stack_args({"requiredTag": ["team"], "requiredTags": []}), lambda m, urn=None: reports.append(m))
    rule.validate(_stack_args({"requiredTag": ["team"]}), lambda m, urn=None: reports.append(m))
    assert reports == ["policy config of demo: unknown key 'requiredTag' (ignored); accepted: enforcementLevel, "
                       "requiredTags"]
    assert [what for what, _ in seen] == ["ran", "ran"]  # the rule itself still judges


def test_known_keys_report_nothing() -> None:
    rule = next(p for p in pack.all_policies() if p.name == "instance-role-wildcard")
    reports: list[str] = []
    rule.validate(_stack_args({"acceptRoles": [], "enforcementLevel": "mandatory"}), lambda m, urn=None: reports.append(m))
    assert reports == []


def test_every_rule_of_the_pack_checks_its_config_keys() -> None:
    for policy in pack.all_policies():
        assert getattr(policy.validate, "__name__", "") == "checked", policy.name
