"""The capacity retry keeps what the user's ``gpu`` asks for: the choices come from the types the fit (or the
requirements) allow, and the pinned copy carries the GPU count the fit pinned, which the program checks."""

from __future__ import annotations

from components.spec.load import load_stack_spec
from gpulease.lifecycle import capacity


def _spec(gpu: dict) -> object:
    exp = {"name": "fitx", "owner": "ada@ml-team.io", "project": "p", "costCenter": "c", "budgetUsd": 500,
           "gpu": gpu, "ssh": {"mode": "ssm"}, "maxRuntimeHours": 4}
    return load_stack_spec("fitx", {"gpulease:experiment": exp}, source="test").base


def test_the_choices_hold_the_users_fit_with_its_gpu_count():
    exp = _spec({"fit": {"params": "8B", "method": "lora", "gpus": 4}})
    found = capacity.choices(exp, "aws", "us-east-1", lambda itype: ["us-east-1a"])
    assert len(found) > 1
    from gpulease.core.catalog import load_catalog

    catalog = load_catalog()
    assert {catalog.get("aws", c.instance_type).gpu_count for c in found} == {4}


def test_the_pinned_copy_keeps_the_fits_gpu_count():
    choice = capacity.Choice("g6.12xlarge", "us-east-1b", 4.6)
    doc = {"config": {"gpulease:experiment": {"gpu": {"fit": {"params": "8B", "method": "lora", "gpus": 4}}}}}
    pinned = capacity.pinned_config(doc, "gpulease:experiment", choice)
    assert pinned["config"]["gpulease:experiment"]["gpu"] == {"instanceType": "g6.12xlarge", "count": 4}
    assert doc["config"]["gpulease:experiment"]["gpu"]["fit"]["gpus"] == 4  # the stack file's document unchanged
    # A fit without a GPU count pins the chosen type's own, so the pinned copy still says how many GPUs it holds.
    loose = {"config": {"gpulease:experiment": {"gpu": {"fit": {"params": "8B", "method": "lora"}}}}}
    assert capacity.pinned_config(loose, "gpulease:experiment", choice)["config"]["gpulease:experiment"]["gpu"] == {
        "instanceType": "g6.12xlarge", "count": 4}
    # An explicit type is the user's own choice: only that type.
    named = {"config": {"gpulease:experiment": {"gpu": {"instanceType": "g6.12xlarge"}}}}
    assert capacity.pinned_config(named, "gpulease:experiment", choice)["config"]["gpulease:experiment"]["gpu"] == {
        "instanceType": "g6.12xlarge"}


def test_the_pinned_copy_is_valid_for_the_spec():
    choice = capacity.Choice("g6.12xlarge", None, 4.6)
    gpu = capacity.pinned_gpu({"fit": {"params": "8B", "method": "lora", "gpus": 4}}, choice, "aws")
    assert _spec(gpu).gpu.instance_type == "g6.12xlarge"
