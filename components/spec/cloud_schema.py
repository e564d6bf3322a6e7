"""What each cloud's rules (``SPEC_RULES``) accept, in the JSON Schema of an experiment: ``if`` the experiment is on
that cloud, ``then`` its regions, disk types, storage classes, image families and id shapes (the values the
``ExperimentSpec`` cross-field check compares with the same rules)."""

from __future__ import annotations

from typing import Any

from components.spec.clouds import SPEC_RULES
from components.spec.schema_terms import absent, given, is_value
from components.spec_rules import CloudSpecRules
from gpulease.core.schema_pattern import schema_pattern


def _or_null(node: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [node, {"type": "null"}]}


def _accepts(rules: CloudSpecRules) -> dict[str, Any]:
    others = [r.session_mode for r in SPEC_RULES.values() if r is not rules]
    image: dict[str, Any] = {"family": _or_null({"enum": list(rules.image_families)})}
    if rules.image_id is not None:
        image["id"] = {"pattern": schema_pattern(rules.image_id)}
    transition: dict[str, Any] = {"properties": {"storageClass": {"enum": list(rules.storage_classes)}}}
    if rules.transition_min_days:
        transition["allOf"] = [
            {"if": {"required": ["storageClass"], "properties": {"storageClass": {"const": name}}},
             "then": {"properties": {"days": {"minimum": least}}}} for name, least in rules.transition_min_days.items()]
    return {"properties": {
        "region": _or_null({"enum": list(rules.regions)}),
        "ssh": {"properties": {"mode": {"not": {"enum": others}}}},
        "dataDisk": {"properties": {"type": _or_null({"enum": list(rules.disk_types)}),
                                    "existingVolumeId": {"pattern": schema_pattern(rules.disk_id)}}},
        "image": {"properties": image},
        "checkpoints": {"properties": {"lifecycle": {"properties": {"transitions": {"items": transition}}}}},
    }}


def _market_rules(default: str) -> list[dict[str, Any]]:
    """The market's cross-field rules (``ExperimentSpec._cross_field``): a reason on on-demand and only there, a
    price cap and no checkpoints-off on spot."""
    return [{"if": is_value("market", "on-demand", default),
             "then": {**given("onDemandReason"), **absent("maxSpotPriceUsd")},
             "else": {"allOf": [absent("onDemandReason"),
                                {"properties": {"checkpoints": {"properties": {"enabled": {"const": True}}}}}]}}]


def add_cloud_rules(schema: dict[str, Any], model: type) -> None:
    """``json_schema_extra`` of ``ExperimentSpec``: one ``if``/``then`` per cloud, and the market's rules."""
    fields = model.model_fields  # type: ignore[attr-defined]
    schema.setdefault("allOf", []).extend(
        {"if": is_value("cloud", name, fields["cloud"].default), "then": _accepts(rules)}
        for name, rules in SPEC_RULES.items())
    schema["allOf"] += _market_rules(fields["market"].default)
