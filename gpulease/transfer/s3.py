"""S3: uploads and downloads through boto3's managed transfers (s3transfer: multipart above the threshold, parts
in parallel, retries per part).

Resume: s3transfer keeps no record of a cut multipart upload between runs
(https://boto3.amazonaws.com/v1/documentation/api/latest/guide/s3.html, "File transfer configuration"), so a push
resumes per file, as ``aws s3 sync`` does: a file whose object already has the same size and the same recorded
modification time (object metadata ``gpulease-mtime``) is skipped; a file cut in the middle is sent again. A pull
skips a local file known to hold the object's bytes (``pulled``: a record
of what it fetched, the ETag, or a comparison). The bucket's lifecycle rule aborts incomplete multipart uploads."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import urllib3
from boto3.exceptions import RetriesExceededError, S3TransferFailedError, S3UploadFailedError
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, ConnectionClosedError, ReadTimeoutError

from gpulease.core.errors import UserError
from gpulease.transfer.files import AGAIN, MTIME_KEY, LocalFile
from gpulease.transfer.noreplace import ObjectFetchError

MULTIPART_THRESHOLD = 64 * 1024 * 1024
PART_SIZE = 64 * 1024 * 1024  # 10,000 parts at most: files up to 640 GB
# One read that stalls ends after READ_TIMEOUT_SECONDS (botocore's default is 60 s, retried 5 times by s3transfer
# and again by botocore); the overall deadline (bounded.PullBounds) holds over all of it.
CONNECT_TIMEOUT_SECONDS = 10
READ_TIMEOUT_SECONDS = 20
MAX_ATTEMPTS = 3


def client_config() -> Config:
    """The S3 client's per-read bounds (``botocore.config.Config``: connect_timeout, read_timeout, retries)."""
    return Config(connect_timeout=CONNECT_TIMEOUT_SECONDS, read_timeout=READ_TIMEOUT_SECONDS,
                  retries={"max_attempts": MAX_ATTEMPTS, "mode": "standard"})


def transfer_config(threshold: int = MULTIPART_THRESHOLD, part_size: int = PART_SIZE) -> TransferConfig:
    return TransferConfig(multipart_threshold=threshold, multipart_chunksize=part_size, max_concurrency=8,
                          num_download_attempts=MAX_ATTEMPTS)


@contextmanager
def _explained(bucket: str, kind: type[UserError] = UserError) -> Iterator[None]:
    """An S3 refusal (no such bucket, access denied, no credentials) as one message naming the bucket."""
    try:
        yield
    except RetriesExceededError as exc:  # its own text is only "Max Retries Exceeded"
        raise kind(f"bucket {bucket}: {MAX_ATTEMPTS} attempts failed, the last with: {exc.last_exception}. "
                        f"{AGAIN}") from None
    except (ClientError, BotoCoreError, S3UploadFailedError, S3TransferFailedError) as exc:
        raise kind(f"bucket {bucket}: {exc}. {AGAIN}") from None


def _read_body(response: Any, url: str) -> None:
    """The whole body, its failures as botocore's ``send`` gives them (retried by botocore as they would be)."""
    try:
        response.content  # noqa: B018 - reading it caches it, as botocore's own send does
    except urllib3.exceptions.ReadTimeoutError as exc:
        raise ReadTimeoutError(endpoint_url=url, error=exc) from None
    except urllib3.exceptions.HTTPError as exc:
        raise ConnectionClosedError(endpoint_url=url, error=exc) from None


class S3Store:
    def __init__(self, client: Any, bucket: str, config: TransferConfig | None = None) -> None:
        self.client, self.bucket, self.config = client, bucket, config or transfer_config()

    def bound_by(self, limits: Any) -> None:
        """Every HTTP answer this client reads is handed to ``limits.watch`` (``bounded.PullBounds``: shut down at the
        deadline), and no request is sent past the deadline. botocore sends every request of a client through its
        endpoint's ``http_session.send`` (``botocore/endpoint.py``, ``Endpoint._send``); the answer's ``raw`` is the
        urllib3 response whose body botocore and s3transfer read."""
        session = self.client._endpoint.http_session
        send = session.send

        def bounded_send(request: Any) -> Any:
            limits.check(f"sending {request.method} {request.url.split('?')[0]}")
            # botocore reads a non-streaming body (a listing) inside send; it is read here instead, once watched.
            preload, request.stream_output = not request.stream_output, True
            try:
                response = send(request)
            finally:
                request.stream_output = not preload
            limits.watch(response.raw)
            if preload:
                _read_body(response, request.url)
            return response

        session.send = bounded_send

    def already_there(self, f: LocalFile) -> bool:
        try:
            head = self.client.head_object(Bucket=self.bucket, Key=f.key)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return False
            with _explained(self.bucket):
                raise
        except BotoCoreError:  # an endpoint that cannot be reached: one line, as pull gives it
            with _explained(self.bucket):
                raise
        return int(head["ContentLength"]) == f.size and head.get("Metadata", {}).get(MTIME_KEY) == str(f.mtime)

    def upload(self, f: LocalFile, progress: Any) -> None:
        with _explained(self.bucket):
            self.client.upload_file(
                str(f.path), self.bucket, f.key, Config=self.config, Callback=progress,
                ExtraArgs={"Metadata": {MTIME_KEY: str(f.mtime)}},
            )

    def page(self, prefix: str, token: str | None) -> tuple[list[tuple[str, int, str | None]], str | None]:
        """One ListObjectsV2 page under ``prefix`` (key, size, ETag per object) and the next page's token (paged by
        ``bounded.PullBounds``)."""
        extra = {"ContinuationToken": token} if token else {}
        with _explained(self.bucket):
            page = self.client.list_objects_v2(Bucket=self.bucket, Prefix=prefix, **extra)
        found = [(o["Key"], int(o["Size"]), o.get("ETag")) for o in page.get("Contents", []) if not o["Key"].endswith("/")]
        if not page.get("IsTruncated"):
            return found, None
        token = page.get("NextContinuationToken")
        if not token:  # fail closed: the rest of the listing cannot be asked for, so it is not complete
            raise UserError(f"bucket {self.bucket}: the listing under {prefix!r} says it is truncated but gives no "
                            "NextContinuationToken; refusing to take it as complete")
        return found, token

    def download(self, key: str, target: str, progress: Any) -> None:
        with _explained(self.bucket, ObjectFetchError):
            self.client.download_file(self.bucket, key, target, Config=self.config, Callback=progress)
