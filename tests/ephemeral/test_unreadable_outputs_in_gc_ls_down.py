"""``ephemeral gc``, ``ls`` and ``down`` when one stack's outputs cannot be read (``pulumi stack output --json``
answered with nothing or no JSON object: ``OutputsUnreadableError``).

- gc still sweeps every other ``ci-*`` stack past its deadline: one unreadable stack never leaves the others'
  instances billing. The unreadable one is not destroyed blind (its outputs name the buckets to keep); it is
  named, and gc ends with the teardown-failed code.
- ls lists the stacks, the unreadable one marked as such.
- down fails in one line (exit 3, no traceback), the workflow's clean-up step's log says why; collect fails in
  one line too.
"""

from __future__ import annotations

import io
from datetime import timedelta
from typing import Any

import pytest

from gpulease import cli
from gpulease.cli import ephemeral
from gpulease.core import vocabulary as v
from gpulease.ephemeral.backend import OutputsUnreadableError, StackInfo
from gpulease.ephemeral.gc import collect_garbage
from gpulease.ephemeral.orchestrator import EXIT_TEARDOWN_FAILED
from gpulease.ephemeral.progress import PlainProgress
from tests.support.clock import FIXED_NOW
from tests.support.ephemeral import RecordingBackend

BAD, GOOD = "ci-1-aaaaaaa", "ci-2-bbbbbbb"


class Unreadable(RecordingBackend):
    """The stand-in backend, one stack's outputs unreadable."""

    def outputs(self, stack: str) -> dict[str, Any]:
        if stack == BAD:
            self.calls.append(("outputs", stack))
            raise OutputsUnreadableError(f"cannot read the outputs of stack {stack!r}: `pulumi stack output --json` "
                                         "did not answer with a JSON object (Expecting value)")
        return super().outputs(stack)


def two_expired() -> Unreadable:
    past = v.rfc3339(FIXED_NOW - timedelta(hours=1))
    return Unreadable(
        stacks={BAD: StackInfo(BAD, FIXED_NOW - timedelta(hours=3), 14),
                GOOD: StackInfo(GOOD, FIXED_NOW - timedelta(hours=3), 14)},
        outputs_by_stack={GOOD: {"deadline": past, "checkpointUri": "s3://ck-two/runs/x/"}},
    )


def test_gc_still_sweeps_the_other_stacks() -> None:
    backend = two_expired()
    out = io.StringIO()
    result = collect_garbage(backend, PlainProgress(out), now=FIXED_NOW, grace=timedelta(hours=1),
                             sleep=lambda s: None)
    assert ("destroy", GOOD) in backend.calls, f"the other stack's instance was left billing: {backend.calls}"
    assert backend.kept_buckets == [("ck-two",)]
    assert ("destroy", BAD) not in backend.calls, "never destroyed without knowing which buckets to keep"
    assert result["exitCode"] == EXIT_TEARDOWN_FAILED
    assert BAD in out.getvalue()


def test_ls_lists_the_stacks_and_names_the_unreadable_one(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setattr(ephemeral, "BACKEND_FACTORY", lambda args: two_expired())
    cli.main(["ephemeral", "ls", "--json"])
    out = capsys.readouterr().out
    assert GOOD in out and BAD in out


def test_down_of_a_stack_with_unreadable_outputs_fails_in_one_line(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    backend = two_expired()
    monkeypatch.setattr(ephemeral, "BACKEND_FACTORY", lambda args: backend)
    code = cli.main(["ephemeral", "down", BAD])
    err = capsys.readouterr().err
    assert code == EXIT_TEARDOWN_FAILED
    assert "cannot read the outputs" in err.strip().splitlines()[-1] and "Traceback" not in err
    assert ("destroy", BAD) not in backend.calls


def test_collect_from_a_stack_with_unreadable_outputs_fails_in_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path,
                                                                       capsys) -> None:
    monkeypatch.setattr(ephemeral, "BACKEND_FACTORY", lambda args: two_expired())
    code = cli.main(["ephemeral", "collect", BAD, "--artifacts-dir", str(tmp_path / "art")])
    err = capsys.readouterr().err
    assert code != 0 and "cannot read the outputs" in err.strip().splitlines()[-1] and "Traceback" not in err


def test_ls_shows_each_stacks_buckets_and_the_unreadable_one(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setattr(ephemeral, "BACKEND_FACTORY", lambda args: two_expired())
    monkeypatch.setenv("COLUMNS", "300")
    assert cli.main(["ephemeral", "ls"]) == 0
    rows = {line.split()[1]: line for line in capsys.readouterr().out.splitlines() if "ci-" in line}
    assert "ck-two" in rows[GOOD], "the bucket gc and down keep is named"
    assert "outputs unreadable" in rows[BAD]
