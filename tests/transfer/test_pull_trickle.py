"""The pull's deadline holds inside one read: a loopback S3 server that trickles an object's body a byte at a time,
stalls in the middle of it, trickles a listing, or answers a truncated listing without a continuation token. Each
pull ends within moments of its deadline (not after botocore's read timeout times its retries) with one line."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from botocore.config import Config
from rich.console import Console

from gpulease.core.errors import UserError
from gpulease.transfer.bounded import PullBounds
from gpulease.transfer.locate import StackBucket
from gpulease.transfer.run import pull
from gpulease.transfer.s3 import S3Store, client_config
from tests.support.trickle import send_slowly
from tests.support.trickle_s3 import S3Handler, TrickleServer, s3_client, serving

SIZE = 1_000_000
GIVE_UP_SECONDS = 4
WHERE = StackBucket(stack="aws-prep-7b", cloud="aws", bucket="bkt", region="us-east-1", found_by="--bucket")


def _listing(prefix: str, truncated: bool = False) -> bytes:
    row = f"<Contents><Key>{prefix}model.bin</Key><Size>{SIZE}</Size></Contents>" if prefix == "final/" else ""
    flag = "true" if truncated else "false"
    return (f'<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>bkt</Name><Prefix>{prefix}</Prefix>'
            f"<IsTruncated>{flag}</IsTruncated>{row}</ListBucketResult>").encode()


class _Server(TrickleServer):
    mode = "trickle"


class _Handler(S3Handler):
    server: _Server
    size = SIZE

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        mode = self.server.mode
        if "list-type=2" in self.path:
            body = _listing("final/" if "prefix=final" in self.path else "logs/", truncated=mode == "no-token")
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if mode == "trickle-listing":
                return self._trickle(body)
            self.wfile.write(body)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(SIZE))
        self.end_headers()
        if mode == "stall":
            self.wfile.write(b"x" * 1000)
            self.wfile.flush()
            self.server.done.wait(GIVE_UP_SECONDS)
            self.close_connection = True
            return
        self._trickle(b"x" * SIZE)

    def _trickle(self, body: bytes) -> None:
        if not send_slowly(self.wfile, body, time.monotonic() + GIVE_UP_SECONDS, self.server.done.is_set):
            self.close_connection = True


@pytest.fixture
def server() -> Iterator[_Server]:
    with serving(_Handler, _Server) as srv:
        yield srv


def _store(srv: _Server, config: Config | None = None) -> S3Store:
    return S3Store(s3_client(srv, config), "bkt")


@pytest.mark.parametrize("mode", ["trickle", "stall", "trickle-listing"])
def test_a_slow_or_stalling_server_is_cut_off_at_the_pulls_deadline(server: _Server, tmp_path: Path,
                                                                     mode: str) -> None:
    server.mode = mode
    store = _store(server)
    start = time.monotonic()
    with pytest.raises(UserError, match=r"^pull: past the pull's deadline \(--deadline-seconds\) \(0.5 s\) while .*; "
                                        r"the files received in full are kept \(the one cut off is not\)"):
        pull(WHERE, store, ["final/"], tmp_path / "dest", Console(quiet=True), bar=False,
             limits=PullBounds(seconds=0.5))
    assert 0.5 <= time.monotonic() - start < 3  # botocore's own retries would take minutes
    assert not (tmp_path / "dest" / "final" / "model.bin").exists()


def test_a_truncated_listing_without_a_continuation_token_is_refused(server: _Server, tmp_path: Path) -> None:
    server.mode = "no-token"
    with pytest.raises(UserError, match=r"^bucket bkt: the listing under 'final/' says it is truncated but gives no "
                                        r"NextContinuationToken; refusing to take it as complete$"):
        pull(WHERE, _store(server), ["final/"], tmp_path / "dest", Console(quiet=True), bar=False)


def test_the_s3_client_bounds_each_read_and_its_retries() -> None:
    config = client_config()
    assert (config.connect_timeout, config.read_timeout, config.retries) == (
        10, 20, {"max_attempts": 3, "mode": "standard"})


def test_a_read_that_times_out_on_every_attempt_is_one_line_naming_the_last_error(server: _Server,
                                                                                   tmp_path: Path) -> None:
    server.mode = "stall"
    quick = client_config().merge(Config(read_timeout=0.2, retries={"max_attempts": 1}))
    # That object fails alone (the others would go on), its reason one line naming the last error.
    result = pull(WHERE, _store(server, quick), ["final/"], tmp_path / "dest", Console(quiet=True), bar=False,
                  limits=PullBounds(seconds=60))
    assert [f["key"] for f in result["failed"]] == ["final/model.bin"]
    assert re.match(r"^bucket bkt: 3 attempts failed, the last with: Read timeout on endpoint URL: .*Run the same "
                    r"command again to resume", result["failed"][0]["reason"])
    assert "\n" not in result["failed"][0]["reason"]
