"""Single-field and sweep-override cases where the JSON Schema (checked with its formats, as an editor that checks
them does) and the loader must give the same verdict (issue 24)."""

import copy

import pytest

import tests.components.spec.test_schema_fuzz as fz
from components.spec.load import SpecError, load_stack_spec
from tests.support.paths import STACKS_DIR

V = fz.jsonschema.Draft202012Validator(fz.SCHEMA, format_checker=fz.FORMATS)
LORA = fz.load_stack_file(STACKS_DIR / "Pulumi.aws-lora-7b.yaml")
SWEEP = fz.load_stack_file(STACKS_DIR / "Pulumi.aws-sweep-lora.yaml")


def _loader(config: dict) -> str | None:
    try:
        load_stack_spec("s", config)
    except SpecError as exc:
        return str(exc)
    return None


def _same(config: dict) -> tuple[bool, str | None]:
    schema, refused = V.is_valid({"config": config}), _loader(config)
    assert schema == (refused is None), f"schema {schema}, loader {refused or 'accepts'}"
    return schema, refused


@pytest.mark.parametrize("expires", ["2030-02-30T01:00:00Z", "2030-01-01T24:00:00Z", "2030-01-01T01:00:00+24:00",
                                     "2030-01-01T23:59:60Z", "2030-01-01 01:00:00Z", "2030-01-01T01:00Z"])
def test_expires_at_calendar_and_form(expires: str) -> None:
    c = copy.deepcopy(LORA)
    c[fz.KEY]["expiresAt"] = expires
    _, refused = _same(c)
    # Refused for the value itself (not only because 2030 is beyond maxRuntimeHours): the schema by its format or
    # pattern, the loader before it compares the deadline with the runtime.
    words = {e.validator for e in V.iter_errors({"config": c}) if list(e.absolute_path)[-1:] == ["expiresAt"]}
    assert words & {"format", "pattern"}, words
    assert refused is not None and "maxRuntimeHours" not in refused, refused


def test_budget_alert_emails_exact_duplicate() -> None:
    c = copy.deepcopy(LORA)
    c[fz.KEY]["budgetAlerts"] = {"emails": ["a@b.co", "a@b.co"]}
    assert _same(c)[0] is False
    c[fz.KEY]["budgetAlerts"] = {"emails": ["a@b.co", "c@d.co"]}
    assert _same(c)[0] is True  # the base is valid: the refusal above is the duplicate's


@pytest.mark.parametrize("overrides,accepted", [
    ({"market": "on-demand"}, False),
    ({"market": "on-demand", "onDemandReason": "interactive debugging - cannot wait"}, True),
    ({"market": "on-demand", "onDemandReason": None}, False),
    ({"market": "spot", "onDemandReason": "interactive debugging - cannot wait"}, False),
])
def test_sweep_override_market_rules(overrides: dict, accepted: bool) -> None:
    c = copy.deepcopy(SWEEP)
    c["gpulease:sweep"]["runs"][0]["overrides"] = overrides
    assert _same(c)[0] is accepted


@pytest.mark.parametrize("overrides,accepted", [
    ({"market": "on-demand"}, True),  # the base's reason carries over
    ({"market": "spot"}, False),  # ... and is refused on spot
    ({"market": "spot", "onDemandReason": None}, True),
])
def test_sweep_override_market_over_an_on_demand_base(overrides: dict, accepted: bool) -> None:
    c = copy.deepcopy(SWEEP)
    base = c["gpulease:sweep"]["base"]
    base.update(market="on-demand", onDemandReason="interactive debugging - cannot wait")
    base.pop("maxSpotPriceUsd", None)
    assert _same({**c, "gpulease:sweep": {**c["gpulease:sweep"], "runs": [dict(c["gpulease:sweep"]["runs"][0])]}})
    c["gpulease:sweep"]["runs"][0]["overrides"] = overrides
    assert _same(c)[0] is accepted
