"""What an ephemeral stack will do, known before it exists: its program rendered offline (under mocks), refused when
it fails, and priced."""

from __future__ import annotations

from gpulease.core.cost import estimate_resources
from gpulease.core.errors import UserError
from gpulease.ephemeral.config import EphemeralConfig
from gpulease.review.render import render


class RenderFailedError(UserError):
    """The stack's program fails under an offline render: ``pulumi up`` would fail partway, after creating things."""


def render_check(cfg: EphemeralConfig) -> None:
    """Run the stack's program offline (under mocks) exactly as ``pulumi up`` will run it, before anything exists.

    A program error (an invalid config, user-data over the cloud's limit, ...) would otherwise surface only during
    ``pulumi up``, after some resources were created: refuse the run instead, with the program's own message."""
    rendering = render(cfg.config, stack=cfg.stack)
    if rendering.error:
        detail = " ".join(rendering.error.split())
        raise RenderFailedError(f"stack '{cfg.stack}' (from {cfg.base_stack}) fails to render, so nothing was created: {detail}")


def rendered_cost(cfg: EphemeralConfig) -> dict[str, float | None] | None:
    """Hourly and worst-case cost of what the stack will create: its program rendered offline (under mocks) and
    priced by ``gpulease.core.cost``. None when it cannot be estimated; an estimate never fails a run."""
    try:
        rendering = render(cfg.config, stack=cfg.stack)
        if rendering.error:
            return None
        cost = estimate_resources(
            [(r.type, r.inputs, {"name": r.name, "retainOnDelete": r.retain_on_delete}) for r in rendering.custom_resources],
            region=cfg.region,
        )
    except Exception:
        return None
    # A figure that includes an unpriced item is unknown (None), never its lower bound.
    return {"hourlyUsd": round(cost.hourly_usd, 4) if cost.hourly_known else None,
            "worstCaseUsd": round(cost.worst_case_usd, 2) if cost.worst_case_known else None}
