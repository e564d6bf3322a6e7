"""What a spot reclaim does to an Alibaba Cloud experiment, and why nothing in the cloud starts it again.

With ``spot.recover`` the instance is created with ``spot_interruption_behavior = "Stop"``: on a reclaim ECS stops
it in economical mode instead of releasing it. pulumi_alicloud 4.0.0 ``ecs.Instance`` documents the values
``Terminate`` ("The instance is released") and ``Stop`` ("The instance is stopped in economical mode"). Economical
mode releases the vCPUs, memory, GPUs and the system-assigned public address and stops billing them; the cloud disks
(system and data), their snapshots and the private address are kept and billed
(https://www.alibabacloud.com/help/en/ecs/user-guide/economical-mode). The mode is chosen only when the instance is
created ("You can configure the Instance Interruption Mode parameter only when you create the spot instance":
https://www.alibabacloud.com/help/en/ecs/user-guide/preemptible-instance-data-retention-and-data-recovery-after-interrupt-reclamation),
so turning recovery on or off replaces the instance (delete-before-replace; the data disk is detached and kept).

ECS does not start such an instance again by itself: the same guide says "You can restart the instance to restore
the instance data" and that it "may fail to restart due to pricing or inventory factors"; the economical-mode page
says restarting "is equivalent to requesting new resources" and fails while the zone has none. Nothing of ours
running is needed to keep the instance, but something must call StartInstance: ``gpulease resume STACK``
(``gpulease/lifecycle/resume.py``). What was weighed and left out (docs/clouds.md#spot-recovery):

- an OOS timer (``ACS::TimerTrigger``, ``EndDate`` required: https://www.alibabacloud.com/help/en/oos/user-guide/acs-timertrigger)
  would be bounded, but its execution waits (status ``Waiting``) between runs, and the provider's
  ``oos.Execution`` waits for ``Success`` on create (terraform-provider-alicloud
  ``resource_alicloud_oos_execution.go``), so ``pulumi up`` cannot create it; a periodic OOS state configuration
  would also start the instance after the watchdog's own stop (its fallback when the release is refused), which
  must end the experiment;
- an ESS scaling group of one (``spot_instance_remedy``) replaces a reclaimed instance with a new one, but an ESS
  scaling configuration carries no ``auto_release_time`` (pulumi_alicloud ``ess.ScalingConfiguration`` has no
  such input), so the replacement would have no deadline kept by ECS, and would have to attach the data disk
  itself from a role allowed to attach it to any instance.

The deadline still holds while the instance is stopped: ``auto_release_time`` releases a pay-as-you-go or
preemptible instance at that time (ModifyInstanceAutoReleaseTime: "Changes the automatic release time of a
pay-as-you-go or preemptible Elastic Compute Service (ECS) instance"), and a released instance cannot be started
by anyone. Whether ECS releases an instance stopped in economical mode at its release time exactly as a running
one is not verifiable without a cloud.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from components.spec.experiment import ExperimentSpec

STOP = "Stop"
"""Stopped in economical mode on a reclaim: disks kept, compute released."""
TERMINATE = "Terminate"
"""Released on a reclaim (the default): only the data disk, kept by ``delete_with_instance = false``, stays."""


def recovers(spec: ExperimentSpec) -> bool:
    """Whether a reclaim keeps this experiment's instance (stopped) to be started again: ``spot.recover`` (true by
    default on spot with checkpoints, refused otherwise, by the spec)."""
    return spec.market == "spot" and spec.spot.recover is True


def interruption_behavior(spec: ExperimentSpec) -> str:
    return STOP if recovers(spec) else TERMINATE
