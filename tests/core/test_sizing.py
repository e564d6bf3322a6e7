"""The memory estimator: published reference points, monotonicity, and the offers that fit."""

from __future__ import annotations

from datetime import date

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpulease.core.catalog import Catalog, InstanceType
from gpulease.core.sizing import (
    GB,
    PRESETS,
    SizingError,
    Workload,
    estimate,
    find_offers,
    model_shape,
    parse_params,
)

SEVEN_B = model_shape("7B")


def test_presets_reproduce_published_parameter_counts():
    # The presets' shapes add up to their published sizes (within 1 %: biases and norms are left out).
    from gpulease.core.sizing import shape_params

    for name, shape in PRESETS.items():
        assert abs(shape_params(shape) - shape.params) / shape.params < 0.01, name
    assert SEVEN_B.reference == "Llama-2-7B" and SEVEN_B.params == pytest.approx(7e9, rel=0.05)


def test_full_fine_tuning_in_mixed_precision_holds_16_bytes_per_parameter():
    est = estimate(Workload(SEVEN_B, method="full", precision="bf16"))
    states = (est.weights_gb + est.gradients_gb + est.optimizer_gb) * GB
    assert states == pytest.approx(SEVEN_B.params * 16)
    assert states == pytest.approx(7e9 * 16, rel=0.05)  # the rule of thumb: ~112 GB for 7B
    assert est.weights_gb * GB == pytest.approx(SEVEN_B.params * 2)
    assert est.optimizer_gb * GB == pytest.approx(SEVEN_B.params * 12)
    # fp32 Adam: 4 (weights) + 4 (gradients) + 8 (two moments) — also 16.
    fp32 = estimate(Workload(SEVEN_B, method="full", precision="fp32"))
    assert (fp32.weights_gb + fp32.gradients_gb + fp32.optimizer_gb) * GB == pytest.approx(SEVEN_B.params * 16)


def test_fp16_inference_of_7b_holds_about_14_gb_of_weights_plus_the_kv_cache():
    est = estimate(Workload(SEVEN_B, precision="fp16", inference=True, seq_len=4096, batch=2))
    assert est.weights_gb == pytest.approx(14, rel=0.05)
    assert est.gradients_gb == est.optimizer_gb == 0
    # Llama-2-7B: 2 (K and V) x 32 layers x 4096 (32 heads x 128) x 2 bytes = 0.5 MiB per token.
    assert est.kv_cache_gb * GB == pytest.approx(2 * 32 * 4096 * 2 * 4096 * 2)


def test_lora_trains_a_small_fraction_and_qlora_stores_4_bit_weights():
    lora = estimate(Workload(SEVEN_B, method="lora"))
    qlora = estimate(Workload(SEVEN_B, method="qlora"))
    # r=16 on all seven linear layers of Llama-2-7B: 16 x 32 x (9x4096 + 2x4096 + 3x11008) ≈ 40 M parameters.
    assert lora.trainable_params == 16 * 32 * (9 * 4096 + 2 * 4096 + 3 * 11008)
    assert lora.trainable_params / SEVEN_B.params < 0.01
    assert lora.optimizer_gb * GB == pytest.approx(lora.trainable_params * 12)
    assert qlora.weights_gb == pytest.approx((SEVEN_B.params * 4.127 / 8 + qlora.trainable_params * 2) / GB)
    full = estimate(Workload(SEVEN_B, method="full"))
    assert qlora.total_gb < lora.total_gb < full.total_gb


def test_activation_formula_and_gradient_checkpointing():
    w = Workload(SEVEN_B, method="lora", seq_len=2048, batch=4)
    plain = estimate(w)
    ckpt = estimate(Workload(SEVEN_B, method="lora", seq_len=2048, batch=4, grad_checkpointing=True))
    logits = 2048 * 4 * 32000 * 4
    assert plain.activations_gb * GB == pytest.approx(32 * 34 * 2048 * 4 * 4096 + logits)
    assert ckpt.activations_gb * GB == pytest.approx(32 * 2 * 2048 * 4 * 4096 + 34 * 2048 * 4 * 4096 + logits)
    assert ckpt.activations_gb < plain.activations_gb / 5
    assert ckpt.weights_gb == plain.weights_gb  # checkpointing trades compute for activations only
    eager = estimate(Workload(SEVEN_B, method="lora", seq_len=2048, batch=4, flash_attention=False))
    assert eager.activations_gb - plain.activations_gb == pytest.approx(32 * 5 * 32 * 2048**2 * 4 / GB)


