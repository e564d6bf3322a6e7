"""``gpulease init`` run in the user's own folder writes the stack file there, and the other commands find it
there by its name (before the kit's stacks/); up deploys it with the kit's program and its config file."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from gpulease.cli.main import main
from gpulease.lifecycle import deploy
from gpulease.review import stacks

FLAGS = ["init", "--name", "my-llama", "--owner", "ada@ml-team.io", "--params", "8B", "--method", "lora",
         "--region", "us-west-2", "--ssh-from", "203.0.113.7/32", "--budget", "60", "--no-review"]


def test_init_writes_into_the_folder_it_runs_in(tmp_path, key_file, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main([*FLAGS, "--public-key", str(key_file)]) == 0
    written = tmp_path / "Pulumi.my-llama.yaml"
    assert yaml.safe_load(written.read_text())["config"]["gpulease:experiment"]["name"] == "my-llama"
    assert not (stacks.PROJECT_ROOT / "stacks" / "Pulumi.my-llama.yaml").exists()
    assert f"wrote {written}" in capsys.readouterr().out
    # A folder with its own stacks/ gets it there.
    (tmp_path / "proj" / "stacks").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "proj")
    assert main([*FLAGS, "--public-key", str(key_file)]) == 0
    assert (tmp_path / "proj" / "stacks" / "Pulumi.my-llama.yaml").is_file()


def test_a_stack_of_the_users_folder_is_found_by_name_and_reviewed_with_the_kits_program(
        tmp_path, key_file, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main([*FLAGS, "--public-key", str(key_file)]) == 0
    capsys.readouterr()
    assert stacks.resolve("my-llama") == [(stacks.PROJECT_ROOT, tmp_path / "Pulumi.my-llama.yaml")]
    assert stacks.resolve("Pulumi.my-llama.yaml") == [(stacks.PROJECT_ROOT, tmp_path / "Pulumi.my-llama.yaml")]
    assert main(["plan", "my-llama", "--format", "json"]) == 0
    [stack] = json.loads(capsys.readouterr().out)["data"]["stacks"]
    # Named as the user would type it here (the working folder holds it).
    assert stack["stackFile"] == "Pulumi.my-llama.yaml" and stack["status"] == "pass"


def test_up_deploys_a_users_stack_with_its_file_as_the_config(tmp_path, key_file, monkeypatch, passing_review,
                                                              backend, capsys):
    monkeypatch.chdir(tmp_path)
    assert main([*FLAGS, "--public-key", str(key_file)]) == 0
    assert main(["up", "my-llama", "--no-wait", "--json"]) == 0
    assert backend.config_files == [str((tmp_path / "Pulumi.my-llama.yaml").resolve())]
    assert deploy.load("my-llama").config_file == str((tmp_path / "Pulumi.my-llama.yaml").resolve())
    assert deploy.load("aws-lora-7b").config_file is None  # the kit's own stacks: pulumi reads them itself
    assert Path(tmp_path / "Pulumi.my-llama.yaml").is_file()


def test_up_hands_the_program_the_file_plan_reviewed(tmp_path, key_file, monkeypatch, passing_review, backend):
    """The program names the stack file from GPULEASE_STACK_FILE: without it, a user's file outside stacks/ would be
    reported as the kit's stacks/Pulumi.my-llama.yaml, a file that up never deployed."""
    monkeypatch.chdir(tmp_path)
    assert main([*FLAGS, "--public-key", str(key_file)]) == 0
    assert main(["up", "my-llama", "--no-wait", "--json"]) == 0
    assert backend.program_sources == ["Pulumi.my-llama.yaml"]  # as typed, relative to the folder up ran in


def test_the_automation_backend_puts_the_stack_file_in_the_programs_environment(monkeypatch):
    from components.spec.load import STACK_FILE_ENV
    from gpulease.ephemeral import backend as automation

    seen: dict[str, str] = {}

    class Stack:
        def up(self, **kwargs: object) -> object:
            return type("R", (), {"summary": type("S", (), {"resource_changes": {}})()})()

    made = deploy.default_backend()
    monkeypatch.setattr(automation.AutomationBackend, "_select",
                        lambda self, stack: seen.update(self.env_vars) or Stack())
    made.up("my-llama", print, print, stack_file="elsewhere/Pulumi.my-llama.yaml")
    assert seen[STACK_FILE_ENV] == "elsewhere/Pulumi.my-llama.yaml"
