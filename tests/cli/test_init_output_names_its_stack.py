"""``gpulease init --output FILE``: the stack the file is (``Pulumi.NAME.yaml`` is stack NAME to ``plan``, ``check``,
``up`` and ``pulumi``) is the stack ``init`` reviews and reports, and the commands the written file's own header
comment names find that file."""

from __future__ import annotations

import json
import re
import shlex

import pytest

from gpulease.cli.main import main
from gpulease.review import stacks

FLAGS = ["--params", "8B", "--owner", "a@mylab.org", "--budget", "60", "--no-port"]


def test_init_reviews_and_reports_the_stack_its_output_file_names(tmp_path, monkeypatch, reviewed, capsys):
    monkeypatch.chdir(tmp_path)
    code = main(["init", "--name", "ef", "--output", "Pulumi.zz.yaml", *FLAGS, "--json"])
    doc = json.loads(capsys.readouterr().out)
    if code == 2:  # refused: the file would be another stack than --name says
        assert not (tmp_path / "Pulumi.zz.yaml").exists()
        return
    assert stacks.stack_name(tmp_path / "Pulumi.zz.yaml") == "zz"  # what plan, up and pulumi call it
    assert doc["data"]["stack"] == "zz", doc["data"]
    assert [stack for _, stack in reviewed] == ["zz"], reviewed


def _header_commands(path):
    header = [line for line in path.read_text().splitlines() if line.startswith("#")]
    named = re.findall(r"`(gpulease (?:plan|check|up) [^`]+)`", "\n".join(header))
    assert named, header
    return named


def _assert_each_finds(named, path):
    for command in named:
        target = shlex.split(command)[2]
        try:
            found = stacks.resolve_one(target)
        except stacks.StackNotFoundError as exc:
            pytest.fail(f"the header's `{command}` finds no stack: {exc}")
        assert found.resolve() == path.resolve(), f"the header's `{command}` finds {found}, not {path}"


def test_the_commands_in_the_header_of_an_output_file_find_that_file(tmp_path, monkeypatch, reviewed, capsys):
    monkeypatch.chdir(tmp_path)
    if main(["init", "--name", "ef", "--output", "Pulumi.zz.yaml", *FLAGS, "--no-review"]) == 2:
        return  # refused, nothing written: nothing to name
    _assert_each_finds(_header_commands(tmp_path / "Pulumi.zz.yaml"), tmp_path / "Pulumi.zz.yaml")


def test_the_commands_in_the_header_name_the_written_file_when_the_bare_name_finds_another(
        tmp_path, monkeypatch, reviewed, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "stacks").mkdir()
    assert main(["init", "--name", "ab", "--output", "Pulumi.ab.yaml", *FLAGS, "--no-review"]) == 0
    assert main(["init", "--name", "ab", *FLAGS, "--no-review"]) == 0  # stacks/Pulumi.ab.yaml
    written = tmp_path / "stacks" / "Pulumi.ab.yaml"
    assert "stacks/Pulumi.ab.yaml" in capsys.readouterr().out  # the next: line names it by its path
    _assert_each_finds(_header_commands(written), written)


def test_an_output_named_for_another_stack_is_refused_naming_both(tmp_path, monkeypatch, reviewed, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["init", "--name", "ef", "--output", "Pulumi.zz.yaml", *FLAGS]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "'zz'" in err and "'ef'" in err and "--output" in err, err
    assert "Pulumi.ef.yaml" in err and "--name zz" in err, err  # either way out
    assert not list(tmp_path.iterdir()) and reviewed == []


def test_without_a_name_the_stack_is_the_one_the_output_file_names(tmp_path, monkeypatch, reviewed, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["init", "--output", "Pulumi.zz.yaml", *FLAGS, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["data"]["stack"] == "zz"
    assert [stack for _, stack in reviewed] == ["zz"]
    assert _header_commands(tmp_path / "Pulumi.zz.yaml") == ["gpulease plan zz", "gpulease check zz", "gpulease up zz"]
