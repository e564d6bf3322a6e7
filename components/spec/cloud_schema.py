"""What each cloud's rules (``SPEC_RULES``) accept, in the JSON Schema of an experiment: ``if`` the experiment is on
that cloud, ``then`` its regions, disk types, storage classes, image families and id shapes (the values the
``ExperimentSpec`` cross-field check compares with the same rules)."""

from __future__ import annotations

from typing import Any

from components.spec.clouds import SPEC_RULES
from components.spec.text import schema_pattern
from components.spec_rules import CloudSpecRules


def _or_null(node: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [node, {"type": "null"}]}


def _on(cloud: str, default: str) -> dict[str, Any]:
    """JSON Schema: the experiment is on ``cloud`` (named, or not named when it is the default)."""
    named = {"required": ["cloud"], "properties": {"cloud": {"const": cloud}}}
    return {"anyOf": [named, {"not": {"required": ["cloud"]}}]} if cloud == default else named


def _accepts(rules: CloudSpecRules) -> dict[str, Any]:
    others = [r.session_mode for r in SPEC_RULES.values() if r is not rules]
    image: dict[str, Any] = {"family": _or_null({"enum": list(rules.image_families)})}
    if rules.image_id is not None:
        image["id"] = {"pattern": schema_pattern(rules.image_id)}
    transition = {"properties": {"storageClass": {"enum": list(rules.storage_classes)}}}
    return {"properties": {
        "region": _or_null({"enum": list(rules.regions)}),
        "ssh": {"properties": {"mode": {"not": {"enum": others}}}},
        "dataDisk": {"properties": {"type": _or_null({"enum": list(rules.disk_types)}),
                                    "existingVolumeId": {"pattern": schema_pattern(rules.disk_id)}}},
        "image": {"properties": image},
        "checkpoints": {"properties": {"lifecycle": {"properties": {"transitions": {"items": transition}}}}},
    }}


def add_cloud_rules(schema: dict[str, Any], model: type) -> None:
    """``json_schema_extra`` of ``ExperimentSpec``: one ``if``/``then`` per cloud."""
    default = model.model_fields["cloud"].default  # type: ignore[attr-defined]
    schema.setdefault("allOf", []).extend(
        {"if": _on(name, default), "then": _accepts(rules)} for name, rules in SPEC_RULES.items())
