"""The per-stack skeleton, written once for every cloud: the lookups (``prepare``), then the resources.

``prepare`` resolves each experiment's ``gpu`` section once and makes every lookup the stack needs, so that a bad
type, zone, image, tag or user-data size is reported like any other config mistake and nothing is registered.
``GpuExperimentStack`` then registers ``gpulease:<cloud>:GpuExperiment``: shared per stack the deadlines' latest,
the network, the checkpoint bucket (or a bootstrap bucket for the tools); per experiment its deadline record, data
disk, identity, tools object, instance, attachment and what needs the instance's id. Every cloud-specific step is
a call on the ``Cloud`` contract (``components/cloud.py``).
"""

from __future__ import annotations

import dataclasses

import pulumi

from components.cloud import Cloud
from components.cluster import (
    cluster_outputs,
    cluster_settings,
    node_checkpoint_uri,
    node_launch,
    node_ranks,
)
from components.deadline import record_deadline
from components.image_bake import (
    BAKED_IMAGE_OUTPUT,
    bake_gate_ids,
    baked_folder,
    baked_output,
    describe_source,
    image_from_stack,
    image_name,
    image_tags,
    ready_folder,
)
from components.naming import bootstrap_bucket_name, bucket_name
from components.outputs import checkpoint_prefix, experiment_outputs, parked_outputs
from components.phase import has_instance, parked_disk_tags, prep_instance_type
from components.plan import (
    Bucket,
    BuiltNode,
    ExperimentParts,
    Launch,
    Network,
    PlacedExperiment,
    StackPlan,
    security_group_description,
    ssh_sources,
)
from components.spec.experiment import ExperimentSpec
from components.spec.load import SpecError, StackSpec
from components.tagging import experiment_tags, retained
from components.userdata.experiment import check_user_data, experiment_user_data
from components.userdata.tools import tools_bundle, tools_key
from gpulease.core import vocabulary as v
from gpulease.core.catalog import CatalogError, CatalogFileError, InstanceType
from gpulease.core.catalog.cpu import CpuInstanceType
from gpulease.core.cost.spot import quote
from gpulease.core.sizing.resolve import resolve_instance_type


def stack_region(spec: StackSpec) -> str:
    """The spec's region, else the provider's region config; one of them is required."""
    region = spec.base.region or pulumi.Config(spec.cloud).get("region")
    if not region:
        field = "gpulease:sweep.base.region" if spec.kind == "sweep" else "gpulease:experiment.region"
        raise SpecError(spec.stack, [(field, f"no region: set it here or as {spec.cloud}:region in the stack config")])
    return region


def resolve_instance_types(spec: StackSpec, region: str) -> dict[str, InstanceType]:
    """Every experiment's GPU through the catalog, once: a type that does not exist or a workload that fits
    nowhere is reported like any other config mistake (stack, field path, what is accepted)."""
    types: dict[str, InstanceType] = {}
    problems: list[tuple[str, str]] = []
    for i, exp in enumerate(spec.experiments):
        prefix = "gpulease:experiment" if spec.kind == "experiment" else f"gpulease:sweep.runs[{i}]"
        try:
            types[exp.name] = resolve_instance_type(spec.cloud, region, exp.gpu, nodes=exp.nodes)
        except CatalogFileError:
            raise  # the file's own problem (file, line, row), not this field's
        except CatalogError as exc:
            problems.append((f"{prefix}.{exc.field or 'gpu'}", exc.detail))
    if problems:
        raise SpecError(spec.stack, problems)
    return types


def stack_name(spec: StackSpec) -> str:
    """The component's name: the sweep's or the experiment's."""
    return spec.sweep_name or spec.base.name


