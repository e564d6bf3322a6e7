"""The one tag set every taggable resource of an experiment carries, built from the spec (and counted by it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpulease.core import vocabulary as v

if TYPE_CHECKING:  # types only: the spec builds this tag set to count it, so this module imports neither at run time
    import pulumi

    from components.spec.experiment import ExperimentSpec


def experiment_tags(
    spec: ExperimentSpec,
    *,
    stack: str,
    expires_at: pulumi.Input[str],
    checkpoint_uri: str,
    experiment: str | None = None,
    max_runtime_hours: float | None = None,
    retain: bool | None = None,
) -> dict[str, pulumi.Input[str]]:
    """Accounting tags for one experiment (or, with ``experiment``/``max_runtime_hours``, for a sweep's shared
    resources). User tags come first so that gpulease's keys always win."""
    tags: dict[str, pulumi.Input[str]] = dict(spec.tags)
    tags.update(
        {
            v.TAG_OWNER: spec.owner,
            v.TAG_PROJECT: spec.project,
            v.TAG_EXPERIMENT: experiment or spec.name,
            v.TAG_COST_CENTER: spec.cost_center,
            v.TAG_BUDGET_USD: f"{spec.budget_usd:g}",
            v.TAG_EXPIRES_AT: expires_at,
            v.TAG_MAX_RUNTIME_HOURS: f"{(max_runtime_hours or spec.max_runtime_hours):g}",
            v.TAG_CHECKPOINT_URI: checkpoint_uri,
            v.TAG_MANAGED_BY: v.MANAGED_BY_VALUE,
            v.TAG_STACK: stack,
        }
    )
    if spec.on_demand_reason:
        tags[v.TAG_ON_DEMAND_REASON] = spec.on_demand_reason
    if spec.ci_run:
        tags[v.TAG_CI_RUN] = spec.ci_run
    if spec.verify is not None:  # the pack's verify-long-run reads it
        tags[v.TAG_VERIFY] = v.verify_tag_value(spec.verify.max_minutes, bool(spec.verify.resume_command))
    return tags if retain is None else retained(tags, retain)


def retained(tags: dict[str, pulumi.Input[str]], retain: bool) -> dict[str, pulumi.Input[str]]:
    """``tags`` plus the retain tag the reaper and the retention policy read for disks and buckets."""
    return {**tags, v.TAG_RETAIN: "true" if retain else "false"}
