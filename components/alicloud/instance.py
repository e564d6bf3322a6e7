"""The GPU instance: image, market (spot or on-demand), IMDSv2-style hardened metadata, encrypted system disk.

Replacement rules (sources in docs/provider-facts.md):
- A change of ``image_id`` is applied in place by default (the instance is stopped and its system disk replaced:
  pulumi_alicloud ``ecs.Instance`` docstring, provider setting ``features.ecs_instance.replace_on_image_update``).
  An image found by a family lookup is ignored after the first run, so a newer public image never touches a
  running experiment; a pinned ``image.id`` that changes replaces the instance on purpose (``replace_on_changes``),
  like on AWS, instead of wiping its system disk in place.
- ``spot_strategy``, ``spot_price_limit`` and the system disk's category and encryption are replace-triggering
  (terraform-provider-alicloud ``alicloud_instance`` docs: ``ForceNew``); every replacement is
  delete-before-replace, so the old instance is released (its data disk detached and kept) before the new one
  is created and the disk attached to it.
- ``user_data`` and ``auto_release_time`` are updated in place; a ``user_data`` change reboots the instance.
"""

from __future__ import annotations

import pulumi
import pulumi_alicloud as alicloud

from components.alicloud.context import AlicloudContext
from components.errors import UserError
from components.naming import scoped_name
from components.spec import ExperimentSpec

# Image families resolved to the newest matching public image that supports the instance type, and whether the
# NVIDIA driver comes with it. Alibaba Cloud's public images carry no GPU driver: its documentation ("Create an
# instance equipped with NVIDIA GPUs") has the driver installed at first boot by its auto-install script passed
# in RunInstances UserData, or taken from a Marketplace image; "if you use an image without a pre-installed GPU
# driver, you must install the GPU driver". Alibaba's script is not used: it reads its mirror from the metadata
# service without a token, which ``http_tokens = required`` refuses. So on this family (``absent``) the bootstrap
# installs the pinned driver from the Ubuntu archive (``components.bootstrap.NVIDIA_DRIVER_PACKAGES``; AWS's
# ``ubuntu-22.04`` family gets the same install), loads it, and readiness fails, naming the driver, when
# nvidia-smi cannot see the GPU (docs/provider-facts.md, docs/provider-facts-instance.md).
IMAGE_FAMILIES: dict[str, dict] = {
    "ubuntu-22.04": {"owners": "system", "name_regex": r"^ubuntu_22_04_x64_20G_alibase_", "nvidia_driver": "absent"},
}


def nvidia_driver(spec: ExperimentSpec) -> str:
    """``preinstalled`` or ``absent`` for a family image; ``unknown`` for a pinned ``image.id`` (readiness checks)."""
    return IMAGE_FAMILIES[spec.image_family]["nvidia_driver"] if spec.image_family else "unknown"

# Public bandwidth for pulling packages, images and datasets; billed by traffic, not reserved.
INTERNET_MAX_BANDWIDTH_OUT_MBPS = 100


class ImageLookupError(UserError):
    """No image of the family supports the instance type in the region."""


def resolve_image(spec: ExperimentSpec, instance_type: str, ctx: AlicloudContext) -> str:
    if spec.image.id:
        return spec.image.id
    family = IMAGE_FAMILIES[spec.image_family]
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
            f"image.family: no {spec.image_family} image supports {instance_type} in {ctx.region}; give image.id"
        )
    return found.images[0].id


def market_options(spec: ExperimentSpec) -> dict:
    """Pay-as-you-go always; spot through ``spot_strategy``, released (never stopped) when reclaimed.

    ``spot_price_limit`` is in the account's billing currency (CNY on the China site), as Alibaba Cloud bills."""
    if spec.market != "spot":
        return {"instance_charge_type": "PostPaid", "spot_strategy": "NoSpot"}
    options: dict = {"instance_charge_type": "PostPaid", "spot_interruption_behavior": "Terminate"}
    if spec.max_spot_price_usd is not None:
        options.update(spot_strategy="SpotWithPriceLimit", spot_price_limit=round(spec.max_spot_price_usd, 3))
    else:
        options["spot_strategy"] = "SpotAsPriceGo"
    return options


def create_instance(
    spec: ExperimentSpec,
    *,
    instance_type: str,
    image_id: str,
    from_family: bool,
    vswitch_id: pulumi.Input[str],
    security_group: alicloud.ecs.SecurityGroup,
    key_name: pulumi.Input[str] | None,
    auto_release_time: pulumi.Input[str],
    user_data: pulumi.Input[str],
    tags: dict,
    depends_on: list[pulumi.Resource],
    parent: pulumi.Resource,
) -> alicloud.ecs.Instance:
    return alicloud.ecs.Instance(
        f"{spec.name}-instance",
        instance_name=scoped_name(spec.name, 128),
        # ECS host names need at least two characters; experiment names may have one.
        host_name=spec.name if len(spec.name) >= 2 else f"{spec.name}-gpu",
        description=f"gpulease {spec.name}",
        image_id=image_id,
        instance_type=instance_type,
        vswitch_id=vswitch_id,
        security_groups=[security_group.id],
        key_name=key_name,
        internet_charge_type="PayByTraffic",
        internet_max_bandwidth_out=INTERNET_MAX_BANDWIDTH_OUT_MBPS,
        # ECS releases the instance at the deadline by itself (see lifetime.py).
        auto_release_time=auto_release_time,
        **market_options(spec),
        http_endpoint="enabled",
        http_tokens="required",
        # No http_put_response_hop_limit: pulumi_alicloud 4.0.0 documents it as "not available for use yet" (the
        # ecs.Instance docstring), so the service default (1 hop) applies.
        instance_metadata_tags="enabled",
        system_disk_category="cloud_essd",
        system_disk_size=spec.image.root_disk_gb,
        system_disk_encrypted=True,
        system_disk_performance_level="PL1",
        system_disk_description=f"gpulease {spec.name}: system disk",
        user_data=user_data,
        tags=tags,
        volume_tags=tags,
        # Releasing the instance before the data disk is deleted keeps destroy ordered, as on AWS.
        opts=pulumi.ResourceOptions(parent=parent, depends_on=depends_on, **replacement_options(from_family=from_family)),
    )


def replacement_options(*, from_family: bool) -> dict:
    """Only ever delete-before-replace; a newer family image is ignored, a changed pinned image replaces."""
    return {
        "delete_before_replace": True,
        "ignore_changes": ["image_id"] if from_family else None,
        "replace_on_changes": ["image_id"],
    }
