"""JSON Schema of a stack file, for editors and review (``gpulease schema`` writes it to schema/)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from components.spec.clouds import SPEC_RULES
from components.spec.experiment import ExperimentSpec
from components.spec.load import CONFIG_NAMESPACE, EXPERIMENT_KEY, SWEEP_KEY
from components.spec.regions import PROVIDER_REGION_KEYS
from components.spec.schema_terms import absent, given, is_value
from components.spec.sweep import REPLACED_SECTIONS, SWEEP_SHARED_FIELDS, SweepSpec

EXPERIMENT = f"{CONFIG_NAMESPACE}:{EXPERIMENT_KEY}"
SWEEP = f"{CONFIG_NAMESPACE}:{SWEEP_KEY}"


def _overrides(exp: dict[str, Any]) -> dict[str, Any]:
    """A run's overrides (``load_stack_spec``): experiment fields but the shared ones and ``name``; a field an
    override replaces whole (not a section merged key by key over the base's) has the experiment's schema."""
    fields = ExperimentSpec.model_fields
    allowed = [f.alias or name for name, f in fields.items()
               if (f.alias or name) not in (*SWEEP_SHARED_FIELDS, "name")]
    merged = {f.alias or name for name, f in fields.items() if _is_model(f.annotation)} - set(REPLACED_SECTIONS)
    return {"type": "object", "description": "Keys of the experiment spec, merged over base.",
            "propertyNames": {"enum": allowed},
            "properties": {k: exp["properties"][k] for k in allowed if k not in merged and k in exp["properties"]}}


def _runs_where(market: str, then: dict[str, Any]) -> dict[str, Any]:
    """Every run whose overrides set ``market`` to ``market`` also meets ``then`` (in its overrides)."""
    overrides = {"if": given("market", {"const": market}), "then": then}
    return {"properties": {"runs": {"items": {"properties": {"overrides": overrides}}}}}


def _sweep_market_rules() -> list[dict[str, Any]]:
    """The experiment's market rules (``cloud_schema._market_rules``) on a run whose overrides set ``market``: the
    merged run (``deep_merge``: an override key replaces the base's, null clears it) has a reason on on-demand and
    only there, and no price cap on on-demand. What the run needs in its overrides depends on what the base has."""
    null = {"type": "null"}
    rules = []
    for field, market, when_base_has, when_base_lacks in (
        ("onDemandReason", "on-demand", {"properties": {"onDemandReason": {"not": null}}}, given("onDemandReason")),
        ("onDemandReason", "spot", {"required": ["onDemandReason"], **absent("onDemandReason")}, absent("onDemandReason")),
        ("maxSpotPriceUsd", "on-demand", {"required": ["maxSpotPriceUsd"], **absent("maxSpotPriceUsd")},
         absent("maxSpotPriceUsd")),
    ):
        rules.append({"if": {"required": ["base"], "properties": {"base": given(field)}},
                      "then": _runs_where(market, when_base_has), "else": _runs_where(market, when_base_lacks)})
    return rules


def _is_model(annotation: Any) -> bool:
    return (isinstance(annotation, type) and issubclass(annotation, BaseModel)) or (
        annotation is not None and any(_is_model(a) for a in getattr(annotation, "__args__", ())))


def _provider_region_rules() -> list[dict[str, Any]]:
    """``region_problems``: the provider's region key of the stack's cloud is one of that cloud's regions (or null,
    which is not naming one) when the spec names no region; another cloud's key is that provider's alone (a sweep's cloud and region are its base's: runs may not change them)."""
    default = ExperimentSpec.model_fields["cloud"].default
    rules = []
    for cloud, key in PROVIDER_REGION_KEYS.items():
        on_cloud = {"allOf": [is_value("cloud", cloud, default), absent("region")]}
        for declared, spec in ((EXPERIMENT, on_cloud), (SWEEP, {"properties": {"base": on_cloud}})):
            rules.append({"if": {"required": [declared], "properties": {declared: spec}},
                          "then": {"properties": {key: {"anyOf": [{"enum": list(SPEC_RULES[cloud].regions)},
                                                                  {"type": "null"}]}}}})
    return rules


def stack_config_json_schema() -> dict[str, Any]:
    """JSON Schema of a stack file (``stacks/Pulumi.<stack>.yaml``), for editors and review."""
    exp = ExperimentSpec.model_json_schema(by_alias=True, ref_template="#/$defs/{model}")
    defs = exp.pop("$defs", {})
    defs["ExperimentSpec"] = exp
    sweep = SweepSpec.model_json_schema(by_alias=True, ref_template="#/$defs/{model}")
    defs.update(sweep.pop("$defs", {}))
    sweep["properties"]["base"] = {"$ref": "#/$defs/ExperimentSpec", "description": "Experiment spec shared by every run."}
    defs["SweepSpec"] = sweep
    defs["SweepRun"]["properties"]["overrides"] = _overrides(exp)
    sweep.setdefault("allOf", []).extend(_sweep_market_rules())
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "gpulease stack config",
        "description": "stacks/Pulumi.<stack>.yaml: declare gpulease:experiment or gpulease:sweep.",
        "type": "object",
        "properties": {
            "encryptionsalt": {"type": "string"},
            "secretsprovider": {"type": "string"},
            "encryptedkey": {"type": "string"},
            "config": {
                "type": "object",
                "properties": {
                    EXPERIMENT: {"$ref": "#/$defs/ExperimentSpec"},
                    SWEEP: {"$ref": "#/$defs/SweepSpec"},
                    # The provider's: gpulease reads only its own cloud's (_provider_region_rules).
                    **{key: {"description": f"The {cloud} provider's region."}
                       for cloud, key in PROVIDER_REGION_KEYS.items()},
                },
                "additionalProperties": True,
                # load_stack_spec: exactly one of them.
                "oneOf": [{"required": [EXPERIMENT]}, {"required": [SWEEP]}],
                "allOf": _provider_region_rules(),
            },
        },
        "$defs": defs,
    }
