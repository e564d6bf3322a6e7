"""``gpu: {fit: ...}`` in a stack: validated with field paths, resolved to the cheapest type that holds it."""

from __future__ import annotations

import pytest

from components.spec.load import SpecError, load_stack_spec
from gpulease.core.catalog import CatalogError
from gpulease.core.sizing.resolve import GpuSpec, resolve_instance_type
from tests.support.specs import experiment, render_experiment

INSTANCE = "aws:ec2/instance:Instance"


def _spec_error(gpu: dict) -> SpecError:
    config = {"aws:region": "us-east-1", "gpulease:experiment": experiment(gpu=gpu)}
    with pytest.raises(SpecError) as err:
        load_stack_spec("fit-test", config)
    return err.value


def test_fit_fields_are_typed_and_errors_name_the_field():
    err = _spec_error({"fit": {"params": "7B", "method": "lorax", "seqLen": 0}})
    paths = dict(err.problems)
    assert "full" in paths["gpulease:experiment.gpu.fit.method"] and "lorax" in paths["gpulease:experiment.gpu.fit.method"]
    assert "greater than or equal to 1" in paths["gpulease:experiment.gpu.fit.seqLen"]
    err = _spec_error({"fit": {"params": "seven"}})
    assert "accepted: e.g. 7B" in dict(err.problems)["gpulease:experiment.gpu.fit.params"]
    err = _spec_error({"fit": {"params": "7B", "batchSize": 4}})
    msg = dict(err.problems)["gpulease:experiment.gpu.fit.batchSize"]
    assert "unknown field" in msg and "batch" in msg and "gradCheckpointing" in msg
    err = _spec_error({"fit": {"params": "2B"}})
    assert "no preset near" in dict(err.problems)["gpulease:experiment.gpu.fit"]
    err = _spec_error({"fit": {"params": "7B"}, "gpuMemoryGb": 24})
    assert "exactly one of instanceType" in dict(err.problems)["gpulease:experiment.gpu"]


def test_fit_accepts_camel_case_and_keeps_defaults():
    fit = GpuSpec.model_validate({"fit": {"params": "7b", "seqLen": 2048, "gradCheckpointing": True}}).fit
    assert (fit.params, fit.method, fit.precision, fit.seq_len, fit.batch, fit.grad_checkpointing) == (
        "7B", "lora", "bf16", 2048, 1, True
    )


def test_a_lora_fit_renders_on_the_cheapest_24_gb_gpu():
    r = render_experiment(experiment(gpu={"fit": {"params": "7B", "method": "lora", "batch": 4, "gradCheckpointing": True}}))
    assert r.error is None, r.error
    # ~18 GB per GPU: too big for a 16 GB T4 (14.4 GB usable), and L4 g6.xlarge ($0.8048) undercuts A10G g5.xlarge.
    assert r.one(INSTANCE).inputs["instanceType"] == "g6.xlarge"


@pytest.mark.parametrize(
    ("fit", "expected"),
    [
        # Full fine-tuning of 7B (~124 GB on one GPU) shards over 4 x L40S, the cheapest multi-GPU type that holds it.
        ({"params": "7B", "method": "full", "batch": 8, "gradCheckpointing": True}, "g6e.12xlarge"),
        # Pinned to eight GPUs: 8 x L4 is the cheapest eight-GPU type that holds it.
        ({"params": "7B", "method": "full", "batch": 8, "gradCheckpointing": True, "gpus": 8}, "g6.48xlarge"),
        # 70B QLoRA with checkpointing needs ~47 GB on one GPU: over the 43.2 GB a 48 GB L40S leaves with 10 %
        # headroom, so it shards over 4 x L4; with no headroom asked for, the single L40S holds it.
        ({"params": "70B", "method": "qlora", "gradCheckpointing": True}, "g6.12xlarge"),
        ({"params": "70B", "method": "qlora", "gradCheckpointing": True, "headroom": 0}, "g6e.xlarge"),
        # fp16 inference of 3B (~6.4 GB of weights) fits the cheapest GPU, a 16 GB T4; 7B (~16 GB in all) does not.
        ({"params": "3B", "precision": "fp16", "inference": True, "seqLen": 2048}, "g4dn.xlarge"),
        ({"params": "7B", "precision": "fp16", "inference": True, "seqLen": 512}, "g6.xlarge"),
    ],
)
def test_fit_resolves_to_the_expected_cheapest_type(fit, expected):
    gpu = GpuSpec.model_validate({"fit": fit})
    assert resolve_instance_type("aws", "us-east-1", gpu).type == expected


def test_fit_on_alibaba_cloud():
    gpu = GpuSpec.model_validate({"fit": {"params": "7B", "batch": 4, "gradCheckpointing": True}})
    assert resolve_instance_type("alicloud", "cn-hangzhou", gpu).type == "ecs.gn7i-c8g1.2xlarge"


def test_a_fit_nothing_holds_is_a_clear_error_and_nothing_is_created():
    gpu = GpuSpec.model_validate({"fit": {"params": "70B", "method": "full", "gpus": 1}})
    with pytest.raises(CatalogError, match=r"gpu\.fit: no aws instance type in us-east-1 holds 70B .* full fine-tune.* GB per GPU on 1 GPU"):
        resolve_instance_type("aws", "us-east-1", gpu)
    r = render_experiment(experiment(gpu={"fit": {"params": "70B", "method": "full", "gpus": 1}}))
    assert r.error is not None and "gpu.fit: no aws instance type" in r.error
    assert not r.of_type(INSTANCE)


def test_the_workload_is_defined_once_and_the_spec_and_the_command_follow_it():
    """``Workload`` lists the settings of a workload and their defaults; the spec's gpu.fit and ``gpulease size``
    take both from it, so a new setting or a changed default reaches all three or the spec refuses to build."""
    from gpulease.cli.main import build_parser
    from gpulease.core.sizing import WORKLOAD_SETTINGS, FitSpec
    from gpulease.core.sizing.workload import default

    command_only = {"flash_attention"}  # the attention kernel is a property of the run, not of the stack's sizing
    for name in WORKLOAD_SETTINGS:
        if name not in command_only:
            assert FitSpec.model_fields[name].default == default(name), name
    size = build_parser()._subparsers._group_actions[0].choices["size"]
    options = {action.dest: action.default for action in size._actions}
    assert {name: options[name] for name in WORKLOAD_SETTINGS} == {name: default(name) for name in WORKLOAD_SETTINGS}
    fit = FitSpec.model_validate({"params": "7B", "method": "full", "seqLen": 2048, "batch": 4, "gradCheckpointing": True,
                                  "loraRank": 8, "optimizer": "adamw-8bit", "masterWeights": False, "precision": "fp16"})
    workload = fit.workload()
    assert (workload.method, workload.seq_len, workload.batch, workload.grad_checkpointing, workload.lora_rank,
            workload.optimizer, workload.master_weights, workload.precision, workload.flash_attention) == (
        "full", 2048, 4, True, 8, "adamw-8bit", False, "fp16", True)
