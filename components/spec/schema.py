"""JSON Schema of a stack file, for editors and review (``gpulease schema`` writes it to schema/)."""

from __future__ import annotations

from typing import Any

from components.spec.experiment import ExperimentSpec
from components.spec.load import CONFIG_NAMESPACE, EXPERIMENT_KEY, SWEEP_KEY
from components.spec.sweep import SweepSpec


def stack_config_json_schema() -> dict[str, Any]:
    """JSON Schema of a stack file (``stacks/Pulumi.<stack>.yaml``), for editors and review."""
    exp = ExperimentSpec.model_json_schema(by_alias=True, ref_template="#/$defs/{model}")
    defs = exp.pop("$defs", {})
    defs["ExperimentSpec"] = exp
    sweep = SweepSpec.model_json_schema(by_alias=True, ref_template="#/$defs/{model}")
    defs.update(sweep.pop("$defs", {}))
    sweep["properties"]["base"] = {"$ref": "#/$defs/ExperimentSpec", "description": "Experiment spec shared by every run."}
    defs["SweepSpec"] = sweep
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
                    f"{CONFIG_NAMESPACE}:{EXPERIMENT_KEY}": {"$ref": "#/$defs/ExperimentSpec"},
                    f"{CONFIG_NAMESPACE}:{SWEEP_KEY}": {"$ref": "#/$defs/SweepSpec"},
                    "aws:region": {"type": "string"},
                    "alicloud:region": {"type": "string"},
                },
                "additionalProperties": True,
            },
        },
        "$defs": defs,
    }
