"""Transformer shapes: the published models the presets copy, parameter counts, explicit shapes."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace

from gpulease.core.errors import UserError
from gpulease.core.schema_pattern import PY_SPACE
from gpulease.core.shown import echo


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

_SPACE = f"[{PY_SPACE}]*"  # Python's \s spelled out: ECMA-262's (the schema's reader) is another set
PARAMS = re.compile(rf"^{_SPACE}([0-9]+(?:\.[0-9]+)?(?:[eE][0-9]+)?){_SPACE}([kmbtKMBT]?){_SPACE}\Z")
"""A parameter count as text (7B, 1.5b, 350M, 7e9); also the JSON Schema's pattern ([0-9]: ASCII digits only)."""
_SCALE = {"": 1.0, "k": 1e3, "m": 1e6, "b": 1e9, "t": 1e12}


def parse_params(value: str | float | int) -> float:
    """``7B``, ``1.5b``, ``350M``, ``7e9`` or a number → a parameter count."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        count = float(value)
    else:
        match = PARAMS.match(str(value))
        if not match:
            raise ValueError(f"{echo(value)} is not a parameter count; accepted: e.g. 7B, 1.5B, 350M or 7e9")
        count = float(match.group(1)) * _SCALE[match.group(2).lower()]
    if not 1e6 <= count <= 1e13:
        raise ValueError(f"{echo(value)} is outside 1M-10T parameters; accepted: e.g. 7B, 1.5B, 350M or 7e9")
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
