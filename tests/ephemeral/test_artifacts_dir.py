"""``gpulease ephemeral run --artifacts-dir``: never the stack files' folder or inside it, never a folder holding
the project's Pulumi.yaml, the base stack file or the stack files' folder; refused in one line before anything is
created (no backend call, no credentials asked)."""

from __future__ import annotations

from typing import Any

import pytest

from gpulease import cli
from gpulease.cli import ephemeral
from gpulease.review.stacks import PROJECT_ROOT
from tests.support.ephemeral import RecordingBackend, ScriptedChannel

STACKS = PROJECT_ROOT / "stacks"


@pytest.fixture
def stand_ins(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    made: dict[str, Any] = {"backend": RecordingBackend(), "channel": ScriptedChannel(), "credentials": []}
    monkeypatch.setattr(ephemeral, "BACKEND_FACTORY", lambda args: made["backend"])
    monkeypatch.setattr(ephemeral, "CHANNEL_FACTORY", lambda cfg: made["channel"])
    monkeypatch.setattr(ephemeral, "CREDENTIALS_CHECK", lambda cloud, stack: made["credentials"].append(stack) or "env")
    return made


def _never(outputs, job_id, dest):
    raise AssertionError(f"artifacts downloaded into {dest}")


@pytest.mark.parametrize(
    ("where", "named"),
    [
        (STACKS, "stacks"),                      # the stack files' folder itself
        (STACKS / "art", "inside"),              # a folder inside it
        (PROJECT_ROOT, "Pulumi.yaml"),           # the project folder: it holds Pulumi.yaml
        (PROJECT_ROOT.parent, "Pulumi.yaml"),    # a folder holding the project
        (STACKS / "Pulumi.aws-lora-7b.yaml", "Pulumi.aws-lora-7b.yaml"),  # the base stack file
    ],
)
def test_an_artifacts_dir_among_the_inputs_is_refused_before_anything(stand_ins, capsys, where, named) -> None:
    stand_ins["channel"].download_artifacts = _never  # a run let through writes nothing into the project
    before = sorted(p.name for p in STACKS.iterdir())
    code = cli.main(["ephemeral", "run", "--base-stack", "aws-lora-7b", "--artifacts-dir", str(where), "--", "x"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith(f"gpulease: --artifacts-dir {where}: ") and named in err
    assert stand_ins["backend"].calls == [] and stand_ins["credentials"] == []
    assert sorted(p.name for p in STACKS.iterdir()) == before and not (STACKS / "art").exists()


def test_a_symlink_to_the_stack_files_folder_is_refused_too(stand_ins, tmp_path, capsys) -> None:
    stand_ins["channel"].download_artifacts = _never
    link = tmp_path / "art"
    link.symlink_to(STACKS)
    assert cli.main(["ephemeral", "run", "--base-stack", "aws-lora-7b", "--artifacts-dir", str(link), "--", "x"]) == 2
    assert "--artifacts-dir" in capsys.readouterr().err and stand_ins["backend"].calls == []


def test_a_folder_of_its_own_in_the_project_is_accepted() -> None:
    reads, within = ephemeral._artifact_inputs(ephemeral.build_config("aws-lora-7b", "ci-x", ci_run="r"))
    assert STACKS in within and PROJECT_ROOT / "Pulumi.yaml" in reads
    ephemeral.refuse_input_folder(PROJECT_ROOT / "artifacts", reads, within=within)  # the default: no refusal
