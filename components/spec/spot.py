"""The spot section of an experiment: whether a reclaimed spot instance comes back by itself (``spot.recover``).

``recover`` defaults to true for a single-node spot experiment with checkpoints and to false otherwise; the
experiment decides the default as it validates the section (``ExperimentSpec._spot_default``), so
``spec.spot.recover`` is always a bool. What each cloud builds for it is in docs/clouds.md ("Spot recovery"); ``spot_problems`` holds what it refuses:

- on-demand: there is no reclaim to recover from;
- no checkpoints: a restarted instance would have nothing to resume from;
- a cluster (``nodes`` above one): EC2 restarts each stopped node on its own, when capacity for that node returns,
  and nothing restarts the collective job on the nodes that were not reclaimed, which wait in it or fail out of it;
  a node restarted alone into a cluster placement group may not find capacity while the others run and bill
  (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/placement-strategies.html: capacity for a cluster placement
  group is best found by launching all its instances at once). A cluster stays one-time spot, terminated on a
  reclaim, as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from components.spec_rules import Problem
from gpulease.core.model import SpecModel

if TYPE_CHECKING:
    from components.spec.experiment import ExperimentSpec


class SpotSpec(SpecModel):
    """What happens when the cloud takes a spot instance back."""

    recover: bool | None = Field(
        None,
        description="A reclaimed spot instance comes back by itself and resumes from its checkpoint (AWS: a "
        "persistent request, stopped on interruption). Default: true on spot with checkpoints and one node, false "
        "otherwise.",
    )


def default_recover(market: str, checkpoints: bool, nodes: int) -> bool:
    """True exactly where recovery can work: spot, checkpoints on, one node."""
    return market == "spot" and checkpoints and nodes == 1


def spot_problems(exp: ExperimentSpec) -> list[Problem]:
    """``recover: true`` where it cannot work, with what is accepted."""
    if exp.spot.recover is not True:
        return []
    if exp.market != "spot":
        return [("spot.recover", "true needs a spot instance, and market is on-demand (nothing reclaims it); accepted: "
                 "false (or omit it) with market: on-demand, or market: spot")]
    if not exp.checkpoints.enabled:
        return [("spot.recover", "true needs checkpoints to resume from; accepted: checkpoints.enabled: true, or "
                 "spot.recover: false")]
    if exp.nodes > 1:
        return [("spot.recover", f"true with nodes: {exp.nodes}: each node would come back on its own while the job "
                 "on the others waits or fails, so a cluster does not recover (docs/clouds.md#spot-recovery); "
                 "accepted: false (or omit it) for a cluster, or nodes: 1")]
    return []
