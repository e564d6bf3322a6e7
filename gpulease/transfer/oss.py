"""OSS: uploads and downloads through the OSS SDK v2's managers (``alibabacloud-oss-v2``: ``Uploader`` and
``Downloader``), which split a large file into parts sent in parallel and, with ``enable_checkpoint``, record the
parts done in a checkpoint file so that a cut transfer resumes where it stopped (the SDK's ``UploaderOptions`` /
``DownloaderOptions`` docstrings; https://www.alibabacloud.com/help/en/oss/developer-reference/upload-manager).
The checkpoints live under ``~/.cache/gpulease/oss-checkpoints/`` (the SDK takes the folder of the path it is
given, so the path ends with a separator: ``os.path.dirname(basedir)`` in ``alibabacloud_oss_v2/checkpoint.py``).

Tested against a loopback server that answers the OSS object API (``tests/support/oss_objects.py``), including a
push cut in the middle that resumes from the checkpoint; not against OSS itself."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from gpulease.core.errors import UserError
from gpulease.transfer.files import AGAIN, MTIME_KEY, LocalFile
from gpulease.transfer.noreplace import ObjectFetchError

CHECKPOINT_DIR = Path.home() / ".cache" / "gpulease" / "oss-checkpoints"
PART_SIZE = 64 * 1024 * 1024


def _delta(progress: Callable[[int], None]) -> Callable[[int, int, int], None]:
    """The SDK reports ``(increment, transferred, total)``; the bar wants the increment."""
    return lambda increment, _transferred, _total: progress(increment)


@contextmanager
def _explained(bucket: str, kind: type[UserError] = UserError) -> Iterator[None]:
    """An OSS refusal or a cut transfer (the SDK's errors) as one message naming the bucket."""
    import alibabacloud_oss_v2 as oss

    try:
        yield
    except oss.exceptions.BaseError as exc:
        raise kind(f"bucket {bucket}: {exc}. {AGAIN}") from None


class OssStore:
    temp_suffixes = (".temp",)
    """The Downloader writes to ``<file>.temp`` first (``alibabacloud_oss_v2.defaults.DEFAULT_TEMP_FILE_SUFFIX``)."""

    def __init__(self, client: Any, bucket: str, checkpoint_dir: Path | None = None) -> None:
        self.client, self.bucket = client, bucket
        self.checkpoint_dir = checkpoint_dir or CHECKPOINT_DIR

    def _folder(self) -> str:
        return os.path.join(str(self.checkpoint_dir), "")

    def bound_by(self, limits: Any) -> None:
        """Every HTTP answer this client reads is handed to ``limits.watch`` (``bounded.PullBounds``: shut down at
        the deadline), and no request is sent past the deadline, as on S3. The SDK sends every request through its
        client's ``http_client.send`` (``alibabacloud_oss_v2/_client.py``, ``_SyncClientImpl._send``: the
        ``RequestsHttpClient`` of ``transport/requests_client.py``), whose answer wraps a ``requests`` response; its
        ``raw`` is the urllib3 response the body is read from. A request the SDK sends without streaming (a listing)
        has its body read inside ``send``: it is sent streaming here and read once watched."""
        http_client = self.client._client._options.http_client
        send = http_client.send

        def bounded_send(request: Any, **kwargs: Any) -> Any:
            limits.check(f"sending {request.method} {str(request.url).split('?')[0]}")
            preload = not kwargs.get("stream", False)
            response = send(request, **{**kwargs, "stream": True})
            limits.watch(response._internal_response.raw)
            if preload:
                response.read()
                response.close()
            return response

        http_client.send = bounded_send

    def already_there(self, f: LocalFile) -> bool:
        import alibabacloud_oss_v2 as oss

        try:
            head = self.client.head_object(oss.HeadObjectRequest(bucket=self.bucket, key=f.key))
        except oss.exceptions.OperationError as exc:
            if getattr(exc.unwrap(), "status_code", None) == 404:
                return False
            with _explained(self.bucket):
                raise
        return int(head.content_length or -1) == f.size and (head.metadata or {}).get(MTIME_KEY) == str(f.mtime)

    def upload(self, f: LocalFile, progress: Callable[[int], None]) -> None:
        import alibabacloud_oss_v2 as oss

        self.checkpoint_dir.mkdir(parents=True, exist_ok=True)
        request = oss.PutObjectRequest(bucket=self.bucket, key=f.key, metadata={MTIME_KEY: str(f.mtime)},
                                       progress_fn=_delta(progress))
        with _explained(self.bucket):
            uploader = self.client.uploader(part_size=PART_SIZE, enable_checkpoint=True, checkpoint_dir=self._folder())
            uploader.upload_file(request, filepath=str(f.path))

    def page(self, prefix: str, token: str | None) -> tuple[list[tuple[str, int, str | None]], str | None]:
        """One ListObjectsV2 page under ``prefix`` (key, size, ETag per object) and the next page's token (paged by
        ``bounded.PullBounds``)."""
        import alibabacloud_oss_v2 as oss

        with _explained(self.bucket):
            page = self.client.list_objects_v2(oss.ListObjectsV2Request(bucket=self.bucket, prefix=prefix,
                                                                        continuation_token=token))
        found = [(o.key, int(o.size), o.etag) for o in page.contents or [] if not o.key.endswith("/")]
        if not page.is_truncated:
            return found, None
        if not page.next_continuation_token:  # fail closed: the rest cannot be asked for, so it is not complete
            raise UserError(f"bucket {self.bucket}: the listing under {prefix!r} says it is truncated but gives no "
                            "NextContinuationToken; refusing to take it as complete")
        return found, page.next_continuation_token

    def download(self, key: str, target: str, progress: Callable[[int], None]) -> None:
        import alibabacloud_oss_v2 as oss

        self.checkpoint_dir.mkdir(parents=True, exist_ok=True)
        request = oss.GetObjectRequest(bucket=self.bucket, key=key, progress_fn=_delta(progress))
        with _explained(self.bucket, ObjectFetchError):
            downloader = self.client.downloader(part_size=PART_SIZE, enable_checkpoint=True,
                                                checkpoint_dir=self._folder())
            downloader.download_file(request, filepath=target)
