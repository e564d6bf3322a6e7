"""How much GPU memory a transformer needs to train or serve, and which instance types hold it.

All sizes are in GB (10^9 bytes), per GPU. P is the parameter count, T the trainable parameters, b the bytes
of one value in the working precision (fp32: 4, bf16/fp16: 2), L layers, h hidden size, a attention heads,
s sequence length, B the micro-batch on one GPU, V the vocabulary.

Training
    weights      full: P·b                     lora: P·b + T·b          qlora: P·0.516 + T·b
                 (QLoRA stores NF4 base weights: 4 bits plus 0.127 bits of double-quantised constants.)
    gradients    T·b                           (full fine-tuning: T = P)
    optimizer    AdamW moments: T·8 (two fp32 moments) or, 8-bit AdamW (bitsandbytes), T·2; plus an fp32 master
                 copy T·4 in mixed precision (bf16/fp16) unless the weights are trained in pure bf16
                 → full fine-tuning in mixed precision with AdamW holds 2 + 2 + 12 = 16 bytes per parameter;
                   pure bf16 with 8-bit AdamW holds 2 + 2 + 2 = 6.
    LoRA         T = r · L · (9h + 2·kv + 3·ffn): rank-r adapters on every linear layer (q, k, v, o, gate,
                 up, down), about 0.6 % of a 7B model at r = 16.
    activations  per layer s·B·h·(34 + 5·a·s/h)·b/2 bytes (Korthikanti et al., 2022); with memory-efficient
                 attention (FlashAttention / SDPA, the default) the 5·a·s/h term is not stored.
                 Gradient checkpointing keeps only each layer's input (2·s·B·h·b/2) plus one layer recomputed
                 at a time. The logits add s·B·V·4 (upcast to fp32 for the loss).
Inference
    weights      P·b (qlora: 4-bit, as above)
    KV cache     2 · L · kv_heads · head_dim · s · B · b
    activations  one layer's working set during prefill, s·B·(4h + 2·ffn)·b, plus the last logits B·V·4
Every GPU
    overhead     1 GB (CUDA context, cuBLAS/cuDNN workspaces) + 10 % of the rest (allocator caching and
                 fragmentation)
Several GPUs (N)
    training assumes fully sharded data parallelism (FSDP / ZeRO-3): weights, gradients and optimizer states
    divide by N, the batch splits across GPUs (B = ceil(batch / N)), and one layer's full weights are gathered
    at a time. Inference assumes tensor parallelism: weights and KV cache divide by N.

An instance fits when the estimate stays within its GPU memory less the headroom (10 % by default).
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field, replace
from datetime import date
from typing import Any, Literal

from components.catalog.models import Catalog, InstanceType
from gpulease.core.errors import UserError

GB = 1e9
Method = Literal["full", "lora", "qlora"]
Precision = Literal["bf16", "fp16", "fp32"]
METHODS: tuple[str, ...] = ("full", "lora", "qlora")
PRECISIONS: tuple[str, ...] = ("bf16", "fp16", "fp32")

BYTES: dict[str, float] = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0}
NF4_BYTES_PER_PARAM = (4 + 0.127) / 8
ADAM_BYTES_MIXED = 12.0
ADAM_BYTES_FP32 = 8.0
Optimizer = Literal["adamw", "adamw-8bit"]
OPTIMIZERS: tuple[str, ...] = ("adamw", "adamw-8bit")
MOMENT_BYTES: dict[str, float] = {"adamw": 8.0, "adamw-8bit": 2.0}
MASTER_COPY_BYTES = 4.0
ACTIVATION_FACTOR = 34.0
ATTENTION_SCORE_FACTOR = 5.0
LOGIT_BYTES = 4.0
CUDA_CONTEXT_GB = 1.0
FRAGMENTATION = 0.10
DEFAULT_HEADROOM = 0.10
DEFAULT_LORA_RANK = 16
NO_BF16 = ("T4", "V100")
"""GPUs without native bf16 (Turing, Volta)."""


class SizingError(UserError):
    """A workload the estimator cannot describe: unknown size, inconsistent shape."""


@dataclass(frozen=True)
class ModelShape:
    """A decoder-only transformer's shape; ``reference`` names the published model a preset copies."""

    name: str
    params: float
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    intermediate: int
    vocab: int
    reference: str = "custom"
    tied_embeddings: bool = False

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def kv_dim(self) -> int:
        return self.kv_heads * self.head_dim


