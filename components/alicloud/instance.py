"""The GPU instance: image, market (spot or on-demand), IMDSv2-style hardened metadata, encrypted system disk.

Replacement rules (sources in docs/provider-facts.md):
- A change of ``image_id`` is applied in place by default (the instance is stopped and its system disk replaced:
  pulumi_alicloud ``ecs.Instance`` docstring, provider setting ``features.ecs_instance.replace_on_image_update``).
  An image found by a family lookup is ignored after the first run, so a newer public image never touches a
  running experiment; a pinned ``image.id`` that changes replaces the instance on purpose (``replace_on_changes``),
  like on AWS, instead of wiping its system disk in place.
- ``spot_strategy``, ``spot_price_limit``, ``spot_interruption_behavior`` (settable only at creation: the ECS spot
  data-retention guide, ``spot_recovery``) and the system disk's category and encryption are replace-triggering
  (terraform-provider-alicloud ``alicloud_instance`` docs: ``ForceNew``); every replacement is
  delete-before-replace, so the old instance is released (its data disk detached and kept) before the new one
  is created and the disk attached to it.
- ``user_data`` and ``auto_release_time`` are updated in place; a ``user_data`` change reboots the instance.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pulumi_alicloud as alicloud

from components.alicloud.cluster import node_instance_args
from components.alicloud.context import AlicloudContext
from components.alicloud.lifetime import auto_release_time
from components.alicloud.spec import IMAGE_FAMILIES
from components.alicloud.spot_recovery import interruption_behavior
from components.naming import scoped_name
from components.plan import ExperimentParts, Launch
from gpulease.core.errors import UserError

if TYPE_CHECKING:  # the spec's types only: at run time a cloud folder needs none of the spec's code
    from components.spec.experiment import ExperimentSpec


# Public bandwidth for pulling packages, images and datasets; billed by traffic, not reserved.
INTERNET_MAX_BANDWIDTH_OUT_MBPS = 100


class ImageLookupError(UserError):
    """No image of the family supports the instance type in the region."""


def market_options(spec: ExperimentSpec) -> dict:
    """Pay-as-you-go always; spot through ``spot_strategy``. A reclaimed instance is released, or with
    ``spot.recover`` stopped in economical mode (``Stop``: its disks, private address and settings kept, compute no
    longer billed) so that ``gpulease resume`` can start the same instance again (``spot_recovery``).

    ``spot_price_limit`` is in the account's billing currency (CNY on the China site), as Alibaba Cloud bills."""
    if spec.market != "spot":
        return {"instance_charge_type": "PostPaid", "spot_strategy": "NoSpot"}
    options: dict = {"instance_charge_type": "PostPaid", "spot_interruption_behavior": interruption_behavior(spec)}
    if spec.max_spot_price_usd is not None:
        options.update(spot_strategy="SpotWithPriceLimit", spot_price_limit=round(spec.max_spot_price_usd, 3))
    else:
        options["spot_strategy"] = "SpotAsPriceGo"
    return options


def replacement_options(*, from_family: bool, phased: bool = False) -> dict:
    """Only ever delete-before-replace; a newer family image is ignored, a changed pinned image replaces.

    A stack that declares ``phase`` also replaces its instance on a new instance type (ECS would otherwise stop,
    resize and reboot it in place): switching phase (a CPU type for a GPU type) gives a fresh instance, as on AWS,
    and never touches the data disk, which the old instance's release detaches (components/phase.py)."""
    return {
        "delete_before_replace": True,
        "ignore_changes": ["image_id"] if from_family else None,
        # The interruption mode is set only at creation (spot_recovery): turning spot.recover on or off replaces.
        "replace_on_changes": ["image_id", "spot_interruption_behavior", *(["instance_type"] if phased else [])],
    }


class AlicloudInstance:
    """The compute part of the Alibaba Cloud cloud: the image and the instance."""

    def resolve_image(self, spec: ExperimentSpec, family_name: str, instance_type: str, ctx: AlicloudContext) -> str:
        """The newest public image of the family that supports the instance type in the region."""
        family = IMAGE_FAMILIES[family_name]
        found = alicloud.ecs.get_images(
            owners=family["owners"],
            name_regex=family["name_regex"],
            instance_type=instance_type,
            os_type="linux",
            architecture="x86_64",
            status="Available",
            most_recent=True,
            opts=ctx.invoke_opts(),
        )
        if not found.images:
            raise ImageLookupError(
                f"image.family: no {family_name} image supports {instance_type} in {ctx.region}; give image.id"
            )
        return found.images[0].id

    def create_instance(self, exp: ExperimentParts, launch: Launch) -> alicloud.ecs.Instance:
        return alicloud.ecs.Instance(
            f"{exp.name}-instance",
            instance_name=scoped_name(exp.name, 128),
            # ECS host names need at least two characters; experiment names may have one.
            host_name=exp.name if len(exp.name) >= 2 else f"{exp.name}-gpu",
            description=f"gpulease {exp.name}",
            image_id=exp.placed.image_id,
            instance_type=exp.placed.instance_type.type,
            vswitch_id=launch.network.subnets[exp.placed.placement.zone],
            security_groups=[launch.network.security_group.id],
            key_name=launch.network.key_name,
            internet_charge_type="PayByTraffic",
            internet_max_bandwidth_out=INTERNET_MAX_BANDWIDTH_OUT_MBPS,
            # ECS releases the instance at the recorded deadline by itself (see lifetime.py).
            auto_release_time=auto_release_time(exp.name, exp.deadline),
            **market_options(exp.spec),
            http_endpoint="enabled",
            http_tokens="required",
            # No http_put_response_hop_limit: pulumi_alicloud 4.0.0 documents it as "not available for use yet" (the
            # ecs.Instance docstring), so the service default (1 hop) applies.
            instance_metadata_tags="enabled",
            system_disk_category="cloud_essd",
            system_disk_size=exp.spec.image.root_disk_gb,
            system_disk_encrypted=True,
            system_disk_performance_level="PL1",
            system_disk_description=f"gpulease {exp.name}: system disk",
            user_data=launch.user_data,
            # A cluster node's fixed address, deployment set and ERI (components/alicloud/cluster.py).
            **node_instance_args(exp, launch),
            tags=exp.tags,
            volume_tags=exp.tags,
            # Releasing the instance before the data disk is deleted keeps destroy ordered, as on AWS.
            opts=exp.opts(depends_on=launch.depends_on, **replacement_options(
                from_family=exp.spec.image_family is not None, phased="phase" in exp.spec.model_fields_set)),
        )
