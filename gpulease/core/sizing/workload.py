"""A workload: the model and how it is trained or served; the estimator's input, defined once.

``Workload`` is the one list of what describes a workload and of its defaults. The spec's ``gpu.fit`` section
(``FitSpec``) and ``gpulease size`` build it from that list: FitSpec's fields carry the same names and take their
defaults from it (a test holds them together), and the command's options do the same.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from gpulease.core.model import SpecModel
from gpulease.core.schema_pattern import schema_pattern
from gpulease.core.sizing.shapes import PARAMS, PRESETS, ModelShape, SizingError, model_shape, parse_params

Method = Literal["full", "lora", "qlora"]
Precision = Literal["bf16", "fp16", "fp32"]
Optimizer = Literal["adamw", "adamw-8bit"]
METHODS: tuple[str, ...] = ("full", "lora", "qlora")
PRECISIONS: tuple[str, ...] = ("bf16", "fp16", "fp32")
OPTIMIZERS: tuple[str, ...] = ("adamw", "adamw-8bit")
DEFAULT_HEADROOM = 0.10
DEFAULT_LORA_RANK = 16


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



WORKLOAD_SETTINGS: tuple[str, ...] = tuple(f.name for f in fields(Workload) if f.name != "shape")
"""What says how a model is trained or served, besides its shape."""


def default(name: str) -> Any:
    """A workload setting's default (the spec and the command line take theirs from here)."""
    return Workload.__dataclass_fields__[name].default


class FitSpec(SpecModel):
    """A training (or inference) workload, sized by ``gpulease.core.sizing`` to pick the instance type."""

    params: str | float = Field(
        ..., description="Model size: a preset (1B, 3B, 7B, 8B, 13B, 14B, 32B, 34B, 70B, 405B) or a count such as 7e9.",
        # The count's range in the schema too (parse_params refuses the rest).
        json_schema_extra={"anyOf": [{"type": "string", "pattern": schema_pattern(PARAMS)},
                                     {"type": "number", "minimum": 1e6, "maximum": 1e13}]},
    )
    method: Method = Field(default("method"), description="full fine-tuning, LoRA adapters, or LoRA on 4-bit base weights.")
    precision: Precision = Field(default("precision"), description="Working precision (bf16/fp16: mixed precision).")
    seq_len: int = Field(default("seq_len"), ge=1, le=1_048_576, description="Tokens per sequence.")
    batch: int = Field(default("batch"), ge=1, le=65536, description="Sequences per step, split across the GPUs.")
    grad_checkpointing: bool = Field(default("grad_checkpointing"), description="Recompute activations in the backward pass.")
    inference: bool = Field(default("inference"), description="Size for serving (weights + KV cache) instead of training.")
    gpus: int | None = Field(None, ge=1, le=16, description="Pin the GPU count; otherwise any count that fits.")
    lora_rank: int = Field(default("lora_rank"), ge=1, le=1024)
    optimizer: Optimizer = Field(default("optimizer"), description="AdamW, or 8-bit AdamW (bitsandbytes).")
    master_weights: bool = Field(default("master_weights"), description="Keep an fp32 master copy in mixed precision; false for pure bf16.")
    headroom: float = Field(DEFAULT_HEADROOM, ge=0, lt=0.9, description="Fraction of GPU memory kept free.")
    hidden: int | None = Field(None, ge=64, description="Explicit shape: hidden size (with layers and heads).")
    layers: int | None = Field(None, ge=1, le=1024)
    heads: int | None = Field(None, ge=1, le=1024)
    kv_heads: int | None = Field(None, ge=1, le=1024, description="Key/value heads (grouped-query attention).")

    @field_validator("params")
    @classmethod
    def _params(cls, value: str | float) -> str | float:
        if isinstance(value, str) and value.strip().upper() in PRESETS:
            return value.strip().upper()
        parse_params(value)
        return value

    @model_validator(mode="after")
    def _shape(self) -> FitSpec:
        try:
            self.workload()
        except SizingError as exc:
            raise ValueError(str(exc)) from None
        return self

    def workload(self) -> Workload:
        """The workload this section describes: its model shape, and every setting it gives (the rest default)."""
        shape = model_shape(self.params, hidden=self.hidden, layers=self.layers, heads=self.heads, kv_heads=self.kv_heads)
        return Workload(shape=shape, **{name: getattr(self, name) for name in WORKLOAD_SETTINGS if name in type(self).model_fields})