def _shape(
    name: str, params: float, layers: int, hidden: int, heads: int, kv: int, ffn: int, vocab: int, ref: str, tied: bool = False
) -> ModelShape:
    return ModelShape(name, params, layers, hidden, heads, kv, ffn, vocab, ref, tied)


PRESETS: dict[str, ModelShape] = {
    s.name: s
    for s in (
        _shape("1B", 1.24e9, 16, 2048, 32, 8, 8192, 128256, "Llama-3.2-1B", tied=True),
        _shape("3B", 3.21e9, 28, 3072, 24, 8, 8192, 128256, "Llama-3.2-3B", tied=True),
        _shape("7B", 6.74e9, 32, 4096, 32, 32, 11008, 32000, "Llama-2-7B"),
        _shape("8B", 8.03e9, 32, 4096, 32, 8, 14336, 128256, "Llama-3.1-8B"),
        _shape("13B", 13.0e9, 40, 5120, 40, 40, 13824, 32000, "Llama-2-13B"),
        _shape("14B", 14.8e9, 48, 5120, 40, 8, 13824, 152064, "Qwen2.5-14B"),
        _shape("32B", 32.8e9, 64, 5120, 40, 8, 27648, 152064, "Qwen2.5-32B"),
        _shape("34B", 33.7e9, 48, 8192, 64, 8, 22016, 32000, "CodeLlama-34B"),
        _shape("70B", 70.6e9, 80, 8192, 64, 8, 28672, 128256, "Llama-3.1-70B"),
        _shape("405B", 405.9e9, 126, 16384, 128, 8, 53248, 128256, "Llama-3.1-405B"),
    )
}

_PARAMS = re.compile(r"^\s*(\d+(?:\.\d+)?(?:e\d+)?)\s*([kmbt]?)\s*$", re.IGNORECASE)
_SCALE = {"": 1.0, "k": 1e3, "m": 1e6, "b": 1e9, "t": 1e12}


def parse_params(value: str | float | int) -> float:
    """``7B``, ``1.5b``, ``350M``, ``7e9`` or a number → a parameter count."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        count = float(value)
    else:
        match = _PARAMS.match(str(value))
        if not match:
            raise ValueError(f"{value!r} is not a parameter count; accepted: e.g. 7B, 1.5B, 350M or 7e9")
        count = float(match.group(1)) * _SCALE[match.group(2).lower()]
    if not 1e6 <= count <= 1e13:
        raise ValueError(f"{value!r} is outside 1M-10T parameters")
    return count


def model_shape(
    params: str | float | None = None,
    *,
    hidden: int | None = None,
    layers: int | None = None,
    heads: int | None = None,
    kv_heads: int | None = None,
    intermediate: int | None = None,
    vocab: int | None = None,
) -> ModelShape:
    """A preset by size (``7B``), a preset's shape for a count close to it (``7e9``), or an explicit shape.

    Explicit dimensions replace the preset's. Without a preset, ``hidden``, ``layers`` and ``heads`` are needed;
    the parameter count then defaults to the shape's own (attention + gated MLP + embeddings and output head)."""
    preset = PRESETS.get(params.strip().upper()) if isinstance(params, str) else None
    count = None if preset is not None or params is None else parse_params(params)
    if preset is None and count is not None:
        near = min(PRESETS.values(), key=lambda p: abs(math.log(p.params / count)))
        preset = near if abs(near.params - count) / near.params <= 0.10 else None
    explicit = {"hidden": hidden, "layers": layers, "heads": heads}
    if preset is None and None in explicit.values():
        missing = ", ".join(f"--{k}" for k, v in explicit.items() if v is None)
        raise SizingError(
            f"no preset near {params!r} parameters; give the shape ({missing}) or a preset: {', '.join(PRESETS)}"
        )
    custom = any(v is not None for v in (hidden, layers, heads, kv_heads, intermediate, vocab))
    base = preset or ModelShape("custom", 0.0, 0, 0, 0, 0, 0, 32000)
    h = hidden or base.hidden
    a = heads or base.heads
    if h % a:
        raise SizingError(f"hidden size {h} is not divisible by {a} heads")
    kv = kv_heads or (base.kv_heads if heads is None else a)
    if kv < 1 or a % kv:
        raise SizingError(f"{a} heads are not divisible into {kv} key/value heads")
    shape = ModelShape(
        name="custom" if custom else base.name,
        params=0.0,
        layers=layers or base.layers,
        hidden=h,
        heads=a,
        kv_heads=kv,
        intermediate=intermediate or (base.intermediate if hidden is None else _default_ffn(h)),
        vocab=vocab or base.vocab,
        reference=base.reference if preset and not custom else "custom",
        tied_embeddings=base.tied_embeddings and vocab is None,
    )
    if count is not None:
        return replace(shape, params=count)
    if preset is not None and not custom:
        return replace(shape, params=preset.params)
    return replace(shape, params=shape_params(shape))