@settings(max_examples=60, deadline=None)
@given(
    method=st.sampled_from(["full", "lora", "qlora"]),
    precision=st.sampled_from(["bf16", "fp16", "fp32"]),
    seq=st.integers(1, 8192),
    batch=st.integers(1, 64),
    ckpt=st.booleans(),
    inference=st.booleans(),
)
def test_memory_grows_with_batch_and_sequence_length(method, precision, seq, batch, ckpt, inference):
    def total(s: int, b: int) -> float:
        return estimate(
            Workload(SEVEN_B, method=method, precision=precision, seq_len=s, batch=b, grad_checkpointing=ckpt, inference=inference)
        ).total_gb

    base = total(seq, batch)
    assert total(seq, batch + 1) > base
    assert total(seq + 1, batch) > base
    if not inference:
        with_ckpt = estimate(Workload(SEVEN_B, method=method, precision=precision, seq_len=seq, batch=batch, grad_checkpointing=True))
        without = estimate(Workload(SEVEN_B, method=method, precision=precision, seq_len=seq, batch=batch))
        assert with_ckpt.activations_gb < without.activations_gb


def test_sharding_over_gpus_divides_states_and_batch():
    one = estimate(Workload(SEVEN_B, method="full", batch=8))
    four = estimate(Workload(SEVEN_B, method="full", batch=8), gpus=4)
    assert four.optimizer_gb == pytest.approx(one.optimizer_gb / 4)
    assert four.gradients_gb == pytest.approx(one.gradients_gb / 4)
    # Weights: a quarter each, plus one layer gathered at a time.
    assert four.weights_gb == pytest.approx(one.weights_gb / 4 + SEVEN_B.params / 32 * 2 / GB)
    assert four.total_gb < one.total_gb / 3


def test_parse_params_and_explicit_shapes():
    assert parse_params("7B") == 7e9 and parse_params("1.5b") == 1.5e9 and parse_params("350M") == 350e6
    assert parse_params("7e9") == 7e9 and parse_params(13_000_000_000) == 13e9
    with pytest.raises(ValueError, match="not a parameter count"):
        parse_params("seven")
    assert model_shape("7e9").layers == 32  # nearest preset's shape, the given count
    custom = model_shape(hidden=2048, layers=24, heads=16)
    assert (custom.name, custom.kv_heads, custom.intermediate) == ("custom", 16, 5632)
    assert custom.params == pytest.approx(24 * (2 * 2048**2 + 2 * 2048**2 + 3 * 2048 * 5632) + 2 * 32000 * 2048)
    with pytest.raises(SizingError, match=r"no preset near '2B'.*--hidden, --layers, --heads"):
        model_shape("2B")
    with pytest.raises(SizingError, match="not divisible"):
        model_shape(hidden=1000, layers=2, heads=3)


def _row(name: str, model: str, count: int, mem: float, price: float, link: str = "pcie", discount: float = 0.5) -> InstanceType:
    return InstanceType(
        cloud="aws", type=name, gpu_model=model, gpu_count=count, gpu_memory_gb=mem, memory_bandwidth_gbps=500,
        interconnect=link, vcpu=8, ram_gb=64, prices={"r1": price}, spot_discount=discount,
        as_of=date(2026, 1, 1), source="https://example.com",
    )


TOY = Catalog(
    instances=[
        _row("small.1", "S", 1, 16, 0.5),
        _row("mid.1", "M", 1, 24, 1.0),
        _row("mid-cheap.1", "M", 1, 24, 0.9),
        _row("big.1", "B", 1, 80, 4.0, "nvlink"),
        _row("mid.4", "M", 4, 24, 3.0),
        _row("wide.4", "W", 4, 48, 10.0),
        _row("big.8", "B", 8, 80, 30.0, "nvlink"),
        _row("other-region", "M", 1, 24, 0.1).model_copy(update={"prices": {"r2": 0.1}}),
    ],
    regions=[],
    sources={},
)


