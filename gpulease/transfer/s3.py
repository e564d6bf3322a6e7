"""S3: uploads and downloads through boto3's managed transfers (s3transfer: multipart above the threshold, parts
in parallel, retries per part).

Resume: s3transfer keeps no record of a cut multipart upload between runs
(https://boto3.amazonaws.com/v1/documentation/api/latest/guide/s3.html, "File transfer configuration"), so a push
resumes per file, as ``aws s3 sync`` does: a file whose object already has the same size and the same recorded
modification time (object metadata ``gpulease-mtime``) is skipped; a file cut in the middle is sent again. A pull
skips a local file of the object's size. The bucket's lifecycle rule aborts incomplete multipart uploads."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from boto3.exceptions import S3TransferFailedError, S3UploadFailedError
from boto3.s3.transfer import TransferConfig
from botocore.exceptions import BotoCoreError, ClientError

from gpulease.core.errors import UserError
from gpulease.transfer.files import AGAIN, MTIME_KEY, LocalFile

MULTIPART_THRESHOLD = 64 * 1024 * 1024
PART_SIZE = 64 * 1024 * 1024  # 10,000 parts at most: files up to 640 GB


def transfer_config(threshold: int = MULTIPART_THRESHOLD, part_size: int = PART_SIZE) -> TransferConfig:
    return TransferConfig(multipart_threshold=threshold, multipart_chunksize=part_size, max_concurrency=8)


@contextmanager
def _explained(bucket: str) -> Iterator[None]:
    """An S3 refusal (no such bucket, access denied, no credentials) as one message naming the bucket."""
    try:
        yield
    except (ClientError, BotoCoreError, S3UploadFailedError, S3TransferFailedError) as exc:
        raise UserError(f"bucket {bucket}: {exc}. {AGAIN}") from None


class S3Store:
    def __init__(self, client: Any, bucket: str, config: TransferConfig | None = None) -> None:
        self.client, self.bucket, self.config = client, bucket, config or transfer_config()

    def already_there(self, f: LocalFile) -> bool:
        try:
            head = self.client.head_object(Bucket=self.bucket, Key=f.key)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return False
            with _explained(self.bucket):
                raise
        return int(head["ContentLength"]) == f.size and head.get("Metadata", {}).get(MTIME_KEY) == str(f.mtime)

    def upload(self, f: LocalFile, progress: Any) -> None:
        with _explained(self.bucket):
            self.client.upload_file(
                str(f.path), self.bucket, f.key, Config=self.config, Callback=progress,
                ExtraArgs={"Metadata": {MTIME_KEY: str(f.mtime)}},
            )

    def page(self, prefix: str, token: str | None) -> tuple[list[tuple[str, int]], str | None]:
        """One ListObjectsV2 page under ``prefix`` and the next page's token (paged by ``bounded.PullBounds``)."""
        extra = {"ContinuationToken": token} if token else {}
        with _explained(self.bucket):
            page = self.client.list_objects_v2(Bucket=self.bucket, Prefix=prefix, **extra)
        found = [(o["Key"], int(o["Size"])) for o in page.get("Contents", []) if not o["Key"].endswith("/")]
        return found, (page.get("NextContinuationToken") if page.get("IsTruncated") else None)

    def download(self, key: str, target: str, progress: Any) -> None:
        with _explained(self.bucket):
            self.client.download_file(self.bucket, key, target, Config=self.config, Callback=progress)
