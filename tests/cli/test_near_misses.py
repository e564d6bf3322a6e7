"""A near miss gets the nearest valid word: a stack name (from the kit's stacks/ and the folder the command runs
in), a flag, a subcommand of a group."""

from __future__ import annotations

import shutil

import pytest

from gpulease.cli.main import main
from gpulease.review import stacks

EXAMPLE = stacks.PROJECT_ROOT / "stacks" / "Pulumi.aws-lora-7b.yaml"


@pytest.mark.parametrize("argv", [["check", "aws-lora7b"], ["up", "aws-lora7b"], ["cost", "aws-lora7b"],
                                  ["plan", "aws-lora7b"]])
def test_a_mistyped_kit_stack_name_gets_the_nearest(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "no stack 'aws-lora7b'" in err and "did you mean 'aws-lora-7b'?" in err
    assert len(err.strip().splitlines()) == 1


def test_a_mistyped_stack_of_the_users_folder_gets_the_nearest(tmp_path, monkeypatch, capsys):
    shutil.copy(EXAMPLE, tmp_path / "Pulumi.my-llama.yaml")
    monkeypatch.chdir(tmp_path)
    assert main(["check", "my-lama"]) == 2
    err = capsys.readouterr().err
    assert "did you mean 'my-llama'?" in err and f"in {tmp_path}, {tmp_path / 'stacks'} or " in err


@pytest.mark.parametrize(("argv", "hint"), [
    (["logs", "x", "--lnies", "5"], "--lnies: did you mean '--lines'?"),
    (["plan", "aws-lora-7b", "--polcy-config", "p.json"], "--polcy-config: did you mean '--policy-config'?"),
    (["size", "--params", "7B", "--mehtod", "lora"], "--mehtod: did you mean '--method'?"),
    (["down", "x", "--yse"], "--yse: did you mean '--yes'?"),
    (["catalog", "refresh", "--regoins", "us-east-1"], "--regoins: did you mean '--regions'?"),
    (["ephemeral", "rn"], "did you mean 'run'?"),
])
def test_a_mistyped_flag_or_subcommand_gets_the_nearest(argv, hint, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert hint in err and len(err.strip().splitlines()) == 1


def test_a_flag_far_from_every_flag_gets_no_guess(capsys):
    with pytest.raises(SystemExit):
        main(["size", "--zzzzzzzz"])
    assert "did you mean" not in capsys.readouterr().err