def test_offers_keep_only_types_that_fit_with_headroom_cheapest_first():
    w = Workload(SEVEN_B, method="lora", batch=4, grad_checkpointing=True)
    need = estimate(w).total_gb
    assert 16 * 0.9 < need < 24 * 0.9  # too big for 16 GB, fits 24 GB with 10 % headroom
    offers = find_offers(w, TOY, "aws", "r1")
    assert [o.instance.type for o in offers] == ["mid-cheap.1", "mid.1", "mid.4", "big.1", "wide.4", "big.8"]
    assert offers[0].headroom_gb == pytest.approx(24 - need)
    assert offers[0].spot_usd == pytest.approx(0.45)
    # A headroom that leaves less than the need drops the single 24 GB GPUs (four of them share the load).
    tight = find_offers(w, TOY, "aws", "r1", headroom=1 - (need - 0.1) / 24)
    assert [o.instance.type for o in tight] == ["mid.4", "big.1", "wide.4", "big.8"]
    assert [o.instance.type for o in find_offers(w, TOY, "aws", "r1", gpus=4)] == ["mid.4", "wide.4"]
    assert find_offers(w, TOY, "alicloud", "r1") == []


def test_multi_gpu_fits_over_pcie_carry_a_warning():
    w = Workload(SEVEN_B, method="full", batch=8, grad_checkpointing=True)
    offers = {o.instance.type: o for o in find_offers(w, TOY, "aws", "r1")}
    # ~124 GB on one GPU fits nowhere; sharded over 4 x 48 GB or 8 x 80 GB it does (4 x 24 GB is too small).
    assert set(offers) == {"wide.4", "big.8"}
    assert any("PCIe" in warning for warning in offers["wide.4"].warnings)
    assert offers["big.8"].warnings == []
    t4 = find_offers(Workload(model_shape("1B"), precision="bf16"), load_real(), "aws", "us-east-1", gpus=1)
    assert any("no native bf16" in w for o in t4 if o.instance.gpu_model == "T4" for w in o.warnings)


def load_real() -> Catalog:
    from gpulease.core.catalog import load_catalog

    return load_catalog([])


@pytest.mark.parametrize(
    ("optimizer", "master", "precision", "bytes_per_param"),
    [
        ("adamw", True, "bf16", 12.0),  # two fp32 moments + fp32 master copy
        ("adamw", False, "bf16", 8.0),  # pure bf16: no master copy
        ("adamw-8bit", True, "bf16", 6.0),  # two 8-bit moments + master copy
        ("adamw-8bit", False, "bf16", 2.0),
        ("adamw", True, "fp32", 8.0),  # fp32 training needs no separate master copy
    ],
)
def test_optimizer_state_bytes(optimizer: str, master: bool, precision: str, bytes_per_param: float) -> None:
    shape = model_shape("7B")
    w = Workload(shape=shape, method="full", precision=precision, optimizer=optimizer, master_weights=master)
    assert estimate(w).optimizer_gb == pytest.approx(shape.params * bytes_per_param / 1e9)


def test_pure_bf16_eight_bit_full_fine_tune_of_7b_fits_one_80_gb_gpu() -> None:
    shape = model_shape("7B")
    common = {"shape": shape, "method": "full", "seq_len": 2048, "batch": 4, "grad_checkpointing": True}
    lean = estimate(Workload(**common, optimizer="adamw-8bit", master_weights=False)).total_gb
    standard = estimate(Workload(**common)).total_gb
    assert lean < 80 * 0.9 < standard


@pytest.mark.parametrize("value", ["1" * 5000, "9" * 5000 + "B"])
def test_a_huge_parameter_count_is_refused_with_a_short_echo(value):
    with pytest.raises(ValueError) as caught:
        parse_params(value)
    message = str(caught.value)
    assert len(message) < 200 and "…" in message and "accepted: e.g. 7B" in message