def _default_ffn(hidden: int) -> int:
    """A gated MLP's width: 8/3 of hidden, rounded up to a multiple of 256 (the Llama convention)."""
    return int(math.ceil(hidden * 8 / 3 / 256) * 256)


def shape_params(shape: ModelShape) -> float:
    per_layer = 2 * shape.hidden * shape.hidden + 2 * shape.hidden * shape.kv_dim + 3 * shape.hidden * shape.intermediate
    embeddings = (1 if shape.tied_embeddings else 2) * shape.vocab * shape.hidden
    return float(shape.layers * per_layer + embeddings)


@dataclass(frozen=True)
class Workload:
    shape: ModelShape
    method: Method = "lora"
    precision: Precision = "bf16"
    seq_len: int = 1024
    batch: int = 1
    grad_checkpointing: bool = False
    inference: bool = False
    lora_rank: int = DEFAULT_LORA_RANK
    flash_attention: bool = True
    optimizer: Optimizer = "adamw"
    master_weights: bool = True
    """Keep an fp32 master copy of the trained weights (mixed precision); False for pure bf16 training."""

    def __post_init__(self) -> None:
        if self.optimizer not in OPTIMIZERS:
            raise SizingError(f"optimizer {self.optimizer!r}; accepted: {', '.join(OPTIMIZERS)}")
        if self.method not in METHODS:
            raise SizingError(f"method {self.method!r}; accepted: {', '.join(METHODS)}")
        if self.precision not in PRECISIONS:
            raise SizingError(f"precision {self.precision!r}; accepted: {', '.join(PRECISIONS)}")
        if self.seq_len < 1 or self.batch < 1 or self.lora_rank < 1:
            raise SizingError("sequence length, batch and LoRA rank must be at least 1")

    @property
    def trainable_params(self) -> float:
        if self.inference:
            return 0.0
        if self.method == "full":
            return self.shape.params
        s = self.shape
        return float(self.lora_rank * s.layers * (9 * s.hidden + 2 * s.kv_dim + 3 * s.intermediate))

    def describe(self) -> str:
        what = "inference" if self.inference else f"{self.method} fine-tune"
        ckpt = ", gradient checkpointing" if self.grad_checkpointing and not self.inference else ""
        return (
            f"{self.shape.name} ({self.shape.params / 1e9:.2f}B params, {self.shape.reference}) {what}, "
            f"{self.precision}, seq {self.seq_len}, batch {self.batch}{ckpt}"
        )


