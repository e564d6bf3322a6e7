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
from dataclasses import asdict, dataclass

from gpulease.core.sizing.shapes import SizingError
from gpulease.core.sizing.workload import Workload

GB = 1e9
BYTES: dict[str, float] = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0}
NF4_BYTES_PER_PARAM = (4 + 0.127) / 8
ADAM_BYTES_MIXED = 12.0
ADAM_BYTES_FP32 = 8.0
MOMENT_BYTES: dict[str, float] = {"adamw": 8.0, "adamw-8bit": 2.0}
MASTER_COPY_BYTES = 4.0
ACTIVATION_FACTOR = 34.0
ATTENTION_SCORE_FACTOR = 5.0
LOGIT_BYTES = 4.0
CUDA_CONTEXT_GB = 1.0
FRAGMENTATION = 0.10


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

