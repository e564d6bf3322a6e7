"""Personal images: bake one from a stack's instance once its readiness passed, and use it in later stacks.

**Whose readiness passed.** A Pulumi program is declarative and runs before (and without) the instance's own
checks, so "the instance is ready" has to be a fact the program can read. The bootstrap publishes one: when every
readiness check passed, it writes ``_gpulease/<checkpoint prefix>ready/<instance id>.json`` to the stack's bucket
(``instance/instance_setup.py``, ``ready_record_command``). Baking is therefore a second ``pulumi up``:

1. ``pulumi up`` (``image.bake: false``): the instance boots, stages its data and checks itself; ``ready.json``
   says READY;
2. set ``image.bake: true`` and ``pulumi up`` again: the program lists the ready records (a data source, read at
   plan time) and declares the image only from the instance whose id has one. The live instance's id is an
   output, so the check runs inside it: an instance without a record (not ready yet, or a new instance the same
   update creates) fails the update with a message naming the instance and the record it lacks, and no image is
   created (its inputs never resolve).
3. Later updates keep the image: once it exists the program writes ``_gpulease/<prefix>baked/<stack>/<experiment>.json``,
   and an update that lists it skips the readiness gate (an instance replaced later, by a pinned image or new
   user-data, has no ready record yet, and ``image.bake: true`` left set must not fail its ``pulumi up``). The
   record goes with the stack (destroy) and with ``image.bake: false``, so baking again checks readiness again.

The image holds the system disk only (a snapshot of it, then an image registered from that snapshot): an image
made from the whole instance would also copy the data disk. It is encrypted (a snapshot of an encrypted disk is
encrypted), tagged as managed with ``gpulease:retain-until`` (now + ``image.retainDays``) and retained on destroy
(the reaper deletes it, and its snapshot, after that date). Its id, creation time and retention end are the stack
output ``bakedImage``. Later stacks use it with ``image.fromStack: <stack>`` (a ``pulumi.StackReference`` to that
output) or ``image.id``.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pulumi

from gpulease.core import bake_timeouts, clock
from gpulease.core import vocabulary as v

if TYPE_CHECKING:  # annotations only: the clouds import this module and the spec imports the clouds' rules
    from components.spec.experiment import ExperimentSpec

RECORDS_ROOT = "_gpulease/"
"""The bucket-root folder of the kit's records (``record_folder``): outside every checkpoint prefix, so the
checkpoint lifecycle rule (``checkpoints.lifecycle.keepDays``, filtered on the prefix) never expires them. A
checkpoint prefix may not start with it (``components/spec/sections.py``)."""
READY_FOLDER = "ready/"
"""One object per instance whose readiness passed, named by its id (``record_folder(prefix, READY_FOLDER)``)."""
CONTROL_FOLDER = "control/"
"""What the instance reports to the operator (``ready.json``, ``verify.json``, ``heartbeat.json``, ``manifest.json``):
written to the ``control_uri`` setting (``record_uri(checkpoint_uri, CONTROL_FOLDER)``), read by ``gpulease status``
and ``up``'s readiness wait through ``control_folder``."""
BAKED_FOLDER = "baked/"
"""``<stack>/<experiment>.json`` once this stack baked its image (the image and the instance it was made from),
written by the program after the image; later updates read it and keep the image without checking readiness
again (``baked_key``)."""
ALREADY_BAKED = "<already baked>"
"""In the ids ``gate`` reads: the stack's image exists, so whichever instance runs now need not be ready."""
BAKED_IMAGE_OUTPUT = "bakedImage"
"""The stack output a baking stack exports and ``image.fromStack`` reads: {id, stack, experiment, createdAt,
retainUntil}."""


class NotReadyError(pulumi.RunError):
    """The instance to bake has no ready record: the update fails before the image is created."""


def ready_ids(keys: list[str] | None) -> list[str]:
    """Instance ids of the ready records listed under ``READY_FOLDER`` (object keys, any prefix)."""
    return sorted({k.rsplit("/", 1)[-1].removesuffix(".json") for k in keys or [] if not k.endswith("/")})