@dataclass(frozen=True)
class MemoryEstimate:
    """Memory needed on each of ``gpus`` GPUs, GB."""

    gpus: int
    weights_gb: float
    gradients_gb: float
    optimizer_gb: float
    activations_gb: float
    kv_cache_gb: float
    overhead_gb: float
    trainable_params: float

    @property
    def total_gb(self) -> float:
        return (
            self.weights_gb + self.gradients_gb + self.optimizer_gb + self.activations_gb + self.kv_cache_gb + self.overhead_gb
        )

    def as_dict(self) -> dict[str, float]:
        out = {_camel(k): round(v, 3) if isinstance(v, float) else v for k, v in asdict(self).items()}
        out["totalGb"] = round(self.total_gb, 3)
        return out


def optimizer_bytes(optimizer: str, precision: str, master_weights: bool = True) -> float:
    """Optimizer state bytes per trainable parameter: the moments, plus the fp32 master copy in mixed precision."""
    master = MASTER_COPY_BYTES if BYTES[precision] == 2 and master_weights else 0.0
    return MOMENT_BYTES[optimizer] + master


def estimate(workload: Workload, gpus: int = 1) -> MemoryEstimate:
    """Memory per GPU for ``workload`` spread over ``gpus`` GPUs (see the module docstring for the formulas)."""
    if gpus < 1:
        raise SizingError("gpus must be at least 1")
    s, w = workload.shape, workload
    b = BYTES[w.precision]
    base_bytes = NF4_BYTES_PER_PARAM if w.method == "qlora" else b
    trainable = w.trainable_params
    if w.inference:
        weights = s.params * base_bytes / gpus
        kv = 2 * s.layers * s.kv_dim * w.seq_len * w.batch * b / gpus
        acts = w.seq_len * w.batch * (4 * s.hidden + 2 * s.intermediate) * b + w.batch * s.vocab * LOGIT_BYTES
        grads = optimizer = 0.0
    else:
        frozen = 0.0 if w.method == "full" else s.params
        weights = (frozen * base_bytes + trainable * b) / gpus
        if gpus > 1:
            weights += (s.params / s.layers) * base_bytes  # one layer gathered for compute
        grads = trainable * b / gpus
        optimizer = trainable * optimizer_bytes(w.optimizer, w.precision, w.master_weights) / gpus
        micro = math.ceil(w.batch / gpus)
        scale = b / 2
        unit = w.seq_len * micro * s.hidden * scale
        scores = 0.0 if w.flash_attention else ATTENTION_SCORE_FACTOR * s.heads * w.seq_len**2 * micro * scale
        per_layer = ACTIVATION_FACTOR * unit + scores
        stored = s.layers * 2 * unit + per_layer if w.grad_checkpointing else s.layers * per_layer
        acts = stored + w.seq_len * micro * s.vocab * LOGIT_BYTES
        kv = 0.0
    rest = weights + grads + optimizer + acts + kv
    overhead = CUDA_CONTEXT_GB * GB + FRAGMENTATION * rest
    return MemoryEstimate(
        gpus=gpus,
        weights_gb=weights / GB,
        gradients_gb=grads / GB,
        optimizer_gb=optimizer / GB,
        activations_gb=acts / GB,
        kv_cache_gb=kv / GB,
        overhead_gb=overhead / GB,
        trainable_params=trainable,
    )


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


