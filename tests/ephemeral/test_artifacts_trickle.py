"""``--collect-minutes`` holds inside a download already running: a loopback S3 server that trickles an artifact's
body a byte at a time is cut off when the collect step's time is up (not after botocore's read timeout times its
retries), the artifact named as not collected and the bucket kept, nothing half-written left in place."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpulease.ephemeral.artifact_bounds import ArtifactBounds
from gpulease.ephemeral.channel import BucketChannel
from tests.support.trickle import send_slowly
from tests.support.trickle_s3 import S3Handler, TrickleServer, s3_client, serving

JOB = "ci/_gpulease/jobs/j1/artifacts/"
OUTPUTS = {"checkpointUri": "s3://bkt/ci/"}
SIZE = 1_000_000
GIVE_UP_SECONDS = 6  # the server's own bound: a regression fails the test instead of hanging it


class _Handler(S3Handler):
    size = SIZE

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        if "list-type=2" in self.path:
            body = (f'<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>bkt</Name><Prefix>{JOB}</Prefix>'
                    f"<IsTruncated>false</IsTruncated><Contents><Key>{JOB}model.bin</Key><Size>{SIZE}</Size>"
                    "</Contents></ListBucketResult>").encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(SIZE))
        self.send_header("ETag", '"e"')
        self.end_headers()
        if not send_slowly(self.wfile, b"x" * SIZE, time.monotonic() + GIVE_UP_SECONDS, self.server.done.is_set):
            self.close_connection = True


@pytest.fixture
def server() -> Iterator[TrickleServer]:
    with serving(_Handler) as srv:
        yield srv


def test_a_trickling_artifact_is_cut_off_at_the_collect_deadline(server: TrickleServer, tmp_path: Path) -> None:
    client = s3_client(server)
    bounds = ArtifactBounds(seconds=0.6)
    start = time.monotonic()
    got = BucketChannel(client).download_artifacts(OUTPUTS, "j1", tmp_path / "art", bounds)
    took = time.monotonic() - start
    assert 0.5 <= took < 3, took  # the server would trickle for 6 s, botocore's retries for minutes
    assert list(got) == []
    assert got.failed == ["'model.bin' (not collected: CollectCutError: past the collect deadline (--collect-minutes "
                          "0.01) while downloading it; the part received is not kept)"]
    assert [p.name for p in (tmp_path / "art").iterdir()] == []
    assert len(client.list_objects_v2(Bucket="bkt", Prefix=JOB)["Contents"]) == 1  # the client sends again
