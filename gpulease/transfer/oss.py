"""OSS: uploads and downloads through the OSS SDK v2's managers (``alibabacloud-oss-v2``: ``Uploader`` and
``Downloader``), which split a large file into parts sent in parallel and, with ``enable_checkpoint``, record the
parts done in a checkpoint file so that a cut transfer resumes where it stopped (the SDK's ``UploaderOptions`` /
``DownloaderOptions`` docstrings; https://www.alibabacloud.com/help/en/oss/developer-reference/upload-manager).
The checkpoints live under ``~/.cache/gpulease/oss-checkpoints``.

Not exercised against OSS here (the tests' Alibaba stub serves no object uploads); the calls follow the SDK's
signatures in ``alibabacloud_oss_v2/uploader.py`` and ``downloader.py``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpulease.transfer.files import MTIME_KEY, LocalFile

CHECKPOINT_DIR = Path.home() / ".cache" / "gpulease" / "oss-checkpoints"
PART_SIZE = 64 * 1024 * 1024


def _delta(progress: Callable[[int], None]) -> Callable[[int, int, int], None]:
    """The SDK reports ``(increment, transferred, total)``; the bar wants the increment."""
    return lambda increment, _transferred, _total: progress(increment)


class OssStore:
    def __init__(self, client: Any, bucket: str, checkpoint_dir: Path = CHECKPOINT_DIR) -> None:
        self.client, self.bucket, self.checkpoint_dir = client, bucket, checkpoint_dir

    def already_there(self, f: LocalFile) -> bool:
        import alibabacloud_oss_v2 as oss

        try:
            head = self.client.head_object(oss.HeadObjectRequest(bucket=self.bucket, key=f.key))
        except oss.exceptions.OperationError as exc:
            if getattr(exc.unwrap(), "status_code", None) == 404:
                return False
            raise
        return int(head.content_length or -1) == f.size and (head.metadata or {}).get(MTIME_KEY) == str(f.mtime)

    def upload(self, f: LocalFile, progress: Callable[[int], None]) -> None:
        import alibabacloud_oss_v2 as oss

        self.checkpoint_dir.mkdir(parents=True, exist_ok=True)
        request = oss.PutObjectRequest(bucket=self.bucket, key=f.key, metadata={MTIME_KEY: str(f.mtime)},
                                       progress_fn=_delta(progress))
        self.client.uploader(part_size=PART_SIZE, enable_checkpoint=True,
                             checkpoint_dir=str(self.checkpoint_dir)).upload_file(request, filepath=str(f.path))

    def objects(self, prefix: str) -> list[tuple[str, int]]:
        import alibabacloud_oss_v2 as oss

        out = []
        for page in self.client.list_objects_v2_paginator().iter_page(
            oss.ListObjectsV2Request(bucket=self.bucket, prefix=prefix)
        ):
            out.extend((o.key, int(o.size)) for o in page.contents or [] if not o.key.endswith("/"))
        return out

    def download(self, key: str, target: str, progress: Callable[[int], None]) -> None:
        import alibabacloud_oss_v2 as oss

        self.checkpoint_dir.mkdir(parents=True, exist_ok=True)
        request = oss.GetObjectRequest(bucket=self.bucket, key=key, progress_fn=_delta(progress))
        self.client.downloader(part_size=PART_SIZE, enable_checkpoint=True,
                               checkpoint_dir=str(self.checkpoint_dir)).download_file(request, filepath=target)
