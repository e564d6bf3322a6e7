"""A sweep: a base experiment and its runs, each merged over the base and validated as an experiment."""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

from pydantic import Field, field_validator

from gpulease.core.model import SpecModel
from gpulease.core.schema_pattern import schema_pattern

RUN_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,18}[a-z0-9])?\Z")


class SweepRun(SpecModel):
    name: str = Field(..., description="Run name, appended to the base experiment name.",
                      json_schema_extra={"pattern": schema_pattern(RUN_NAME)})
    overrides: dict[str, Any] = Field(default_factory=dict, description="Keys of the experiment spec, merged over base.")

    @field_validator("name")
    @classmethod
    def _name(cls, name: str) -> str:
        if not RUN_NAME.match(name):
            raise ValueError(f"{name!r}; accepted: 1-20 lowercase letters, digits and hyphens")
        return name


class SweepSpec(SpecModel):
    base: dict[str, Any] = Field(..., description="An experiment spec shared by every run.")
    runs: list[SweepRun] = Field(..., min_length=1, max_length=256)

    @field_validator("runs")
    @classmethod
    def _unique(cls, runs: list[SweepRun]) -> list[SweepRun]:
        names = [r.name for r in runs]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"run names must be unique; repeated: {', '.join(dupes)}")
        return runs


# Fields a sweep run may not change: the runs share one security group, one bucket and one network.
SWEEP_SHARED_FIELDS = ("cloud", "region", "ssh", "network", "owner", "project", "costCenter", "budgetUsd",
                       "budgetAlerts")


# Sections that say one thing one of several ways: a run's override replaces them whole (a run that asks for
# {gpuMemoryGb: 48} must not keep the base's instanceType).
REPLACED_SECTIONS = ("gpu", "image")


def deep_merge(base: dict[str, Any], override: Mapping[str, Any], top: bool = True) -> dict[str, Any]:
    merged = copy.deepcopy(base)
    for key, value in override.items():
        if top and key in REPLACED_SECTIONS:
            merged[key] = copy.deepcopy(value)
        elif isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value, top=False)
        else:
            merged[key] = copy.deepcopy(value)
    return merged