def prepare(
    cloud: Cloud, spec: StackSpec, region: str, types: dict[str, InstanceType],
    provider: pulumi.ProviderResource | None = None,
) -> StackPlan:
    """Every lookup the stack needs (account, VPC, zone and subnet, image, existing disks) and the checks of what
    they decide (tags, user-data size), done before the first resource is registered."""
    ctx = cloud.lookup_context(region, provider)
    vpc_id = cloud.resolve_network(spec.base, ctx)
    base, name = spec.base, stack_name(spec)
    bucket = base.checkpoints.bucket or bucket_name(base.project, name)
    # The instance-side tools go in the checkpoint bucket the stack creates, else in a bootstrap bucket of its own
    # (a stack without checkpoints, or one using a bucket it does not manage).
    own = base.checkpoints.enabled and not base.checkpoints.bucket
    tools_bucket = bucket if own else bootstrap_bucket_name(base.project, name)
    placed: dict[str, PlacedExperiment] = {}
    prep_types = prep_instance_type(spec, region)
    for exp in spec.experiments:
        itype = types[exp.name]
        existing = exp.data_disk.existing_volume_id
        required_zone = cloud.existing_disk_zone(existing, ctx) if existing else None
        placement = cloud.place(exp, itype.type, vpc_id, ctx, required_zone)
        run_type: InstanceType | CpuInstanceType = itype
        if exp.name in prep_types:
            # The GPU type decides the zone in every phase (the data disk never moves); the CPU type must be there.
            run_type = prep_types[exp.name]
            placement = cloud.place(exp, run_type.type, vpc_id, ctx, placement.zone)
        family = exp.image_family
        if not has_instance(exp) or exp.image.from_stack:
            image_id = ""  # no instance, or the image another stack baked (a stack reference, read in the stack)
        else:
            image_id = exp.image.id or cloud.resolve_image(exp, str(family), run_type.type, ctx)
        # A cluster's nodes: their addresses in the placement's subnet and their fabric (components/cluster.py).
        cluster = cloud.plan_cluster(exp, itype, placement, ctx) if exp.nodes > 1 else None
        placed[exp.name] = PlacedExperiment(run_type, placement, image_id, cluster)  # type: ignore[arg-type]
        prefix = checkpoint_prefix(spec, exp)
        uri = cloud.bucket_uri(bucket, prefix) if exp.checkpoints.enabled else v.NO_CHECKPOINTS
        cloud.check_tags(exp, spec.stack, uri)
        if not has_instance(exp):
            continue
        # The user-data's size, before anything is registered (the disk id and bucket names have fixed lengths); a
        # cluster's last node has the longest (its checkpoint URI and the cluster settings).
        last = node_ranks(placed[exp.name])[-1]
        check_user_data(exp, cloud=cloud.name, region=region, stack=spec.stack, checkpoint_uri=node_checkpoint_uri(uri, last),
                        tools_bucket=tools_bucket, tools_prefix=prefix, nvidia_driver=exp.nvidia_driver,
                        cluster=None if last is None else cluster_settings(exp, placed[exp.name], last, stack=spec.stack,
                                                                          shared_uri=uri))
    cloud.check_placements(spec, placed)
    return StackPlan(context=ctx, bucket=bucket, tools_bucket=tools_bucket, experiments=placed)


def max_hourly_tag(exp: ExperimentSpec, itype: InstanceType | CpuInstanceType, region: str,
                   nodes: int = 1) -> dict[str, str]:
    """The experiment's worst-case hourly price as a tag on its instance (the spot cap, else on-demand; the cost
    model's rule), for the watchdog's spend estimate; none when the catalog has no price there. The preparation
    phase's CPU instance is on demand. A cluster node carries the whole cluster's price: every node's estimate
    then measures the experiment's spend against the budget, as a single instance's does."""
    spot = exp.market == "spot" and not isinstance(itype, CpuInstanceType)
    found = quote(itype, region, spot=spot, cap=exp.max_spot_price_usd, zone=None)  # type: ignore[arg-type]
    return {v.TAG_MAX_HOURLY_USD: f"{found.worst_usd * nodes:.4g}"} if found else {}


def _latest(values: list[pulumi.Output[str]]) -> pulumi.Output[str]:
    return pulumi.Output.all(*values).apply(lambda items: max(items))


