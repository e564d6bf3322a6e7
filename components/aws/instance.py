"""The GPU instance: image, market (spot or on-demand), IMDSv2, encrypted root disk, shutdown = terminate.

Replacement rules (see docs/provider-facts.md for the sources):
- ``ami`` is replace-triggering (terraform-provider-aws ``ec2_instance.go``: ``ForceNew``). An image found by a
  family lookup is therefore ignored after the first run (``ignore_changes``): a newer image published by AWS
  never replaces a running experiment. Moving to a new image is explicit: pin ``image.id`` to it (the plan shows
  the instance replaced), or start a fresh stack.
- Every replacement, for whatever input, is delete-before-replace: the old instance is terminated (its data
  volume detached by the termination) before the new one is created and the volume attached to it, so two GPU
  instances never run at once and the new attachment never meets ``VolumeInUse``.
"""

from __future__ import annotations

from decimal import Decimal

import pulumi
import pulumi_aws as aws

from components.aws.context import AwsContext
from components.spec import ExperimentSpec

# Image families resolved to the newest matching image, and whether the NVIDIA driver comes with it. The Deep
# Learning Base AMIs ship the NVIDIA driver, CUDA and Docker ("Nvidia Driver" is in their names); Canonical's
# Ubuntu image has no NVIDIA driver. On that family (``absent``) the bootstrap installs the pinned driver from the
# Ubuntu archive (``components.bootstrap.NVIDIA_DRIVER_PACKAGES``, the same install as Alibaba Cloud's Ubuntu
# family), loads it and checks that nvidia-smi sees the GPU; readiness fails, naming the driver, when it does not.
AMI_FAMILIES: dict[str, dict] = {
    "dlami-base-ubuntu22": {
        "owners": ["amazon"],
        "name": "Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04) *",
        "nvidia_driver": "preinstalled",
    },
    "dlami-pytorch-ubuntu22": {
        "owners": ["amazon"],
        "name": "Deep Learning OSS Nvidia Driver AMI GPU PyTorch * (Ubuntu 22.04) *",
        "nvidia_driver": "preinstalled",
    },
    "ubuntu-22.04": {
        "owners": ["099720109477"],  # Canonical
        "name": "ubuntu/images/hvm-ssd/ubuntu-jammy-22.04-amd64-server-*",
        "nvidia_driver": "absent",
    },
}


def nvidia_driver(spec: ExperimentSpec) -> str:
    """``preinstalled`` or ``absent`` for a family image; ``unknown`` for a pinned ``image.id`` (readiness checks)."""
    return AMI_FAMILIES[spec.image_family]["nvidia_driver"] if spec.image_family else "unknown"


def resolve_image(spec: ExperimentSpec, ctx: AwsContext) -> str:
    if spec.image.id:
        return spec.image.id
    family = AMI_FAMILIES[spec.image_family]
    ami = aws.ec2.get_ami(
        most_recent=True,
        owners=family["owners"],
        filters=[
            {"name": "name", "values": [family["name"]]},
            {"name": "architecture", "values": ["x86_64"]},
            {"name": "state", "values": ["available"]},
        ],
        opts=ctx.invoke_opts(),
    )
    return ami.id


def plain_price(value: float) -> str:
    """A price as EC2 reads it: plain decimal digits, never an exponent (``f"{1e-05:g}"`` is ``'1e-05'``)."""
    return format(Decimal(str(value)).normalize(), "f")


def market_options(spec: ExperimentSpec) -> dict | None:
    """Spot: a one-time request, terminated (never stopped) on interruption; None means on-demand."""
    if spec.market != "spot":
        return None
    spot: dict = {"instance_interruption_behavior": "terminate", "spot_instance_type": "one-time"}
    if spec.max_spot_price_usd is not None:
        spot["max_price"] = plain_price(spec.max_spot_price_usd)
    return {"market_type": "spot", "spot_options": spot}


def replacement_options(*, from_family: bool) -> dict:
    """How the engine may replace the instance: only ever delete-before-replace, never for a newer family image."""
    return {"delete_before_replace": True, "ignore_changes": ["ami"] if from_family else None}


def create_instance(
    spec: ExperimentSpec,
    *,
    instance_type: str,
    image_id: str,
    from_family: bool,
    subnet_id: str,
    security_group: aws.ec2.SecurityGroup,
    key_name: pulumi.Input[str] | None,
    instance_profile: aws.iam.InstanceProfile,
    user_data: pulumi.Input[str],
    tags: dict,
    depends_on: list[pulumi.Resource],
    parent: pulumi.Resource,
) -> aws.ec2.Instance:
    return aws.ec2.Instance(
        f"{spec.name}-instance",
        ami=image_id,
        instance_type=instance_type,
        subnet_id=subnet_id,
        vpc_security_group_ids=[security_group.id],
        associate_public_ip_address=True,
        key_name=key_name,
        iam_instance_profile=instance_profile.name,
        instance_market_options=market_options(spec),
        # Shutting down from inside (watchdog, idle, deadline) must end billing, not leave a stopped instance.
        instance_initiated_shutdown_behavior="terminate",
        metadata_options={
            "http_endpoint": "enabled",
            "http_tokens": "required",
            # 2 hops so training containers on the instance can reach the role's credentials.
            "http_put_response_hop_limit": 2,
            "instance_metadata_tags": "enabled",
        },
        root_block_device={
            "volume_type": "gp3",
            "volume_size": spec.image.root_disk_gb,
            "encrypted": True,
            "delete_on_termination": True,
            "tags": tags,
        },
        ebs_optimized=True,
        user_data_base64=user_data,
        # A one-time spot instance cannot be stopped to change its user-data in place; replace it instead.
        user_data_replace_on_change=True,
        tags=tags,
        # Terminating the instance before the data volume is deleted keeps destroy ordered: the attachment is
        # skipped, the instance goes, the disk is detached, then a non-retained disk can be deleted.
        opts=pulumi.ResourceOptions(parent=parent, depends_on=depends_on, **replacement_options(from_family=from_family)),
    )
