"""``gpulease pull`` is bounded as staging is (the same ``Deadline`` and ``PageGuard``): a listing whose next page
loops or that runs past the page cap, and a download that trickles past the overall deadline, each end in one clear
error; the bounds are in the output. Fake stores for the listing shapes moto cannot serve; moto's S3 on loopback for
the real transfer path (s3transfer's progress callback)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from rich.console import Console

from gpulease.cli import main
from gpulease.core.errors import UserError
from gpulease.transfer.bounded import DEFAULT_DEADLINE_SECONDS, PullBounds
from gpulease.transfer.locate import StackBucket
from gpulease.transfer.run import pull
from instance import bounds

STACK = "aws-prep-7b"
WHERE = StackBucket(stack=STACK, cloud="aws", bucket="b12", region="us-west-2", found_by="--bucket")


class LoopingStore:
    """A listing whose next-page token is always the same one, or always a new one. The store bounds itself: a pull
    that reads on past ``most`` pages fails the test at once instead of hanging it (a missing loop check)."""

    def __init__(self, same: bool, most: int = 50) -> None:
        self.same, self.reads, self.most = same, 0, most

    def page(self, prefix: str, token: str | None) -> tuple[list[tuple[str, int]], str | None]:
        self.reads += 1
        if self.reads > self.most:
            raise AssertionError(f"the pull read {self.reads} pages of a looping listing; it must stop at the loop")
        return [], "again" if self.same else f"t{self.reads}"


class TricklingStore:
    """One object whose download reports a byte every 10 ms and never ends by itself; after ``most`` seconds it
    fails the test at once (a pull that no longer cuts it off at its deadline) instead of hanging it."""

    def __init__(self, most: float = 3.0) -> None:
        self.most = most

    def page(self, prefix: str, token: str | None) -> tuple[list[tuple[str, int]], str | None]:
        return [(f"{prefix}model.bin", 10**9)], None

    def download(self, key: str, target: str, progress) -> None:
        end = time.monotonic() + self.most
        while True:
            if time.monotonic() > end:
                raise AssertionError(f"the download of {key} trickled on for {self.most} s; the pull's deadline "
                                     "must cut it off")
            with Path(target).open("ab") as out:
                out.write(b"x")
            progress(1)
            time.sleep(0.01)


def _pull(store, tmp_path: Path, limits: PullBounds) -> dict:
    return pull(WHERE, store, ["final/"], tmp_path / "dest", Console(quiet=True), bar=False, limits=limits)


def test_a_listing_whose_next_page_loops_is_refused(tmp_path: Path) -> None:
    store = LoopingStore(same=True)
    with pytest.raises(UserError, match=r"^pull: b12/final/: the listing's next page again was already read "
                                        r"\(the pagination loops\)$"):
        _pull(store, tmp_path, PullBounds())
    assert store.reads == 2


def test_a_listing_past_the_page_cap_is_refused(tmp_path: Path) -> None:
    store = LoopingStore(same=False)
    with pytest.raises(UserError, match=r"^pull: b12/final/: the listing has more than 5 pages; refusing"):
        _pull(store, tmp_path, PullBounds(max_pages=5))
    assert store.reads == 5


def test_a_trickling_download_ends_at_the_pulls_deadline(tmp_path: Path) -> None:
    start = time.monotonic()
    with pytest.raises(UserError, match=r"^pull: past the pull's deadline \(--deadline-seconds\) \(0.3 s\) "
                                        r"while downloading final/model.bin; the files received in full are kept"):
        _pull(TricklingStore(), tmp_path, PullBounds(seconds=0.3))
    assert 0.3 <= time.monotonic() - start < 2


def test_the_default_bounds_are_the_tables_and_in_the_output(aws, tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    s3 = aws.client("s3")
    s3.create_bucket(Bucket="named-bucket")
    s3.put_object(Bucket="named-bucket", Key="final/model.safetensors", Body=b"w" * 100)
    assert DEFAULT_DEADLINE_SECONDS == bounds.STAGE_DEFAULT == 8 * 3600
    assert main(["pull", STACK, "--bucket", "named-bucket", "--dest", str(tmp_path / "d"), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["bounds"] == {"deadlineSeconds": 28800.0, "maxPages": 10_000, "pages": 2}  # final/ and logs/


def test_the_deadline_cuts_a_real_s3_download_through_its_progress_callback(aws, tmp_path, monkeypatch) -> None:
    from gpulease.transfer.s3 import S3Store
    from instance.staging_http import DeadlineError

    s3 = aws.client("s3")
    s3.create_bucket(Bucket="named-bucket")
    s3.put_object(Bucket="named-bucket", Key="final/model.safetensors", Body=b"w" * 100_000)
    limits = PullBounds()

    def past(doing: str) -> None:
        if doing.startswith("downloading"):
            raise DeadlineError(f"past the pull's deadline (1 s) while {doing}")

    monkeypatch.setattr(limits.deadline, "check", past)
    with pytest.raises(UserError, match=r"while downloading final/model.safetensors; the files received in full are kept"):
        _pull(S3Store(s3, "named-bucket"), tmp_path, limits)
    assert not (tmp_path / "dest" / "final" / "model.safetensors").exists()


@pytest.mark.parametrize("given", ["0", "-1", "nan", "inf", "1e999", "abc", "604801"])
def test_a_bad_deadline_is_one_line(given: str, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["pull", STACK, "--bucket", "named-bucket", "--deadline-seconds", given])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"{given!r} is not a number of seconds; accepted: above 0, at most 604800" in err and "Traceback" not in err
