"""The GPU instance: image, market (spot or on-demand), IMDSv2, encrypted root disk, shutdown = terminate.

Replacement rules (see docs/provider-facts.md for the sources):
- ``ami`` is replace-triggering (terraform-provider-aws ``ec2_instance.go``: ``ForceNew``). An image found by a
  family lookup is therefore ignored after the first run (``ignore_changes``): a newer image published by AWS
  never replaces a running experiment. Moving to a new image is explicit: pin ``image.id`` to it (the plan shows
  the instance replaced), or start a fresh stack.
- Every replacement, for whatever input, is delete-before-replace: the old instance is terminated (its data
  volume detached by the termination) before the new one is created and the volume attached to it, so two GPU
  instances never run at once and the new attachment never meets ``VolumeInUse``.
- ``instance_market_options`` and each of its spot options are ``ForceNew``: turning ``spot.recover`` on or off
  replaces the instance (delete-before-replace, as above). No option holds the deadline (no ``valid_until``): one
  that did would either replace the instance on every renewal or, ignored, keep the first deadline on a replacement
  (``ignore_changes`` hands a replacement the old value, or none at all when recovery was off before). The request
  ends with the deadline's cancelling schedule, which moves with a renewal (``lifetime``).

Spot recovery (``spot.recover``): a persistent request, stopped on interruption, which EC2 starts again when capacity
returns ("Behavior of Spot Instance interruptions",
https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/interruption-behavior.html; RunInstances accepts a persistent
request only with ``stop`` or ``hibernate``: SpotMarketOptions.SpotInstanceType in the pulumi_aws docstring and
https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_SpotMarketOptions.html). The request ends at the latest
by the cancelling schedule, two minutes before the deadline terminates the instance, and by itself after EC2's
default end, 7 days after its creation (SpotMarketOptions.ValidUntil "Default: 7 days from the current date"); a
deadline is never more than 168 hours after the instance's launch, so only a renewal reaches past it, and then
recovery ends there (docs/run.md). The provider cancels it before terminating the instance on delete
(terraform-provider-aws ``resourceInstanceDelete``: ``CancelSpotInstanceRequests`` on ``spot_instance_request_id``
when ``instance_lifecycle`` is ``spot``); docs/provider-facts.md has the sources. That cancel is not relied on: a
spot instance carries a named ``before_delete`` hook that cancels its request first (``spot_hook``), on a destroy, a
replacement and its removal from the program alike.
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, cast

import pulumi
import pulumi_aws as aws

from components.aws.cluster import instance_network_args
from components.aws.context import AwsContext
from components.aws.spec import AMI_FAMILIES, recovers
from components.aws.spot_hook import spot_hooks
from components.plan import ExperimentParts, Launch

if TYPE_CHECKING:  # the spec's types only: at run time a cloud folder needs none of the spec's code
    from components.spec.experiment import ExperimentSpec



def plain_price(value: float) -> str:
    """A price as EC2 reads it: plain decimal digits, never an exponent (``f"{1e-05:g}"`` is ``'1e-05'``)."""
    return format(Decimal(str(value)).normalize(), "f")


def market_options(spec: ExperimentSpec) -> dict | None:
    """Spot: a one-time request, terminated on interruption; with ``spot.recover`` a persistent request, stopped
    on interruption, ended by the deadline's cancelling schedule (no ``valid_until``, see the module). None means
    on-demand."""
    if spec.market != "spot":
        return None
    spot: dict = {"instance_interruption_behavior": "terminate", "spot_instance_type": "one-time"}
    if recovers(spec):
        spot = {"instance_interruption_behavior": "stop", "spot_instance_type": "persistent"}
    if spec.max_spot_price_usd is not None:
        spot["max_price"] = plain_price(spec.max_spot_price_usd)
    return {"market_type": "spot", "spot_options": spot}


def replacement_options(*, from_family: bool) -> dict:
    """How the engine may replace the instance: only ever delete-before-replace, never for a newer family image."""
    return {"delete_before_replace": True, "ignore_changes": ["ami"] if from_family else None}


def delete_hooks(exp: ExperimentParts) -> pulumi.ResourceHookBinding | None:
    """A spot instance's ``before_delete`` hook: the program's one stable hook (``spot_hook.HOOK_NAME``), which
    every gpulease program registers whatever it holds, so an instance that leaves the program, is renamed or turns
    on-demand is still served by name; None on-demand (no request to cancel)."""
    return spot_hooks() if exp.spec.market == "spot" else None


class AwsInstance:
    """The compute part of the AWS cloud: the image and the instance."""

    def resolve_image(self, spec: ExperimentSpec, family_name: str, instance_type: str, ctx: AwsContext) -> str:
        """The newest AMI of the family (any AMI of a family runs every GPU type, so the type is not asked)."""
        family = AMI_FAMILIES[family_name]
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

    def retire_instance(self, exp: ExperimentParts) -> None:
        """Nothing to keep for a parked experiment: the program registers the delete hook by its stable name."""

    def create_instance(self, exp: ExperimentParts, launch: Launch) -> aws.ec2.Instance:
        """The deadline is its own schedule (``lifetime``), not a property of the instance."""
        return aws.ec2.Instance(
            f"{exp.name}-instance",
            ami=exp.placed.image_id,
            instance_type=exp.placed.instance_type.type,
            # Subnet, security group, public address; for a cluster node its placement group, address and EFA.
            **instance_network_args(exp, launch),
            key_name=launch.network.key_name,
            iam_instance_profile=cast(aws.iam.InstanceProfile, launch.identity).name,
            instance_market_options=market_options(exp.spec),
            # Shutting down from inside (watchdog, idle, deadline) must end billing, not leave a stopped instance. With
            # a persistent request the watchdog cancels the request first (terminating re-opens it, see lifetime).
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
                "volume_size": exp.spec.image.root_disk_gb,
                "encrypted": True,
                "delete_on_termination": True,
                "tags": exp.tags,
            },
            ebs_optimized=True,
            user_data_base64=launch.user_data,
            # A one-time spot instance cannot be stopped to change its user-data in place; replace it instead.
            user_data_replace_on_change=True,
            tags=exp.tags,
            # Terminating the instance before the data volume is deleted keeps destroy ordered: the attachment is
            # skipped, the instance goes, the disk is detached, then a non-retained disk can be deleted.
            # A spot instance's request is cancelled before any delete of the instance (spot_hook).
            opts=exp.opts(depends_on=launch.depends_on, hooks=delete_hooks(exp), **replacement_options(
                from_family=exp.spec.image_family is not None)),
        )