class GpuExperimentStack(pulumi.ComponentResource):
    """``gpulease:<cloud>:GpuExperiment``: every resource of one stack (an experiment, or a sweep's runs).

    Shared per stack: the network (security group, key pair, and where the cloud needs them a VPC and subnets),
    the checkpoint bucket. Per experiment: deadline, data disk, identity, tools object, instance, attachment and
    the cloud's deadline or self-release. With an explicit provider every child inherits it through parent=self."""

    def __init__(
        self,
        cloud: Cloud,
        spec: StackSpec,
        region: str,
        plan: StackPlan,
        provider: pulumi.ProviderResource | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ):
        name = stack_name(spec)
        opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(providers=[provider] if provider else None))
        super().__init__(f"gpulease:{cloud.name}:GpuExperiment", name, None, opts)
        base, stack, ctx = spec.base, pulumi.get_stack(), plan.context

        def tagged(tags: dict, what: str) -> dict:
            return cloud.tagged(tags, stack=stack, what=what)

        deadlines = {e.name: record_deadline(e, self) for e in spec.experiments}
        with_checkpoints = base.checkpoints.enabled
        shared_uri = cloud.bucket_uri(plan.bucket, base.checkpoints.prefix) if with_checkpoints else v.NO_CHECKPOINTS
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
        placements = {exp: p.placement for exp, p in plan.experiments.items()}
        vpc_id, subnets = cloud.create_network(name, placements, shared_tags, self)
        ssh = base.ssh
        security_group = cloud.create_security_group(
            name, security_group_description(name, ssh), ssh_sources(name, ssh), vpc_id, shared_tags, self
        )
        # A key pair only with SSH: the user's existing one by name, else one made from the public key (the spec
        # holds exactly one of them in ssh mode).
        key_name: pulumi.Input[str] | None = None
        if ssh.mode == "ssh":
            key_name = ssh.key_name or cloud.create_key_pair(name, str(ssh.public_key), shared_tags, self)
        network = Network(security_group=security_group, key_name=key_name, subnets=subnets)
        if any(p.cluster is not None for p in plan.experiments.values()):
            # The nodes of a cluster talk to each other on every port (NCCL, EFA): the group admits its own members.
            cloud.allow_cluster_traffic(name, security_group, shared_tags, self)
        bucket: Bucket | None = None
        if with_checkpoints:
            bucket_tags = tagged(retained(shared_tags, base.checkpoints.retain), "the checkpoint bucket")
            # An existing bucket is used as it is: gpulease never changes a bucket it does not manage.
            bucket = (
                Bucket(name=plan.bucket, arn=cloud.bucket_arn(plan.bucket, ctx)) if base.checkpoints.bucket
                else cloud.create_bucket(name, plan.bucket, base, bucket_tags, ctx, self)
            )
        # The stack's budget with its alerts, where the cloud has a budget service (capabilities: budget-alerts).
        self.budget = cloud.create_budget_alert(name, base, stack, shared_tags, self)
        # The instance-side tools travel as an object (see components/userdata): in the checkpoint bucket the stack
        # creates, else in a bootstrap bucket of its own.
        own = bucket is not None and bucket.created
        tools_bucket = bucket if own else cloud.create_bootstrap_bucket(
            name, plan.tools_bucket, tagged(retained(shared_tags, False), "the bootstrap bucket"), ctx, self
        )

        self.experiments: dict[str, dict[str, pulumi.Input]] = {}
        self.baked: pulumi.Output | None = None
        """The ``bakedImage`` output (``components/image_bake.py``) of the first experiment with ``image.bake``."""
        self.image_sources: dict[str, pulumi.Output] = {}
        """Per experiment using ``image.fromStack``: that stack's ``bakedImage`` output."""
        for exp in spec.experiments:
            placed = plan.experiments[exp.name]
            prefix = checkpoint_prefix(spec, exp)
            uri = cloud.bucket_uri(bucket.name, prefix) if bucket else v.NO_CHECKPOINTS
            deadline = deadlines[exp.name]
            tags = tagged(experiment_tags(exp, stack=stack, expires_at=deadline, checkpoint_uri=uri), f"experiment {exp.name!r}")
            parts = ExperimentParts(spec=exp, placed=placed, prefix=prefix, tags=tags, deadline=deadline, ctx=ctx, parent=self)

            if not has_instance(exp):
                # parked: no instance, nothing that serves one; the disk and the bucket stay. The instance's delete
                # hooks stay registered (a cloud that has them): the engine runs them by name on the instance it deletes.
                getattr(cloud, "retire_instance", lambda _parts: None)(parts)
                disk = cloud.create_data_disk(parts, tagged(parked_disk_tags(tags), "the data disk"))
                self.experiments[exp.name] = parked_outputs(exp, data_volume_id=disk.id,
                                                            availability_zone=placed.placement.zone,
                                                            checkpoint_uri=uri, deadline=deadline)
                continue
            # One node, or a cluster's nodes (components/cluster.py): each with its own disk, identity, user-data and
            # instance; the tools object is one per experiment, and what needs every instance comes after them all.
            if placed.cluster is not None and exp.image.from_stack:
                self._image_from_stack(exp, parts)  # before the nodes copy the placement
            group = cloud.create_cluster_group(parts) if placed.cluster else None
            key = tools_key(prefix)
            upload: pulumi.Resource | None = None
            built: list[BuiltNode] = []
            disks = []
            for rank in node_ranks(placed):
                node = parts if rank is None or placed.cluster is None else parts.for_node(rank, placed.cluster.nodes)
                disk = cloud.create_data_disk(node, tagged(retained(node.tags, exp.data_disk.retain), "the data disk"))
                identity = cloud.create_identity(node, bucket)
                cloud.allow_staging(node, identity)
                if rank is None and exp.image.from_stack:
                    self._image_from_stack(exp, parts)
                user_data = experiment_user_data(
                    exp, cloud=cloud.name, region=region, stack=stack, checkpoint_uri=node_checkpoint_uri(uri, rank),
                    data_disk_id=disk.id, tools_bucket=tools_bucket.name, tools_prefix=prefix,
                    nvidia_driver=exp.nvidia_driver,
                    cluster=None if rank is None else cluster_settings(exp, placed, rank, stack=stack, shared_uri=uri),
                )
                # Outside the checkpoint prefix (tools_key), so every role gets a grant to read that one object.
                upload = upload or cloud.upload_tools(parts, tools_bucket, key, tools_bundle())
                tools = [upload, cloud.allow_tools_read(node, identity, tools_bucket, key)]
                # The instance alone also carries its worst-case hourly price (the watchdog's spend estimate reads it).
                nodes = placed.cluster.nodes if placed.cluster else 1
                priced = tagged({**node.tags, **max_hourly_tag(exp, placed.instance_type, region, nodes)},
                                f"experiment {exp.name!r}")
                inst = cloud.create_instance(dataclasses.replace(node, tags=priced), Launch(
                    network=network,
                    identity=identity,
                    user_data=user_data,
                    # The data disk first (ordered destroy), the bucket fully configured before any checkpoint, and the
                    # tools object and the right to read it before the instance boots and fetches them.
                    depends_on=[
                        *([disk.resource] if disk.resource else []),
                        *(bucket.settings if bucket else []),
                        *tools,
                    ],
                    node=node_launch(placed, rank, group),
                ))
                cloud.attach_data_disk(node, disk, inst)
                built.append(BuiltNode(node, inst, identity))
                disks.append(disk)
            if placed.cluster is None:
                cloud.after_instance(parts, built[0].instance, built[0].identity)
            else:
                cloud.after_nodes(parts, built)
            inst = built[0].instance
            if exp.image.bake and bucket is not None and self.baked is None:  # a single instance (the spec says so)
                # Bake once: the readiness gate guards the update that creates the image, never a later one.
                ready = bake_gate_ids(cloud.ready_instances(parts, bucket.name, inst, ready_folder(prefix)),
                                      cloud.ready_instances(parts, bucket.name, inst, baked_folder(prefix, pulumi.get_stack())), exp)
                image_labels = tagged(image_tags(exp, tags), "the baked image")
                baked = cloud.bake_image(parts, inst, ready, cloud.bucket_uri(bucket.name, ready_folder(prefix)), image_name(stack, exp), image_labels,
                                         bucket.name)
                self.baked = baked_output(baked, stack, exp)
            outputs = experiment_outputs(
                exp,
                instance_id=inst.id,
                public_ip=built[0].public_ip or inst.public_ip,
                instance_type=placed.instance_type.type,
                data_volume_id=disks[0].id,
                availability_zone=placed.placement.zone,
                checkpoint_uri=uri,
                deadline=deadline,
                session_command=lambda iid: cloud.session_command(iid, region),
            )
            if placed.cluster is not None:
                outputs.update(cluster_outputs(placed, built))
            if exp.name in self.image_sources:
                outputs["imageFrom"] = self.image_sources[exp.name].apply(describe_source)
            self.experiments[exp.name] = outputs
        self.bucket = bucket.name if bucket else None
        self.register_outputs({"experiments": self.experiments, "bucket": self.bucket,
                               **({BAKED_IMAGE_OUTPUT: self.baked} if self.baked is not None else {})})

    def _image_from_stack(self, exp: ExperimentSpec, parts: ExperimentParts) -> None:
        """``image.fromStack``: the image another stack baked, read through a stack reference, on every node."""
        placed = parts.placed
        image_id, self.image_sources[exp.name] = image_from_stack(str(exp.image.from_stack), self)
        parts.placed = PlacedExperiment(placed.instance_type, placed.placement, image_id, placed.cluster)  # type: ignore[arg-type]