def gate(instance_id: str, ready: list[str], record_uri: str) -> str:
    """``instance_id`` when it has a ready record (or the image was already baked), else ``NotReadyError`` naming
    the record it lacks."""
    if instance_id in ready or ALREADY_BAKED in ready:
        return instance_id
    raise NotReadyError(
        f"image.bake: instance {instance_id} has not passed readiness: no ready record {record_uri}{instance_id}.json "
        f"(records found: {', '.join(ready) or 'none'}). Wait until its bootstrap reports READY (logs/ready.json), "
        "then run pulumi up again; nothing was baked."
    )


def snapshot_create_timeout(root_disk_gb: int) -> str:
    """How long ``pulumi up`` waits for the system disk's snapshot, and for the image made from it
    (``gpulease.core.bake_timeouts``: one bound for the program and the review's preconditions table)."""
    return bake_timeouts.create_timeout(root_disk_gb)


def record_folder(prefix: str, folder: str) -> str:
    """The one place the kit's records are named: ``_gpulease/<checkpoint prefix><folder>`` at the bucket root.

    The instance's writer (the ``ready_record_uri`` setting, ``components/userdata/workflow.py``), its role's write
    grant (``components/*/identity.py``), the bake gate's listings and the baked record all derive from it. Under the
    checkpoint prefix the records would expire with the checkpoints: an S3 lifecycle filter cannot exclude a
    sub-prefix (Filter is Prefix, Tag, size or And of those: AWS S3 User Guide, "Lifecycle configuration elements")."""
    return f"{RECORDS_ROOT}{prefix}{folder}"


def record_uri(checkpoint_uri: str, folder: str) -> str:
    """``record_folder`` as a URI, from the experiment's checkpoint URI (``s3://bucket/prefix/``):
    ``s3://bucket/_gpulease/prefix/<folder>``."""
    scheme, _, rest = checkpoint_uri.partition("://")
    bucket, _, prefix = rest.partition("/")
    return f"{scheme}://{bucket}/{record_folder(prefix, folder)}"


def ready_folder(prefix: str) -> str:
    """Where the ready records of the experiment with checkpoint prefix ``prefix`` are."""
    return record_folder(prefix, READY_FOLDER)


def control_folder(prefix: str) -> str:
    """Where the instance with checkpoint prefix ``prefix`` (a cluster node's own: ``<prefix>nodes/N/``) reports."""
    return record_folder(prefix, CONTROL_FOLDER)


def node_prefix(prefix: str, rank: int | None) -> str:
    """Node ``rank``'s checkpoint prefix in an experiment with prefix ``prefix``: rank 0 (and a single instance) the
    experiment's own, rank N ``<prefix>nodes/N/`` (as ``components.cluster.node_checkpoint_uri``)."""
    return prefix if rank in (None, 0) else f"{prefix.rstrip('/')}/nodes/{rank}/"


def node_control_folder(prefix: str, rank: int | None) -> str:
    """``control_folder`` of node ``rank`` (``node_prefix``), so that each node's role may write its own reports only."""
    return control_folder(node_prefix(prefix, rank))


def node_ready_folder(prefix: str, rank: int | None) -> str:
    """``ready_folder`` of node ``rank`` (``node_prefix``): where that node's ready record goes (its settings'
    ``ready_record_uri`` is built from its own checkpoint URI), and the only ready folder its role may write."""
    return ready_folder(node_prefix(prefix, rank))


def baked_folder(prefix: str, stack: str) -> str:
    """Where this stack's baked records are (a stack's own: another stack on the same bucket and prefix, with an
    experiment of the same name, never skips this stack's readiness gate)."""
    return f"{record_folder(prefix, BAKED_FOLDER)}{stack}/"


def baked_key(prefix: str, spec: ExperimentSpec, stack: str) -> str:
    """The object that says this stack baked its image: ``_gpulease/<prefix>baked/<stack>/<experiment>.json``."""
    return f"{baked_folder(prefix, stack)}{spec.name}.json"


