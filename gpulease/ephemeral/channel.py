"""How the CI runner talks to the instance: objects under the experiment's checkpoint prefix.

Why the bucket and not SSH: a CI runner's address is unknown in advance (SSH would have to open to it) and
``ssm`` / ``cloud-assistant`` stacks have no inbound port at all. The bucket is reachable from both sides with
the credentials each already has (the runner's CI role, the instance's role scoped to the checkpoint prefix),
and everything the job leaves behind is in one place.

The contract, with ``P = <checkpointUri>_gpulease/`` (e.g. ``s3://bucket/checkpoints/_gpulease/``):

- ``R/ready.json``, with ``R = components.image_bake.control_folder(prefix)`` at the bucket root (e.g.
  ``s3://bucket/_gpulease/checkpoints/control/``: outside the prefix its lifecycle rule expires): the bootstrap's
  readiness report (``/var/lib/gpulease/ready.json``: ``ready``, ``failed``, ``time``, ``checks``) plus the instance's ``instanceId``, uploaded once the bootstrap has run. The runner
  accepts it only when ``instanceId`` is the stack's instance (a marker left in a retained bucket by an earlier
  run never counts) and stops waiting at once when it says ``"ready": false``.
- ``R/verify.json``: the verification's result (``instance/verify.py``: ``passed``, ``failed``, ``checks``), when the
  spec declares ``verify``; accepted only with the stack's ``instanceId``, like the ready marker.
- ``P/jobs/<job>/request.json``: written by the runner: ``{"jobId", "command", "deadline"}``. The instance runs
  ``bash -lc <command>`` once, in ``/data``, with ``GPULEASE_JOB_ID`` and ``GPULEASE_ARTIFACTS_DIR``
  (``/data/artifacts/<job>``) in its environment, and kills it at ``deadline``.
- ``P/jobs/<job>/log/<seq>.txt``: the job's combined stdout/stderr, appended as numbered chunks (``seq`` zero
  padded to 8 digits, a new chunk at most every few seconds); object stores cannot append, so chunks stream.
- ``P/jobs/<job>/artifacts/...``: the contents of ``GPULEASE_ARTIFACTS_DIR``, uploaded when the job ends.
- ``P/jobs/<job>/result.json``: ``{"exitCode": <int>, "finishedAt": "<RFC 3339>"}``, written LAST, after the
  final log chunk and the artifacts, so its presence means everything else is complete.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from components.image_bake import control_folder
from gpulease.core import vocabulary as v
from gpulease.core.errors import UserError
from gpulease.ephemeral import records
from gpulease.ephemeral.artifact_bounds import ArtifactBounds
from gpulease.transfer.files import file_digest, write_confined
from instance.bounds import PageGuard

CONTROL_DIR = "_gpulease/"
READY_MARKER = "ready.json"
VERIFY_RESULT = "verify.json"
LineSink = Callable[[str], None]


class ListingCutError(Exception):
    """A bucket listing ended before its last page (it loops, passes the page cap or the deadline)."""


class ChannelError(RuntimeError):
    """The instance did not become ready, or the job's state could not be read, in time."""


class InstanceChannel(Protocol):
    """Waiting for the instance, running the training command on it, and collecting what it wrote."""

    def wait_ready(self, outputs: Mapping[str, Any], timeout_s: float, on_line: LineSink) -> dict[str, Any]:
        """Block until the instance reports ready; return its marker. Raises ``ChannelError`` on timeout."""
        ...

    def wait_verify(self, outputs: Mapping[str, Any], timeout_s: float, on_line: LineSink) -> dict[str, Any]:
        """Block until the instance reports its verification; return it when it passed. Raises ``ChannelError``
        when it failed or did not arrive in time."""
        ...

    def run(self, outputs: Mapping[str, Any], job_id: str, command: str, deadline: datetime, on_line: LineSink) -> int:
        """Run ``command`` on the instance, stream its log lines, return its exit code."""
        ...

    def download_artifacts(self, outputs: Mapping[str, Any], job_id: str, dest: Path,
                           bounds: ArtifactBounds | None = None) -> list[Path]:
        """Copy the job's artifacts into ``dest`` within ``bounds``; return the files written (a ``Collected``
        also names the artifacts refused and not collected, with why)."""
        ...


class Collected(list[Path]):
    """The artifacts written (the list) and those refused, never written (``refused``: ``'name' (reason)``);
    ``failed``: those of ``refused`` whose fetch failed (still in the bucket, not collected); ``finished``: the
    job's ``result.json`` was there before the listing (written last, it marks the artifacts complete)."""

    def __init__(self, written: list[Path], refused: list[str], failed: list[str] | None = None,
                 finished: bool = True) -> None:
        super().__init__(written)
        self.refused = refused
        self.failed = failed or []
        self.finished = finished