@dataclass(frozen=True)
class Offer:
    """An instance type that holds the workload, with its price in one region."""

    instance: InstanceType
    region: str
    estimate: MemoryEstimate
    warnings: list[str] = field(default_factory=list)

    @property
    def headroom_gb(self) -> float:
        return self.instance.gpu_memory_gb - self.estimate.total_gb

    @property
    def on_demand_usd(self) -> float:
        return self.instance.prices[self.region]

    @property
    def on_demand_as_of(self) -> date:
        return self.instance.price_date(self.region)

    @property
    def spot_zone(self) -> str | None:
        """The region's cheapest zone by current spot price, when a refresh recorded spot prices; else None."""
        zones = self.instance.spot_zone_prices(self.region)
        return min(zones, key=lambda z: (zones[z], z)) if zones else None

    @property
    def spot_usd(self) -> float:
        """The cheapest zone's current spot price, else on-demand less the family's typical discount (an estimate)."""
        zone = self.spot_zone
        if zone is not None:
            return self.instance.spot_prices[zone]
        return self.on_demand_usd * (1 - self.instance.spot_discount)

    @property
    def spot_as_of(self) -> date:
        zone = self.spot_zone
        return self.instance.spot_price_date(zone) if zone else self.on_demand_as_of

    def as_dict(self) -> dict[str, Any]:
        it = self.instance
        return {
            "instanceType": it.type,
            "region": self.region,
            "gpuModel": it.gpu_model,
            "gpuCount": it.gpu_count,
            "gpuMemoryGb": it.gpu_memory_gb,
            "memoryBandwidthGbps": it.memory_bandwidth_gbps,
            "interconnect": it.interconnect,
            "vcpu": it.vcpu,
            "ramGb": it.ram_gb,
            "neededPerGpuGb": round(self.estimate.total_gb, 2),
            "headroomGb": round(self.headroom_gb, 2),
            "onDemandUsdPerHour": self.on_demand_usd,
            "spotEstimateUsdPerHour": round(self.spot_usd, 4),
            "spotBasis": "current" if self.spot_zone else "estimate",
            "spotZone": self.spot_zone,
            "spotAsOf": self.spot_as_of.isoformat(),
            "priceAsOf": self.on_demand_as_of.isoformat(),
            "warnings": self.warnings,
        }


def find_offers(
    workload: Workload,
    catalog: Catalog,
    cloud: str,
    region: str,
    *,
    gpus: int | None = None,
    headroom: float = DEFAULT_HEADROOM,
    model: str | None = None,
) -> list[Offer]:
    """Instance types priced in ``region`` whose GPUs hold ``workload`` with ``headroom`` to spare, cheapest first.

    ``gpus`` pins the GPU count; otherwise every count is considered (the estimate is redone for each)."""
    if not 0 <= headroom < 1:
        raise SizingError(f"headroom {headroom} must be a fraction in [0, 1)")
    offers = []
    for it in catalog.instances:
        if it.cloud != cloud or region not in it.prices:
            continue
        if gpus is not None and it.gpu_count != gpus:
            continue
        if model is not None and it.gpu_model.lower() != model.lower():
            continue
        est = estimate(workload, it.gpu_count)
        usable = it.gpu_memory_gb * (1 - headroom)
        if est.total_gb > usable:
            continue
        offers.append(
            Offer(
                instance=it,
                region=region,
                estimate=est,
                warnings=offer_warnings(workload, it),
            )
        )
    return sorted(offers, key=lambda o: (o.on_demand_usd, o.instance.gpu_count, o.instance.type))


def offer_warnings(workload: Workload, it: InstanceType) -> list[str]:
    warnings = []
    if it.gpu_count > 1 and it.interconnect == "pcie":
        how = "tensor-parallel layers exchange activations" if workload.inference else "sharded training gathers weights and reduces gradients"
        warnings.append(f"several GPUs over PCIe, no NVLink: {how} every step, so scaling is poor")
    if workload.precision == "bf16" and it.gpu_model in NO_BF16:
        warnings.append(f"{it.gpu_model} has no native bf16; use --precision fp16")
    return warnings


def workload_from_fit(fit: Any) -> tuple[Workload, int | None, float]:
    """The workload, GPU count (None: any) and headroom of a spec's ``gpu.fit`` (``components.spec.FitSpec``)."""
    shape = model_shape(
        fit.params,
        hidden=fit.hidden,
        layers=fit.layers,
        heads=fit.heads,
        kv_heads=fit.kv_heads,
    )
    workload = Workload(
        shape=shape,
        method=fit.method,
        precision=fit.precision,
        seq_len=fit.seq_len,
        batch=fit.batch,
        grad_checkpointing=fit.grad_checkpointing,
        inference=fit.inference,
        lora_rank=fit.lora_rank,
        optimizer=fit.optimizer,
        master_weights=fit.master_weights,
    )
    return workload, fit.gpus, fit.headroom
