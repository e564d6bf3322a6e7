"""``gpulease down STACK``: destroy the stack through the Automation API and say exactly what stays and what it
costs per month; ``--all`` removes the data disk and the checkpoint bucket too.

What stays after a destroy is what the spec retains (``dataDisk.retain`` and ``checkpoints.retain``, true by
default: ``retainOnDelete``, so the destroy leaves them in the cloud and forgets them) and what a bake made
(images with their snapshots, kept ``image.retainDays``); the monthly cost is the review's own
``after_destroy_monthly_usd`` of each retained line (``gpulease plan`` prices them the same way).

``--all`` deletes, after the destroy, only what the stack created and still tags as its own: a disk or bucket
whose ``gpulease:managed-by`` is ``gpulease`` and whose ``gpulease:stack`` is this stack. A disk the spec reattached
(``dataDisk.existingVolumeId``) and a bucket it names (``checkpoints.bucket``) were not made by the stack and stay.
AWS: EC2 ``DeleteVolume`` once the volume is ``available`` (waited for, bounded), then every object version and
delete marker of the bucket (``ListObjectVersions``, ``DeleteObjects``) and ``DeleteBucket``. Alibaba Cloud: the
commands to run are printed (not deleted from here)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from components.aws_credentials import ProviderCredentials, bounded_config, session
from gpulease.core import vocabulary as v
from gpulease.ephemeral.backend import ResourceEvent, StackBackend, StackMissingError
from gpulease.ephemeral.progress import Progress
from gpulease.lifecycle import deploy, verdict
from gpulease.lifecycle.spot_requests import aws_open_spot_requests, cancel_with_strays, owned
from gpulease.review.stack_commands import command

VOLUME_WAIT_SECONDS = 300
"""How long ``--all`` waits for the data disk to detach after the instance is gone (EC2 detaches on terminate)."""
DELETE_BATCH = 1000
"""``DeleteObjects`` takes at most 1,000 keys per call (S3 API reference)."""
MAX_OBJECT_PAGES = 10_000


class TeardownError(RuntimeError):
    """The destroy failed or what ``--all`` removes could not be removed: one line, what is left."""


class PartialTeardownError(TeardownError):
    """The teardown stopped part-way (``pulumi destroy`` failed after deleting some resources, or ``--all`` after
    removing some): ``result`` says what is gone and what is left, with its monthly cost (exit 3)."""

    def __init__(self, message: str, result: DownResult):
        super().__init__(message)
        self.result = result


@dataclass
class DownResult:
    stack: str
    destroyed: bool = False
    stays: list[dict[str, Any]] = field(default_factory=list)
    monthly_usd: float = 0.0
    removed: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    partial: bool = False
    gone: list[str] = field(default_factory=list)
    """A partial teardown: the resources the destroy deleted before it failed."""
    left: list[dict[str, Any]] = field(default_factory=list)
    """A partial teardown: the priced lines still there (the stack's own and what it retains)."""
    left_monthly_usd: float | None = None
    """A partial teardown: what ``left`` costs a month; None when any of it (or all of it) is not priced."""
    notes: list[str] = field(default_factory=list)
    path: Path | None = None
    """The stack file: the commands a message prints name it (``commands.stack_word``)."""

    def as_dict(self) -> dict[str, Any]:
        monthly = (None if self.left_monthly_usd is None else round(self.left_monthly_usd, 2)) if self.partial \
            else round(self.monthly_usd, 2)
        return {"stack": self.stack, "destroyed": self.destroyed, "partial": self.partial, "stays": self.stays,
                "monthlyUsd": monthly, "removed": self.removed, "kept": self.kept, "commands": self.commands,
                "gone": self.gone, "left": self.left, "notes": self.notes}


def _priced_total(lines: list[dict[str, Any]]) -> float | None:
    """The sum of the lines' ``monthlyUsd``; None when there is none or one is unknown (never a false $0)."""
    values = [line.get("monthlyUsd") for line in lines]
    if not values or any(value is None for value in values):
        return None
    return float(sum(values))


def destroy_stopped(result: DownResult, found: verdict.Verdict, deleted: list[str], remove_all: bool) -> DownResult:
    """What a destroy that failed part-way leaves: the stack's lines it did not delete, and everything retained
    (the destroy forgets a retained resource, the cloud keeps it)."""
    retained = {str(r["resource"]) for r in found.retained}
    result.partial, result.destroyed = True, False
    result.gone = [name for name in dict.fromkeys(deleted) if name not in retained]
    result.left = [dict(line) for line in found.priced if line.get("retained") or line["resource"] not in result.gone]
    result.left_monthly_usd = _priced_total(result.left)
    result.stays = [dict(item) for item in found.retained]
    if not found.priced:
        result.notes.append("what is left is not known offline (the review priced nothing): see `pulumi stack "
                            f"--stack {result.stack}` or `gpulease ls`")
    if remove_all:
        result.notes.append("the data disk and the bucket were not removed (the destroy did not finish); "
                            f"{command('down', result.stack, result.path, '--all')} again")
    return result


def _experiments(outputs: dict[str, Any]) -> list[dict[str, Any]]:
    per = outputs.get("experiments")
    if isinstance(per, dict):
        return [e for e in per.values() if isinstance(e, dict)]
    return [outputs] if outputs else []


def aws_remove_volume(ec2: Any, volume_id: str, stack: str, sleep: Callable[[float], None] = time.sleep) -> str:
    found = ec2.describe_volumes(VolumeIds=[volume_id])["Volumes"]
    if not found:
        return f"disk {volume_id}: already gone"
    tags = {t["Key"]: t["Value"] for t in found[0].get("Tags", [])}
    if not owned(tags, stack):
        raise TeardownError(f"disk {volume_id} is not tagged as stack {stack}'s ({v.TAG_STACK}="
                            f"{tags.get(v.TAG_STACK)!r}); it is left alone")
    deadline = time.monotonic() + VOLUME_WAIT_SECONDS
    while found[0]["State"] != "available":
        if time.monotonic() > deadline:
            raise TeardownError(f"disk {volume_id} is still {found[0]['State']} after {VOLUME_WAIT_SECONDS} s; it "
                                "is kept (run gpulease down --all again)")
        sleep(5)
        found = ec2.describe_volumes(VolumeIds=[volume_id])["Volumes"]
    ec2.delete_volume(VolumeId=volume_id)
    return f"disk {volume_id}"


def aws_remove_bucket(s3: Any, bucket: str, stack: str) -> str:
    tags = {t["Key"]: t["Value"] for t in s3.get_bucket_tagging(Bucket=bucket).get("TagSet", [])}
    if not owned(tags, stack):
        raise TeardownError(f"bucket {bucket} is not tagged as stack {stack}'s ({v.TAG_STACK}="
                            f"{tags.get(v.TAG_STACK)!r}); it is left alone")
    pages = s3.get_paginator("list_object_versions").paginate(Bucket=bucket, PaginationConfig={"MaxItems": None})
    batch: list[dict[str, str]] = []
    for count, page in enumerate(pages):
        if count >= MAX_OBJECT_PAGES:
            raise TeardownError(f"bucket {bucket}: more than {MAX_OBJECT_PAGES} pages of objects; it is kept")
        for item in [*page.get("Versions", []), *page.get("DeleteMarkers", [])]:
            batch.append({"Key": item["Key"], "VersionId": item["VersionId"]})
            if len(batch) == DELETE_BATCH:
                s3.delete_objects(Bucket=bucket, Delete={"Objects": batch, "Quiet": True})
                batch = []
    if batch:
        s3.delete_objects(Bucket=bucket, Delete={"Objects": batch, "Quiet": True})
    s3.delete_bucket(Bucket=bucket)
    return f"bucket {bucket}"


def removal_stopped(result: DownResult) -> DownResult:
    """``--all`` stopped after the destroy: what it removed, and the retained lines of what it did not."""
    kinds = {item.split(" ", 1)[0] for item in result.removed}  # "disk", "bucket"
    result.partial = True
    result.gone = list(result.removed)
    result.left = [dict(s) for s in result.stays if s.get("type") != "image"
                   and not ("disk" in kinds and "volume" in str(s.get("type")).lower())
                   and not ("bucket" in kinds and "bucket" in str(s.get("type")).lower())]
    result.left_monthly_usd = _priced_total(result.left)
    return result


def checks_spot_requests(st: deploy.Stack) -> bool:
    """Whether ``down`` cancels the stack's live spot requests and checks none is open after the destroy: on every
    AWS stack, whatever its file says now. The file is not what was deployed: an earlier ``up`` with
    ``spot.recover`` on may have left a persistent request running after the file was turned to ``recover: false``
    or on-demand; the requests are found by their own tags (``gpulease:stack``), which they keep."""
    return st.spec.cloud == "aws"


def aws_clients(region: str, creds: ProviderCredentials) -> tuple[Any, Any]:
    """EC2 and S3 with the stack's AWS provider credentials (``components.aws_credentials``), bounded."""
    found = session(creds, region)
    config = bounded_config()
    return found.client("ec2", region_name=region, config=config), found.client("s3", region_name=region, config=config)


CLIENTS: Callable[[str, ProviderCredentials], tuple[Any, Any]] = aws_clients


def stays(st: deploy.Stack, found: verdict.Verdict) -> list[dict[str, Any]]:
    out = [dict(item) for item in found.retained]
    for exp in st.spec.experiments:
        if exp.image.bake:
            out.append({"resource": f"{exp.name} baked image", "type": "image", "item": "image and its snapshots",
                        "monthlyUsd": None, "note": f"kept {exp.image.retain_days} days (gpulease:retain-until)"})
    return out


def down(stack: str, progress: Progress, *, remove_all: bool, backend: StackBackend | None = None) -> DownResult:
    st = deploy.load(stack)
    stack = st.name
    found = verdict.REVIEW(st.path, stack)
    backend = backend or deploy.backend_for(st)
    result = DownResult(stack, path=st.path)
    try:
        outputs = backend.outputs(stack)
    except StackMissingError:
        outputs = {}
    bucket = outputs.get("bucket") if isinstance(outputs.get("bucket"), str) else None
    volumes = [str(e["dataVolumeId"]) for e in _experiments(outputs) if e.get("dataVolumeId")]
    tracked = {str(e["instanceId"]) for e in _experiments(outputs) if e.get("instanceId")}
    tracked |= {str(n["instanceId"]) for e in _experiments(outputs) for n in e.get("nodes") or []
                if isinstance(n, dict) and n.get("instanceId")}
    clients = None
    if remove_all:
        # Fail closed before anything is destroyed: what --all removes is found from the stack's outputs (gone
        # after a plain `down`), and removing it needs working credentials.
        if not volumes and not bucket:
            raise TeardownError(f"stack {stack!r}: its outputs name no data disk and no bucket (destroyed already, or "
                                "never created), so --all cannot find what to remove; nothing was changed. Find "
                                f"what is left with `gpulease ls --region {st.region}` and remove it there")
        if st.spec.cloud == "aws":
            clients = CLIENTS(st.region, st.credentials)
            try:
                clients[1].list_buckets(MaxBuckets=1)
            except Exception as exc:
                raise TeardownError(f"stack {stack!r}: --all needs working AWS credentials to remove the disk and "
                                    f"the bucket ({type(exc).__name__}); nothing was changed") from None
    requests = checks_spot_requests(st)
    if requests:
        clients = clients or CLIENTS(st.region, st.credentials)
        with progress.step("cancel the stack's spot requests") as record:
            try:
                cancelled, ended = cancel_with_strays(clients[0], stack, tracked)
            except Exception as exc:
                raise TeardownError(f"stack {stack!r}: cancelling its spot requests failed ({type(exc).__name__}: "
                                    f"{' '.join(str(exc).split())[:300]}); nothing was destroyed (gpulease down "
                                    "again)") from None
            record.detail = ", ".join(cancelled) or "none open"
            if ended:
                record.detail += f"; terminated {', '.join(ended)} (launched by them, not the stack's)"
    deleted: list[str] = []

    def on_resource(event: ResourceEvent) -> None:
        progress.resource(event)
        if event.op == "delete" and event.done and not event.failed:
            deleted.append(event.urn.rsplit("::", 1)[-1])

    with progress.step("pulumi destroy") as record:
        try:
            backend.destroy(stack, lambda line: progress.line("pulumi", line), on_resource)
        except StackMissingError:
            record.detail = "no such stack in the backend (nothing to destroy)"
        except Exception as exc:
            raise PartialTeardownError(
                f"stack {stack!r}: pulumi destroy failed: {' '.join(str(exc).split())[:500]}; everything it did not "
                "delete is still there (gpulease down again)", destroy_stopped(result, found, deleted, remove_all),
            ) from None
    result.destroyed = True
    if requests and clients is not None:
        still = aws_open_spot_requests(clients[0], stack)
        if still:
            raise TeardownError(f"stack {stack!r}: destroyed, but its spot request(s) {', '.join(still)} are still "
                                "open and may launch an instance; cancel them: aws ec2 cancel-spot-instance-requests "
                                f"--region {st.region} --spot-instance-request-ids {' '.join(still)}")
    result.stays = stays(st, found)
    result.monthly_usd = found.retained_monthly_usd
    if not remove_all:
        return result
    exp = st.spec.base
    if exp.data_disk.existing_volume_id:
        result.kept.append(f"disk {exp.data_disk.existing_volume_id}: reattached from an earlier experiment, not "
                           "this stack's")
        volumes = [x for x in volumes if x != exp.data_disk.existing_volume_id]
    if exp.checkpoints.bucket:
        result.kept.append(f"bucket {exp.checkpoints.bucket}: named by the spec, not this stack's")
        bucket = None
    if st.spec.cloud == "alicloud":
        result.commands = [f"aliyun ecs DeleteDisk --DiskId {x}" for x in volumes]
        result.commands += [f"ossutil rm -r -f --all-versions oss://{bucket}/ && ossutil rm oss://{bucket} -b"] if bucket else []
        return result
    ec2, s3 = clients or CLIENTS(st.region, st.credentials)
    with progress.step("remove the disk and the bucket"):
        try:
            for volume in volumes:
                result.removed.append(aws_remove_volume(ec2, volume, stack))
            if bucket:
                result.removed.append(aws_remove_bucket(s3, bucket, stack))
        except Exception as exc:
            if isinstance(exc, TeardownError) and not result.removed:
                raise  # refused before anything was removed (a disk that is not the stack's): one line, exit 1
            raise PartialTeardownError(f"stack {stack!r}: destroyed, but --all stopped after removing "
                                       f"{', '.join(result.removed) or 'nothing'}: {' '.join(str(exc).split())[:300]}",
                                       removal_stopped(result)) from None
    result.stays = [s for s in result.stays if s.get("type") == "image"]
    result.monthly_usd = 0.0
    return result