@dataclass(frozen=True)
class BucketLocation:
    scheme: str
    bucket: str
    prefix: str

    @property
    def control(self) -> str:
        return f"{self.prefix}{CONTROL_DIR}"

    @property
    def records(self) -> str:
        """Where the instance reports ``ready.json`` and ``verify.json`` (``control_folder``: outside the prefix)."""
        return control_folder(self.prefix)

    def job(self, job_id: str) -> str:
        return f"{self.control}jobs/{job_id}/"


def parse_bucket_uri(uri: str) -> BucketLocation:
    """``s3://bucket/prefix/`` or ``oss://bucket/prefix/`` into its parts (prefix always ends with ``/``)."""
    scheme, sep, rest = uri.partition("://")
    if not sep or scheme not in ("s3", "oss") or not rest:
        raise ChannelError(f"checkpointUri {uri!r} is not an s3:// or oss:// location")
    bucket, _, prefix = rest.partition("/")
    if prefix and not prefix.endswith("/"):
        prefix += "/"
    return BucketLocation(scheme, bucket, prefix)


def location_from_outputs(outputs: Mapping[str, Any]) -> BucketLocation:
    uri = outputs.get("checkpointUri")
    if not uri or uri == v.NO_CHECKPOINTS:
        raise ChannelError("the stack has no checkpoint bucket (checkpointUri output), so no job channel")
    return parse_bucket_uri(str(uri))


def bucket_client(cloud: str, region: str, endpoint_url: str | None = None) -> Any:
    """An S3 API client for the experiment's bucket, with botocore's standard retry mode for throttling.

    Alibaba Cloud OSS speaks the S3 API at ``https://oss-<region>.aliyuncs.com`` (virtual-hosted addressing);
    it is given the ``ALIBABA_CLOUD_ACCESS_KEY_*`` credentials."""
    import boto3
    from botocore.config import Config

    retries = {"mode": "standard", "max_attempts": 8}
    if cloud == "alicloud":
        return boto3.client(
            "s3",
            region_name=region,
            endpoint_url=endpoint_url or f"https://oss-{region}.aliyuncs.com",
            aws_access_key_id=os.environ.get("ALIBABA_CLOUD_ACCESS_KEY_ID") or os.environ.get("ALICLOUD_ACCESS_KEY"),
            aws_secret_access_key=os.environ.get("ALIBABA_CLOUD_ACCESS_KEY_SECRET")
            or os.environ.get("ALICLOUD_SECRET_KEY"),
            aws_session_token=os.environ.get("ALIBABA_CLOUD_SECURITY_TOKEN") or os.environ.get("ALICLOUD_SECURITY_TOKEN"),
            config=Config(retries=retries, s3={"addressing_style": "virtual"}, signature_version="s3v4"),
        )
    return boto3.client("s3", region_name=region, endpoint_url=endpoint_url, config=Config(retries=retries))


def _rfc3339_now() -> str:
    return v.rfc3339(datetime.now(UTC))


