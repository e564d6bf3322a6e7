"""``gpulease:aws:GpuExperiment``: every resource of one stack (an experiment, or a sweep's runs) on AWS."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from components import bootstrap
from components import vocabulary as v
from components.aws import identity, instance, lifetime, network, storage
from components.aws.context import AwsContext, lookup_context
from components.catalog import InstanceType, resolve_instance_type
from components.deadline import record_deadline
from components.experiment_outputs import checkpoint_prefix, experiment_outputs
from components.naming import bucket_name
from components.spec import StackSpec
from components.tagging import experiment_tags, retained
from components.userdata import check_user_data, experiment_user_data

Placed = tuple[InstanceType, network.Placement, str]


@dataclass(frozen=True)
class AwsPlan:
    """What the lookups found: the account, the VPC, and per experiment its type, placement and image."""

    ctx: AwsContext
    vpc_id: str
    placed: dict[str, Placed]


def prepare(spec: StackSpec, region: str, provider: aws.Provider | None = None) -> AwsPlan:
    """Every lookup the stack needs (account, catalog, VPC, zone and subnet, image, existing disks), done before
    the first resource is registered so that a bad type or zone creates nothing."""
    ctx = lookup_context(region, provider)
    vpc_id = network.resolve_vpc(spec.base, ctx)
    placed: dict[str, Placed] = {}
    for exp in spec.experiments:
        itype = resolve_instance_type("aws", region, exp.gpu)
        required_az = (
            storage.existing_volume_zone(exp.data_disk.existing_volume_id, ctx) if exp.data_disk.existing_volume_id else None
        )
        placed[exp.name] = (itype, network.place(exp, itype.type, vpc_id, ctx, required_az), instance.resolve_image(exp, ctx))
        # The user-data's size, before anything is registered (the disk id and bucket names have fixed lengths).
        uri = storage.bucket_uri(_bucket_id(spec), checkpoint_prefix(spec, exp)) if exp.checkpoints.enabled else v.NO_CHECKPOINTS
        check_user_data(exp, cloud="aws", region=region, stack=pulumi.get_stack(), checkpoint_uri=uri,
                        tools_bucket=_tools_bucket_id(spec), tools_prefix=checkpoint_prefix(spec, exp),
                        nvidia_driver=instance.nvidia_driver(exp))
    return AwsPlan(ctx, vpc_id, placed)


def _bucket_id(spec: StackSpec) -> str:
    return spec.base.checkpoints.bucket or bucket_name(spec.base.project, spec.sweep_name or spec.base.name)


def _tools_bucket_id(spec: StackSpec) -> str:
    """The instance-side tools go in the checkpoint bucket the stack creates, else in a bootstrap bucket of its own
    (a stack without checkpoints, or one using a bucket it does not manage)."""
    cp = spec.base.checkpoints
    if cp.enabled and not cp.bucket:
        return _bucket_id(spec)
    return storage.bootstrap_bucket_name(spec.base.project, spec.sweep_name or spec.base.name)


def _latest(values: list[pulumi.Output[str]]) -> pulumi.Output[str]:
    return pulumi.Output.all(*values).apply(lambda items: max(items))


class AwsGpuExperiment(pulumi.ComponentResource):
    """Shared per stack: security group, key pair, checkpoint bucket. Per experiment: deadline, data volume,
    instance role, instance, attachment, termination schedule."""

    def __init__(
        self,
        name: str,
        spec: StackSpec,
        region: str,
        provider: aws.Provider | None = None,
        opts: pulumi.ResourceOptions | None = None,
        plan: AwsPlan | None = None,
    ):
        # With an explicit provider (the spec names a region other than aws:region) every child inherits it
        # through parent=self.
        opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(providers=[provider] if provider else None))
        super().__init__("gpulease:aws:GpuExperiment", name, None, opts)
        base = spec.base
        stack = pulumi.get_stack()
        plan = plan or prepare(spec, region, provider)
        ctx, vpc_id = plan.ctx, plan.vpc_id

        deadlines = {e.name: record_deadline(e, self) for e in spec.experiments}
        bucket_id = base.checkpoints.bucket or bucket_name(base.project, name)
        with_checkpoints = base.checkpoints.enabled
        shared_uri = storage.bucket_uri(bucket_id, base.checkpoints.prefix) if with_checkpoints else v.NO_CHECKPOINTS
        shared_tags = experiment_tags(
            base,
            stack=stack,
            expires_at=_latest(list(deadlines.values())),
            checkpoint_uri=shared_uri,
            experiment=name,
            max_runtime_hours=max(e.max_runtime_hours for e in spec.experiments),
        )

        sg = network.create_security_group(name, base.ssh, vpc_id, shared_tags, self)
        key_name = network.create_key_pair(name, base.ssh, shared_tags, self)
        bucket = (
            storage.create_bucket(
                name, bucket_id, base, retained(shared_tags, base.checkpoints.retain), ctx, self
            )
            if with_checkpoints
            else None
        )

        # The instance-side tools travel as an object (see components/bootstrap): in the checkpoint bucket the stack
        # creates, else in a bootstrap bucket of its own.
        own = bucket is not None and bool(bucket.settings)
        tools_bucket = bucket if own else storage.create_bootstrap_bucket(
            name, _tools_bucket_id(spec), retained(shared_tags, False), ctx, self
        )

        self.experiments: dict[str, dict[str, pulumi.Input]] = {}
        for exp in spec.experiments:
            itype, placement, image_id = plan.placed[exp.name]
            prefix = checkpoint_prefix(spec, exp)
            uri = storage.bucket_uri(bucket.name, prefix) if bucket else v.NO_CHECKPOINTS
            deadline = deadlines[exp.name]
            tags = experiment_tags(exp, stack=stack, expires_at=deadline, checkpoint_uri=uri)

            volume = storage.create_data_volume(
                exp, placement.availability_zone, retained(tags, exp.data_disk.retain), self
            )
            profile = identity.create_instance_profile(
                exp.name,
                bucket_arn=bucket.arn if bucket else None,
                prefix=prefix if bucket else None,
                ssm=exp.ssh.mode == "ssm",
                tags=tags,
                ctx=ctx,
                parent=self,
            )
            user_data = experiment_user_data(
                exp, cloud="aws", region=region, stack=stack, checkpoint_uri=uri, data_disk_id=volume.id,
                tools_bucket=tools_bucket.name, tools_prefix=prefix, nvidia_driver=instance.nvidia_driver(exp),
            )
            # Under the experiment's own prefix, which its role may read already; elsewhere it gets that one object.
            key = bootstrap.tools_key(prefix)
            tools = [storage.upload_tools(exp.name, tools_bucket, key, bootstrap.tools_bundle(), tags, self)]
            if not own:
                tools.append(storage.allow_tools_read(exp.name, profile, tools_bucket, key, self))
            inst = instance.create_instance(
                exp,
                instance_type=itype.type,
                image_id=image_id,
                from_family=exp.image.id is None,
                subnet_id=placement.subnet_id,
                security_group=sg,
                key_name=key_name,
                instance_profile=profile,
                user_data=user_data,
                tags=tags,
                # The data volume first (ordered destroy), the bucket fully configured before any checkpoint, and
                # the tools object and the right to read it before the instance boots and fetches them.
                depends_on=[
                    *([volume.resource] if volume.resource else []),
                    *(bucket.settings if bucket else []),
                    *tools,
                ],
                parent=self,
            )
            storage.attach_data_volume(exp, volume, inst, self)
            lifetime.create_termination_schedule(
                exp.name, instance=inst, deadline=deadline, tags=tags, ctx=ctx, parent=self
            )
            self.experiments[exp.name] = experiment_outputs(
                exp,
                instance_id=inst.id,
                public_ip=inst.public_ip,
                instance_type=itype.type,
                data_volume_id=volume.id,
                availability_zone=placement.availability_zone,
                checkpoint_uri=uri,
                deadline=deadline,
                session_command=lambda iid: f"aws ssm start-session --target {iid} --region {region}",
            )
        self.bucket = bucket.name if bucket else None
        self.register_outputs({"experiments": self.experiments, "bucket": self.bucket})
