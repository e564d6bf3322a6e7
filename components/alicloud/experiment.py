"""``gpulease:alicloud:GpuExperiment``: every resource of one stack (an experiment, or a sweep's runs) on Alibaba Cloud."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_alicloud as alicloud

from components import bootstrap
from components import vocabulary as v
from components.alicloud import identity, instance, lifetime, network, storage
from components.alicloud.context import AlicloudContext, lookup_context
from components.alicloud.tags import encode_tags
from components.catalog import InstanceType, resolve_instance_type
from components.deadline import record_deadline
from components.experiment_outputs import checkpoint_prefix, experiment_outputs
from components.naming import bucket_name
from components.spec import StackSpec
from components.tagging import experiment_tags, retained
from components.userdata import check_user_data, experiment_user_data

# A stand-in for the recorded deadline while checking tags before anything is registered (same length).
_DEADLINE_PLACEHOLDER = "2000-01-01T00:00:00Z"


@dataclass(frozen=True)
class Placed:
    instance_type: InstanceType
    placement: network.Placement
    image_id: str


@dataclass(frozen=True)
class Plan:
    """What the lookups decided, before any resource is registered."""

    ctx: AlicloudContext
    bucket: str
    experiments: dict[str, Placed]


def prepare(spec: StackSpec, region: str, provider: alicloud.Provider | None = None) -> Plan:
    """Every lookup the stack needs (account, catalog, zones, vSwitches, images, existing disks) and the tag
    check, done before the first resource is registered so that a bad type, zone or tag creates nothing."""
    ctx = lookup_context(region, provider)
    base = spec.base
    name = spec.sweep_name or base.name
    bucket = base.checkpoints.bucket or bucket_name(base.project, name)
    placed: dict[str, Placed] = {}
    for exp in spec.experiments:
        itype = resolve_instance_type("alicloud", region, exp.gpu)
        required_zone = (
            storage.existing_disk_zone(exp.data_disk.existing_volume_id, ctx) if exp.data_disk.existing_volume_id else None
        )
        placement = network.place(exp, itype.type, ctx, required_zone)
        placed[exp.name] = Placed(itype, placement, instance.resolve_image(exp, itype.type, ctx))
        uri = storage.bucket_uri(bucket, checkpoint_prefix(spec, exp)) if exp.checkpoints.enabled else v.NO_CHECKPOINTS
        probe = experiment_tags(exp, stack=spec.stack, expires_at=_DEADLINE_PLACEHOLDER, checkpoint_uri=uri, retain=True)
        encode_tags(probe, stack=spec.stack, resource=f"experiment {exp.name!r}")
        check_user_data(exp, cloud="alicloud", region=region, stack=spec.stack, checkpoint_uri=uri,
                        tools_bucket=_tools_bucket_id(spec, bucket), tools_prefix=checkpoint_prefix(spec, exp),
                        nvidia_driver=instance.nvidia_driver(exp))
    vpcs = {p.placement.vpc_id for p in placed.values()}
    if len(vpcs) > 1:
        raise network.PlacementError(
            f"stack '{spec.stack}': the runs landed in different VPCs ({', '.join(sorted(str(x) for x in vpcs))}); "
            "they share one security group, so give network.vpcId or network.subnetId in base"
        )
    return Plan(ctx=ctx, bucket=bucket, experiments=placed)


def _tools_bucket_id(spec: StackSpec, bucket: str) -> str:
    """The instance-side tools go in the checkpoint bucket the stack creates, else in a bootstrap bucket of its own
    (a stack without checkpoints, or one using a bucket it does not manage)."""
    cp = spec.base.checkpoints
    return bucket if cp.enabled and not cp.bucket else storage.bootstrap_bucket_name(spec.base.project, spec.sweep_name or spec.base.name)


def _latest(values: list[pulumi.Output[str]]) -> pulumi.Output[str]:
    return pulumi.Output.all(*values).apply(lambda items: max(items))


class AlicloudGpuExperiment(pulumi.ComponentResource):
    """Shared per stack: VPC and vSwitches (unless given), security group, key pair, checkpoint bucket.
    Per experiment: deadline, data disk, RAM role, instance (released at the deadline), disk attachment."""

    def __init__(
        self,
        name: str,
        spec: StackSpec,
        region: str,
        provider: alicloud.Provider | None = None,
        opts: pulumi.ResourceOptions | None = None,
        plan: Plan | None = None,
    ):
        plan = plan or prepare(spec, region, provider)
        # With an explicit provider (the spec names a region other than alicloud:region) every child inherits
        # it through parent=self.
        opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(providers=[provider] if provider else None))
        super().__init__("gpulease:alicloud:GpuExperiment", name, None, opts)
        base = spec.base
        stack = pulumi.get_stack()
        ctx = plan.ctx

        def tagged(tags: dict, resource: str) -> dict:
            return encode_tags(tags, stack=stack, resource=resource)

        deadlines = {e.name: record_deadline(e, self) for e in spec.experiments}
        with_checkpoints = base.checkpoints.enabled
        shared_uri = storage.bucket_uri(plan.bucket, base.checkpoints.prefix) if with_checkpoints else v.NO_CHECKPOINTS
        shared_tags = tagged(
            experiment_tags(
                base,
                stack=stack,
                expires_at=_latest(list(deadlines.values())),
                checkpoint_uri=shared_uri,
                experiment=name,
                max_runtime_hours=max(e.max_runtime_hours for e in spec.experiments),
            ),
            f"stack {name!r}",
        )

        given_vpc = next(iter(plan.experiments.values())).placement.vpc_id
        vpc_id: pulumi.Input[str] = given_vpc or network.create_vpc(name, shared_tags, self).id
        vswitches: dict[str, pulumi.Input[str]] = {}
        for placed in plan.experiments.values():
            p = placed.placement
            if p.vswitch_id:
                vswitches[p.zone_id] = p.vswitch_id
            elif p.zone_id not in vswitches:
                vswitches[p.zone_id] = network.create_vswitch(name, p.zone_id, vpc_id, shared_tags, self).id

        sg = network.create_security_group(name, base.ssh, vpc_id, shared_tags, self)
        key_name = network.create_key_pair(name, base.ssh, shared_tags, self)
        bucket = (
            storage.create_bucket(
                name,
                plan.bucket,
                base,
                tagged(retained(shared_tags, base.checkpoints.retain), "the checkpoint bucket"),
                ctx,
                self,
            )
            if with_checkpoints
            else None
        )

        # The instance-side tools travel as an object (see components/bootstrap): in the checkpoint bucket the stack
        # creates, else in a bootstrap bucket of its own.
        own = bucket is not None and bool(bucket.settings)
        tools_bucket = bucket if own else storage.create_bootstrap_bucket(
            name,
            _tools_bucket_id(spec, plan.bucket),
            tagged(retained(shared_tags, False), "the bootstrap bucket"),
            ctx,
            self,
        )

        self.experiments: dict[str, dict[str, pulumi.Input]] = {}
        for exp in spec.experiments:
            placed = plan.experiments[exp.name]
            zone = placed.placement.zone_id
            prefix = checkpoint_prefix(spec, exp)
            uri = storage.bucket_uri(bucket.name, prefix) if bucket else v.NO_CHECKPOINTS
            deadline = deadlines[exp.name]
            tags = tagged(experiment_tags(exp, stack=stack, expires_at=deadline, checkpoint_uri=uri), f"experiment {exp.name!r}")

            disk = storage.create_data_disk(
                exp, zone, tagged(retained(tags, exp.data_disk.retain), "the data disk"), self
            )
            # Every instance gets a role: its checkpoint prefix when there is a bucket, and (after it exists) the
            # right to release itself, since a stop from inside keeps a pay-as-you-go instance billing.
            role = identity.create_instance_role(
                exp.name, bucket_arn=bucket.arn if bucket else None, prefix=prefix, tags=tags, parent=self
            )
            user_data = experiment_user_data(
                exp, cloud="alicloud", region=region, stack=stack, checkpoint_uri=uri, data_disk_id=disk.id,
                tools_bucket=tools_bucket.name, tools_prefix=prefix, nvidia_driver=instance.nvidia_driver(exp),
            )
            # Under the experiment's own prefix, which its role may read already; elsewhere it gets that one object.
            key = bootstrap.tools_key(prefix)
            tools = [storage.upload_tools(exp.name, tools_bucket, key, bootstrap.tools_bundle(), self)]
            if not own:
                tools.append(identity.allow_tools_read(
                    exp.name, role, ctx.oss_arn(tools_bucket.name, key), tags=tags, parent=self
                ))
            inst = instance.create_instance(
                exp,
                instance_type=placed.instance_type.type,
                image_id=placed.image_id,
                from_family=exp.image.id is None,
                vswitch_id=vswitches[zone],
                security_group=sg,
                key_name=key_name,
                auto_release_time=lifetime.auto_release_time(exp.name, deadline),
                user_data=user_data,
                tags=tags,
                # The data disk first (ordered destroy), the bucket fully configured before any checkpoint, and
                # the tools object before the instance boots and fetches it.
                depends_on=[
                    *([disk.resource] if disk.resource else []),
                    *(bucket.settings if bucket else []),
                    *tools,
                ],
                parent=self,
            )
            storage.attach_data_disk(exp, disk, inst, self)
            identity.attach_instance_role(exp.name, role, inst, self)
            identity.allow_self_release(exp.name, role, inst, region=ctx.region, account_id=ctx.account_id, tags=tags,
                                        parent=self)
            self.experiments[exp.name] = experiment_outputs(
                exp,
                instance_id=inst.id,
                public_ip=inst.public_ip,
                instance_type=placed.instance_type.type,
                data_volume_id=disk.id,
                availability_zone=zone,
                checkpoint_uri=uri,
                deadline=deadline,
                session_command=lambda iid: f"ali-instance-cli session --instance {iid}",
            )
        self.bucket = bucket.name if bucket else None
        self.register_outputs({"experiments": self.experiments, "bucket": self.bucket})
