"""``gpulease up`` of a stack whose name starts with a dash prints every command it names for that stack so that,
pasted into bash, the command's parser takes the stack as its argument: the review's ``gpulease plan ...`` line
(which shows the advisory findings) names it after ``--`` as the connect, status and logs lines do."""

from __future__ import annotations

import re
import subprocess

import pytest

from gpulease.cli.main import build_parser, main
from gpulease.lifecycle import capacity, deploy, verdict
from gpulease.review import stacks
from tests.support.ephemeral import RecordingBackend

EXAMPLE = stacks.PROJECT_ROOT / "stacks" / "Pulumi.aws-lora-7b.yaml"


def _pasted(line: str) -> list[str]:
    done = subprocess.run(["bash", "-c", 'gpulease() { printf "%s\\0" "$@"; }; ' + line],
                          capture_output=True, check=True)
    return done.stdout.decode().split("\0")[:-1]


def test_the_advisory_plan_line_of_up_names_a_dash_named_stack_after_the_end_of_options(
        tmp_path, monkeypatch: pytest.MonkeyPatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "300")
    (tmp_path / "Pulumi.-ab.yaml").write_text(EXAMPLE.read_text())

    def review(path, stack):
        return verdict.Verdict(stack=stack, status="pass", hourly_usd=0.35, worst_case="$2.80", budget_usd=40.0,
                               advisory=2)

    monkeypatch.setattr(verdict, "REVIEW", review)
    monkeypatch.setattr(capacity, "REVIEW_PINNED", lambda path, stack, overrides: review(path, stack))
    backend = RecordingBackend()
    monkeypatch.setattr(deploy, "BACKEND", lambda: backend)
    monkeypatch.setattr(capacity, "ZONES", {"aws": lambda region: lambda itype: ["us-east-1a", "us-east-1b"]})
    assert main(["up", "--no-wait", "--", "-ab"]) == 0
    err = capsys.readouterr().err
    found = re.search(r"`(gpulease plan [^`]*)` shows them", err)
    assert found, err
    argv = _pasted(found.group(1))
    assert argv[0] == "plan", found.group(1)
    try:
        args = build_parser("plan").parse_args(argv)
    except SystemExit:
        pytest.fail(f"{found.group(1)!r}, pasted, is refused by plan's parser (the stack read as options)")
    assert args.stacks == ["-ab"], found.group(1)
