"""Every command taking STACK finds a stack file where the docs say (the folder it runs in, its ``stacks/``, then the
kit's ``stacks/``); a name found nowhere is one line naming where it looked, the nearest name and ``gpulease init``;
the live commands (status, logs, ssh) refuse a mistyped name too rather than ask the backend; the shell completion
completes stack names, a stack written a moment ago included."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpulease.cli.main import main
from gpulease.review import stacks

EXAMPLE = stacks.PROJECT_ROOT / "stacks" / "Pulumi.aws-lora-7b.yaml"
COMMANDS = [["check"], ["plan"], ["up"], ["down"], ["logs"], ["status"], ["ssh"], ["resume"], ["cost"],
            ["push", "STACK", "data.txt"], ["pull", "STACK", "out"]]


def _argv(command: list[str], stack: str) -> list[str]:
    return [stack if word == "STACK" else word for word in command] if "STACK" in command else [*command, stack]


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user's folder with its own stacks/ holding one stack, the command run there."""
    (tmp_path / "stacks").mkdir()
    shutil.copy(EXAMPLE, tmp_path / "stacks" / "Pulumi.my-llama.yaml")
    (tmp_path / "data.txt").write_text("x")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_a_mistyped_stack_name_is_one_line_naming_where_it_looked_and_the_nearest(folder, capsys, command):
    assert main(_argv(command, "my-lama")) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"gpulease: no stack 'my-lama' in {folder}, {folder / 'stacks'} or "
                          f"{stacks.PROJECT_ROOT / 'stacks'}; did you mean 'my-llama'?")
    assert err.endswith("; `gpulease init` writes a new one\n")


@pytest.mark.parametrize("command", [["check"], ["plan"], ["up"], ["cost"], ["push", "STACK", "data.txt"]],
                         ids=lambda c: c[0])
def test_a_name_found_nowhere_names_the_folders_and_gpulease_init(tmp_path, monkeypatch, capsys, command):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data.txt").write_text("x")
    assert main(_argv(command, "zzzz-qqqq")) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"gpulease: no stack 'zzzz-qqqq' in {tmp_path}, {tmp_path / 'stacks'} or ")
    assert "did you mean" not in err and err.endswith("`gpulease init` writes a new one\n")


def test_a_stack_in_the_folders_stacks_is_found_by_name(folder, capsys):
    assert main(["cost", "my-llama", "--json"]) == 0
    [row] = json.loads(capsys.readouterr().out)["data"]["stacks"]
    assert row["stack"] == "my-llama"
    assert stacks.resolve_one("my-llama") == folder / "stacks" / "Pulumi.my-llama.yaml"


def test_ssh_of_a_found_stack_reads_its_spec_from_the_folder(folder, tmp_path, capsys):
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps({"instanceId": "i-0123456789abcdef0", "publicIp": "198.51.100.1"}))
    assert main(["ssh", "my-llama", "--outputs", str(outputs), "--print"]) == 0
    assert "ubuntu@198.51.100.1" in capsys.readouterr().out  # the user and the mode from the folder's stack file


def test_a_project_folder_of_its_own_is_named_as_not_searched(tmp_path, monkeypatch, capsys):
    (tmp_path / "Pulumi.yaml").write_text("name: webshop\nruntime: nodejs\n")
    monkeypatch.chdir(tmp_path)
    assert main(["up", "webshop-dev"]) == 2
    assert (f"in {stacks.PROJECT_ROOT / 'stacks'} (not {tmp_path}: a Pulumi project of its own, whose stacks "
            "`gpulease plan .` reviews)") in capsys.readouterr().err


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_bash_completion_completes_stack_names(folder, capsys):
    assert main(["completion", "bash"]) == 0
    script = folder / "gpulease.bash"
    script.write_text(capsys.readouterr().out)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}

    def complete(*words: str) -> list[str]:
        probe = (f'source {script}; COMP_WORDS=(gpulease {" ".join(words)}); COMP_CWORD={len(words)}; _gpulease; '
                 'printf "%s\\n" "${COMPREPLY[@]}"')
        done = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, timeout=60, check=True,
                              cwd=folder, env=env)
        return done.stdout.split()

    assert complete("up", "my-") == ["my-llama"]  # the folder's own stack
    assert complete("status", "aws-lora-") == ["aws-lora-7b"]  # the kit's
    assert "aws-lora-7b" in complete("plan", "aws-lora-7b", "aws-")  # plan takes several
    assert complete("up", "--no-w") == ["--no-wait"]  # an option is still an option
    assert complete("ephemeral", "down", "my-") == []  # CI stacks live in the backend, not in files
    shutil.copy(EXAMPLE, folder / "stacks" / "Pulumi.my-second.yaml")
    assert complete("down", "my-") == ["my-llama", "my-second"]  # read when asked: a new stack is there at once
