"""Attack (issue 24 round 2): single-field or sweep-override cases where the JSON Schema accepts what the loader refuses."""

import copy

import pytest

import tests.components.spec.test_schema_fuzz as fz
from components.spec.load import SpecError, load_stack_spec
from tests.support.paths import STACKS_DIR

V = fz.jsonschema.Draft202012Validator(fz.SCHEMA)
LORA = fz.load_stack_file(STACKS_DIR / "Pulumi.aws-lora-7b.yaml")
SWEEP = fz.load_stack_file(STACKS_DIR / "Pulumi.aws-sweep-lora.yaml")


def _same(config: dict) -> None:
    schema = V.is_valid({"config": config})
    try:
        load_stack_spec("atk", config)
        loader = True
    except SpecError:
        loader = False
    assert schema == loader, f"schema {schema}, loader {loader}"


@pytest.mark.parametrize("expires", ["2030-02-30T01:00:00Z", "2030-01-01T24:00:00Z", "2030-01-01T01:00:00+24:00"])
def test_expires_at_calendar(expires: str) -> None:
    c = copy.deepcopy(LORA)
    c[fz.KEY]["expiresAt"] = expires
    _same(c)


def test_budget_alert_emails_exact_duplicate() -> None:
    c = copy.deepcopy(LORA)
    c[fz.KEY]["budgetAlerts"] = {"emails": ["a@b.co", "a@b.co"]}
    _same(c)


def test_sweep_override_on_demand_without_reason() -> None:
    c = copy.deepcopy(SWEEP)
    c["gpulease:sweep"]["runs"][0]["overrides"] = {"market": "on-demand"}
    _same(c)
