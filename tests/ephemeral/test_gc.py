"""``ephemeral gc`` / ``ls`` / ``down``: only ci-* stacks past their deadline are destroyed; nothing else."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest

from gpulease.core import vocabulary as v
from gpulease.ephemeral.backend import StackInfo
from gpulease.ephemeral.gc import collect_garbage, list_ephemeral
from gpulease.ephemeral.orchestrator import EXIT_TEARDOWN_FAILED, take_down
from gpulease.ephemeral.progress import PlainProgress
from tests.support.clock import FIXED_NOW
from tests.support.ephemeral import RecordingBackend, send_self

NOW = FIXED_NOW
GRACE = timedelta(hours=1)


def at(hours: float) -> str:
    return v.rfc3339(NOW + timedelta(hours=hours))


@pytest.fixture
def backend() -> RecordingBackend:
    stacks = {
        # past its deadline output: collected
        "ci-100-aaaaaaa": StackInfo("ci-100-aaaaaaa", NOW - timedelta(hours=3), 14),
        # before its deadline (a live run): kept
        "ci-101-bbbbbbb": StackInfo("ci-101-bbbbbbb", NOW - timedelta(minutes=20), 14),
        # up never finished (no outputs), last update 2 h ago > grace: collected
        "ci-102-ccccccc": StackInfo("ci-102-ccccccc", NOW - timedelta(hours=2), 3),
        # up never finished, 10 minutes ago (< grace): kept
        "ci-103-ddddddd": StackInfo("ci-103-ddddddd", NOW - timedelta(minutes=10), 3),
        # past its deadline but an update holds the lock: reported, not touched
        "ci-104-eeeeeee": StackInfo("ci-104-eeeeeee", NOW - timedelta(hours=5), 14, update_in_progress=True),
        # never updated: holds nothing
        "ci-105-fffffff": StackInfo("ci-105-fffffff", None, None),
        # not ephemeral, long expired: never touched
        "aws-lora-7b": StackInfo("aws-lora-7b", NOW - timedelta(days=9), 14),
        # a sweep stack named like an ephemeral one, deadline in its experiments map
        "ci-106-ggggggg": StackInfo("ci-106-ggggggg", NOW - timedelta(hours=4), 20),
    }
    outputs = {
        "ci-100-aaaaaaa": {"deadline": at(-1)},
        "ci-101-bbbbbbb": {"deadline": at(1.5)},
        "ci-104-eeeeeee": {"deadline": at(-3)},
        "aws-lora-7b": {"deadline": at(-200)},
        "ci-106-ggggggg": {"experiments": {"a": {"deadline": at(-2)}, "b": {"deadline": at(-0.5)}}},
    }
    return RecordingBackend(stacks=stacks, outputs_by_stack=outputs)


def test_gc_selects_only_ci_stacks_past_their_deadline(backend: RecordingBackend) -> None:
    out = io.StringIO()
    result = collect_garbage(backend, PlainProgress(out), now=NOW, grace=GRACE, sleep=lambda s: None)
    destroyed = [s for op, s in backend.calls if op == "destroy"]
    removed = [s for op, s in backend.calls if op == "remove"]
    assert destroyed == removed == ["ci-100-aaaaaaa", "ci-102-ccccccc", "ci-106-ggggggg"]
    assert set(backend.stacks) == {"ci-101-bbbbbbb", "ci-103-ddddddd", "ci-104-eeeeeee", "ci-105-fffffff", "aws-lora-7b"}
    assert result["exitCode"] == 0
    checked = {c["stack"]: c for c in result["checked"]}
    assert "aws-lora-7b" not in checked
    assert checked["ci-102-ccccccc"]["deadlineSource"] == "last update + grace"
    assert checked["ci-104-eeeeeee"]["expired"] is False and "in progress" in checked["ci-104-eeeeeee"]["reason"]
    assert checked["ci-105-fffffff"]["reason"] == "never updated: holds no resources"
    assert checked["ci-106-ggggggg"]["deadline"] == at(-0.5), "a sweep's deadline is its latest experiment's"


def test_gc_dry_run_touches_nothing(backend: RecordingBackend) -> None:
    result = collect_garbage(backend, PlainProgress(io.StringIO()), now=NOW, grace=GRACE, dry_run=True, sleep=lambda s: None)
    assert "destroy" not in backend.ops() and "remove" not in backend.ops()
    assert [r["stack"] for r in result["collected"]] == ["ci-100-aaaaaaa", "ci-102-ccccccc", "ci-106-ggggggg"]


def test_gc_keeps_going_past_a_failed_destroy_and_reports_it(backend: RecordingBackend) -> None:
    backend.destroy_failures = 3  # the first stack fails every attempt; the rest succeed
    result = collect_garbage(backend, PlainProgress(io.StringIO()), now=NOW, grace=GRACE, sleep=lambda s: None)
    assert result["exitCode"] == EXIT_TEARDOWN_FAILED
    assert "ci-100-aaaaaaa" in backend.stacks and "ci-102-ccccccc" not in backend.stacks
    assert [s for op, s in backend.calls if op == "remove"] == ["ci-102-ccccccc", "ci-106-ggggggg"]


def test_gc_is_not_stopped_by_a_signal(backend: RecordingBackend) -> None:
    backend.hooks["destroy"] = send_self(__import__("signal").SIGTERM)
    result = collect_garbage(backend, PlainProgress(io.StringIO()), now=NOW, grace=GRACE, sleep=lambda s: None)
    assert result["exitCode"] == 0 and [s for op, s in backend.calls if op == "remove"] == [
        "ci-100-aaaaaaa", "ci-102-ccccccc", "ci-106-ggggggg"
    ]


def test_ls_lists_ephemeral_stacks_or_all(backend: RecordingBackend) -> None:
    names = [s.info.name for s in list_ephemeral(backend, NOW, GRACE)]
    assert names == sorted(n for n in backend.stacks if n.startswith("ci-"))
    assert "aws-lora-7b" in [s.info.name for s in list_ephemeral(backend, NOW, GRACE, include_all=True)]


def test_down_destroys_and_removes_and_a_missing_stack_counts_as_gone(backend: RecordingBackend) -> None:
    assert take_down(backend, PlainProgress(io.StringIO()), "ci-101-bbbbbbb")["exitCode"] == 0
    assert "ci-101-bbbbbbb" not in backend.stacks
    gone = take_down(backend, PlainProgress(io.StringIO()), "ci-999-0000000")
    assert gone["exitCode"] == 0 and gone["teardown"]["removed"] is True