def bake_gate_ids(ready: pulumi.Output[list[str]], baked: pulumi.Output[list[str]], spec: ExperimentSpec
                  ) -> pulumi.Output[list[str]]:
    """The ids ``gate`` reads: the ready instances, or ``ALREADY_BAKED`` once this experiment's baked record exists.

    Bake once: the readiness gate guards the one update that creates the image. Every later update (a renewal, an
    instance replaced by a pinned image or new user-data) keeps that image (``ignore_changes``) and must not fail
    because the new instance has not passed readiness yet."""
    def ids(values: list) -> list[str]:
        ready_now, baked_ids = values
        return [ALREADY_BAKED] if spec.name in (baked_ids or []) else list(ready_now or [])

    return pulumi.Output.all(ready, baked).apply(ids)


def baked_record(image_id: str, instance_id: str) -> str:
    """The baked record's content: which image, made from which instance (JSON)."""
    return json.dumps({"image": image_id, "instance": instance_id}, sort_keys=True)


def image_tags(spec: ExperimentSpec, tags: dict[str, pulumi.Input[str]]) -> dict[str, pulumi.Input[str]]:
    """The experiment's tags, plus the retention end and retain=false: the reaper deletes the image after that."""
    until = clock.utcnow().replace(microsecond=0) + timedelta(days=spec.image.retain_days)
    return {**tags, v.TAG_RETAIN: "false", v.TAG_RETAIN_UNTIL: v.rfc3339(until)}


def image_name(stack: str, spec: ExperimentSpec) -> str:
    """A region-unique, readable name: ``gpulease-<stack>-<experiment>-<date>``."""
    return f"gpulease-{stack}-{spec.name}-{clock.utcnow().strftime('%Y%m%d-%H%M')}"[:120]


def baked_output(image: pulumi.CustomResource, stack: str, spec: ExperimentSpec) -> pulumi.Output:
    """``bakedImage``: from the image's recorded tags (kept as first written), so the output never drifts."""
    tags = image.tags  # type: ignore[attr-defined]

    def shape(values: list[Any]) -> dict[str, Any]:
        image_id, labels = values[0], values[1] or {}
        until = labels.get(v.TAG_RETAIN_UNTIL)
        created = None
        if until:
            created = v.rfc3339(v.parse_rfc3339(until) - timedelta(days=spec.image.retain_days))
        return {"id": image_id, "stack": stack, "experiment": spec.name, "createdAt": created, "retainUntil": until}

    return pulumi.Output.all(image.id, tags).apply(shape)


def image_from_stack(reference: str, parent: pulumi.Resource) -> tuple[pulumi.Output[str], pulumi.Output[Any]]:
    """The id another stack baked, and its whole ``bakedImage`` output (where it came from, when, how long)."""
    ref = pulumi.StackReference(f"image-from-{reference.replace('/', '-')}", stack_name=reference,
                                opts=pulumi.ResourceOptions(parent=parent))
    info = ref.require_output(BAKED_IMAGE_OUTPUT)

    def image_id(value: Any) -> str:
        if not isinstance(value, dict) or not value.get("id"):
            raise pulumi.RunError(f"image.fromStack: stack {reference!r} has no baked image (its output "
                                  f"{BAKED_IMAGE_OUTPUT} is {value!r}); bake one there with image.bake: true")
        return str(value["id"])

    return info.apply(image_id), info


def describe_source(info: Any) -> str:
    """Where a ``fromStack`` image came from and how old it is, for the plan: ``stack X (experiment Y), baked
    <time>, N days ago, kept until <time>``."""
    if not isinstance(info, dict):
        return str(info)
    text = f"{info.get('id')} from stack {info.get('stack')} (experiment {info.get('experiment')})"
    try:
        baked = v.parse_rfc3339(str(info.get("createdAt")))
    except ValueError:
        return text
    age = clock.utcnow() - baked
    text += f", baked {v.rfc3339(baked)} ({age.days} days ago)"
    if info.get("retainUntil"):
        text += f", kept until {info['retainUntil']}"
    return text