class BucketChannel:
    """``InstanceChannel`` over the checkpoint bucket (see the module docstring for the contract)."""

    def __init__(
        self,
        client: Any,
        *,
        poll_seconds: float = 5.0,
        sleep: Callable[[float], None] = time.sleep,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ):
        self.client = client
        self.poll_seconds = poll_seconds
        self.sleep = sleep
        self.now = now

    # -- small S3 helpers ---------------------------------------------------------------------------------
    def _get_json(self, bucket: str, key: str) -> dict[str, Any] | None:
        try:
            body = self.client.get_object(Bucket=bucket, Key=key)["Body"].read()
        except self.client.exceptions.NoSuchKey:
            return None
        try:
            data = json.loads(body)
        except json.JSONDecodeError as exc:
            raise ChannelError(f"{key} is not JSON ({exc})") from None
        return data if isinstance(data, dict) else None

    def _get_record(self, bucket: str, key: str, kind: str) -> dict[str, Any] | None:
        """The instance's ``kind`` record (``records``): its JSON object, fields unchecked (ask whose it is
        first); a record that is no JSON object (or nests too deep) is unreadable, one line."""
        try:
            body = self.client.get_object(Bucket=bucket, Key=key)["Body"].read()
        except self.client.exceptions.NoSuchKey:
            return None
        try:
            return records.json_object(kind, body)
        except records.RecordError as exc:
            raise ChannelError(f"unreadable record at {key}: {exc}") from None

    @staticmethod
    def _checked(kind: str, key: str, doc: dict[str, Any]) -> dict[str, Any]:
        try:
            return records.check(kind, doc)
        except records.RecordError as exc:
            raise ChannelError(f"unreadable record at {key}: {exc}") from None

    def _pages(self, bucket: str, prefix: str, stop: Callable[[], str | None],
               start_after: str = "") -> Iterator[list[dict[str, Any]]]:
        """Each ListObjectsV2 page's objects under ``prefix``, paged as pull pages (``instance.bounds.PageGuard``:
        a continuation token already read, or more than ``MAX_PAGES`` pages, ends the listing; botocore's paginator
        only catches the same token twice in a row), with ``stop()`` (why not to read on, or None) before each
        page after the first: ``ListingCutError`` naming why."""
        what = f"{bucket}/{prefix}"
        guard = PageGuard(what)
        kwargs: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix, **({"StartAfter": start_after} if start_after
                                                                          else {})}
        token = ""
        while True:
            problem = (token and stop()) or guard.problem(token)  # the first page is always read
            if problem:
                raise ListingCutError(f"listing {what}: {problem}")
            page = self.client.list_objects_v2(**kwargs, **({"ContinuationToken": token} if token else {}))
            yield page.get("Contents", [])
            if not page.get("IsTruncated"):
                return
            token = page.get("NextContinuationToken") or ""
            if not token:  # the rest cannot be asked for: the listing is not complete
                raise ListingCutError(f"listing {what}: a truncated page with no NextContinuationToken")

    def _keys(self, bucket: str, prefix: str, deadline: datetime, start_after: str = "") -> list[str]:
        def past() -> str | None:
            return f"past the stack's deadline {v.rfc3339(deadline)}" if self.now() >= deadline else None

        try:
            return sorted(item["Key"] for page in self._pages(bucket, prefix, past, start_after) for item in page)
        except ListingCutError as exc:
            raise ChannelError(str(exc)) from None

    # -- the protocol -------------------------------------------------------------------------------------
    def wait_ready(self, outputs: Mapping[str, Any], timeout_s: float, on_line: LineSink) -> dict[str, Any]:
        loc = location_from_outputs(outputs)
        key = f"{loc.records}{READY_MARKER}"
        instance_id = outputs.get("instanceId")
        started = time.monotonic()
        announced_stale = False
        while True:
            marker = self._get_record(loc.bucket, key, "ready")
            if marker is not None and (instance_id is None or marker.get("instanceId") == instance_id):
                # Only a real ``"ready": true`` is ready: the text "false", a null or no verdict is unreadable.
                self._checked("ready", key, marker)
                if marker["ready"] is not True:
                    # The bootstrap's own verdict: waiting longer would not change it.
                    failed = ", ".join(marker.get("failed") or []) or "unknown checks"
                    raise ChannelError(f"instance {marker.get('instanceId')} reported NOT ready: {failed} failed")
                on_line(f"instance {marker.get('instanceId', '?')} ready at {marker.get('time', '?')}")
                return marker
            if marker is not None and not announced_stale:
                on_line(f"ignoring a ready marker from another instance ({marker.get('instanceId')!r})")
                announced_stale = True
            if time.monotonic() - started >= timeout_s:
                raise ChannelError(
                    f"the instance did not report ready within {timeout_s / 60:g} minutes "
                    f"(no {loc.scheme}://{loc.bucket}/{key} for instance {instance_id})"
                )
            self.sleep(self.poll_seconds)

    def wait_verify(self, outputs: Mapping[str, Any], timeout_s: float, on_line: LineSink) -> dict[str, Any]:
        loc = location_from_outputs(outputs)
        key = f"{loc.records}{VERIFY_RESULT}"
        instance_id = outputs.get("instanceId")
        started = time.monotonic()
        while True:
            result = self._get_record(loc.bucket, key, "verify")
            if result is not None and (instance_id is None or result.get("instanceId") == instance_id):
                self._checked("verify", key, result)
                for name, check in (result.get("checks") or {}).items():
                    if isinstance(check, dict):
                        state = "skipped" if check.get("ok") is None else "ok" if check.get("ok") else "FAILED"
                        on_line(f"verify {name}: {state}: {check.get('detail', '')}")
                if result.get("passed") is not True:
                    failed = ", ".join(result.get("failed") or []) or "unknown checks"
                    raise ChannelError(f"the verification failed on instance {instance_id}: {failed} (see "
                                       f"{loc.scheme}://{loc.bucket}/{key})")
                return result
            if time.monotonic() - started >= timeout_s:
                raise ChannelError(f"no verification result within {timeout_s / 60:g} minutes (no "
                                   f"{loc.scheme}://{loc.bucket}/{key} for instance {instance_id})")
            self.sleep(self.poll_seconds)

    def run(self, outputs: Mapping[str, Any], job_id: str, command: str, deadline: datetime, on_line: LineSink) -> int:
        loc = location_from_outputs(outputs)
        job = loc.job(job_id)
        if self._get_json(loc.bucket, f"{job}request.json") is not None:
            # A retained bucket may hold an earlier job of the same id; its result must never be taken for ours.
            raise ChannelError(f"{loc.scheme}://{loc.bucket}/{job} already has a request; job ids are used once")
        request = {"jobId": job_id, "command": command, "deadline": v.rfc3339(deadline), "requestedAt": _rfc3339_now()}
        self.client.put_object(
            Bucket=loc.bucket, Key=f"{job}request.json", Body=json.dumps(request).encode(), ContentType="application/json"
        )
        log_prefix = f"{job}log/"
        last = ""
        while True:
            # Read the result before the log: a result means the final chunk is already there to drain.
            result = self._get_json(loc.bucket, f"{job}result.json")
            for key in self._keys(loc.bucket, log_prefix, deadline, start_after=last):
                text = self.client.get_object(Bucket=loc.bucket, Key=key)["Body"].read().decode("utf-8", "replace")
                for line in text.splitlines():
                    on_line(line)
                last = key
            if result is not None:
                code = result.get("exitCode")
                if not isinstance(code, int):
                    raise ChannelError(f"{job}result.json has no integer exitCode: {result!r}")
                return code
            if self.now() >= deadline:
                raise ChannelError(f"the job did not finish before the stack's deadline {v.rfc3339(deadline)}")
            self.sleep(self.poll_seconds)

    def download_artifacts(self, outputs: Mapping[str, Any], job_id: str, dest: Path,
                           bounds: ArtifactBounds | None = None) -> Collected:
        loc = location_from_outputs(outputs)
        prefix = f"{loc.job(job_id)}artifacts/"
        bounds = bounds or ArtifactBounds()
        bounds.start()
        # result.json is written last: present before the listing, every artifact listed after it is final.
        finished = self._exists(loc.bucket, f"{loc.job(job_id)}result.json")
        # "Folder" placeholder objects (a key ending in /) hold nothing to write; every other key is written with
        # pull's rules (gpulease.transfer.files.write_confined), or refused and named. The listing stops one past
        # the count: what lies beyond is named as not collected, never listed on.
        etags: dict[str, tuple[int, str]] = {}
        listed, more = self._sized(loc.bucket, prefix, bounds.max_objects + 1, bounds.past, etags)
        names, failed = bounds.split([(key[len(prefix):], size) for key, size in listed if not key.endswith("/")])
        if more:
            failed.append(more)
        fetch = bounds.bounded_fetch(self.client, lambda name, path: self.client.download_file(loc.bucket, prefix + name,
                                                                                           path))

        def same(name: str, local: Path, scratch: str) -> bool:
            """A local file already at an artifact's place that is the artifact (collected before): the same size,
            then the same MD5 as a plain (single-part, MD5) ETag, else the same bytes as a fresh download."""
            size, etag = etags[prefix + name]
            if local.stat().st_size != size:
                return False
            if len(etag) == 32 and all(c in "0123456789abcdef" for c in etag) and file_digest(local) == etag:
                return True
            fetch(name, scratch)
            try:
                return file_digest(Path(scratch)) == file_digest(local)
            finally:
                Path(scratch).unlink(missing_ok=True)

        written, refused = write_confined(dest, names, prefix, fetch, failed, stop=bounds.past, same=same)
        return Collected(written, refused + [f for f in failed if f not in refused], failed, finished)

    def _exists(self, bucket: str, key: str) -> bool:
        """Whether ``key`` is there; an answer that does not say so (a 404, any other error) counts as not there."""
        try:
            self.client.head_object(Bucket=bucket, Key=key)
        except self.client.exceptions.ClientError:
            return False
        return True

    def _sized(self, bucket: str, prefix: str, limit: int, stop: Callable[[], str | None],
               etags: dict[str, tuple[int, str]] | None = None) -> tuple[list[tuple[str, int]], str | None]:
        """Up to ``limit`` (key, size) under ``prefix``, in key order, and what was not listed (None: nothing):
        objects beyond ``limit - 1``, or the rest of a listing that loops, passes the page cap or ``stop()``."""
        found: list[tuple[str, int]] = []
        try:
            for page in self._pages(bucket, prefix, stop):
                found += [(item["Key"], int(item.get("Size", 0))) for item in page]
                if etags is not None:
                    etags.update({item["Key"]: (int(item.get("Size", 0)), str(item.get("ETag", "")).strip('"'))
                                  for item in page})
                if len(found) > limit:
                    return sorted(found)[:limit], (f"(more objects under {prefix!r} beyond --max-artifacts "
                                                   f"{limit - 1}: not listed)")
        except ListingCutError as exc:
            return sorted(found), f"(the rest of {prefix!r} not listed: {exc})"
        return sorted(found), None


def open_channel(cloud: str, region: str) -> InstanceChannel:
    if cloud not in ("aws", "alicloud"):
        raise UserError(f"no job channel for cloud {cloud!r}")
    return BucketChannel(bucket_client(cloud, region))
