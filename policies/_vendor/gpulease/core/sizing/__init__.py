"""How much GPU memory a transformer needs to train or serve, and which instance types hold it.

``shapes`` (model presets and shapes) → ``workload`` (what is trained and how: the one definition, which the
spec's ``gpu.fit`` and ``gpulease size`` share) → ``estimate`` (memory per GPU, the formulas) → ``offers`` (the
catalog's types that hold it, cheapest first) → ``resolve`` (a spec's ``gpu`` section to one instance type).
"""

from __future__ import annotations

from gpulease.core.sizing.estimate import GB, MemoryEstimate, estimate, optimizer_bytes
from gpulease.core.sizing.offers import NO_BF16, Offer, find_offers, offer_warnings
from gpulease.core.sizing.shapes import PRESETS, ModelShape, SizingError, model_shape, parse_params, shape_params
from gpulease.core.sizing.workload import (
    DEFAULT_HEADROOM,
    DEFAULT_LORA_RANK,
    METHODS,
    OPTIMIZERS,
    PRECISIONS,
    WORKLOAD_SETTINGS,
    FitSpec,
    Workload,
)

__all__ = [
    "DEFAULT_HEADROOM",
    "DEFAULT_LORA_RANK",
    "GB",
    "METHODS",
    "NO_BF16",
    "OPTIMIZERS",
    "PRECISIONS",
    "PRESETS",
    "WORKLOAD_SETTINGS",
    "FitSpec",
    "MemoryEstimate",
    "ModelShape",
    "Offer",
    "SizingError",
    "Workload",
    "estimate",
    "find_offers",
    "model_shape",
    "offer_warnings",
    "optimizer_bytes",
    "parse_params",
    "shape_params",
]
