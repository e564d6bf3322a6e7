"""Questions go to stderr and the answer to stdout: ``gpulease init --json`` and ``gpulease down --all --json``
asked on a terminal still print nothing but their JSON on stdout."""

from __future__ import annotations

import io
import json

import pytest
import yaml

from gpulease.cli.main import main
from tests.cli.test_down import BUCKET, STACK


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_init_asks_on_stderr_and_prints_only_json_on_stdout(tmp_path, key_file, reviewed, monkeypatch,
                                                             capsys):
    monkeypatch.setattr("sys.stdin", Tty("\n8B\nqlora\nus-west-2\n\nada@example.org\n45\n\n\n\n198.51.100.9/32\n"))
    out = tmp_path / "Pulumi.exp-8b-qlora.yaml"
    assert main(["init", "--public-key", str(key_file), "--output", str(out), "--json"]) == 0
    captured = capsys.readouterr()
    doc = json.loads(captured.out)  # nothing but the envelope
    assert doc["ok"] is True and doc["data"]["stack"] == "exp-8b-qlora"
    assert captured.err.startswith("cloud (aws, alicloud) [aws]: model size (e.g. 8B): method (full, lora, qlora) "
                                   "[lora]: region [us-east-1]: stack name [exp-8b-qlora]: ")
    assert yaml.safe_load(out.read_text())["config"]["gpulease:experiment"]["budgetUsd"] == 45


def test_init_ctrl_d_at_a_question_is_one_line_exit_2(tmp_path, key_file, reviewed, monkeypatch,
                                                      capsys):
    monkeypatch.setattr("sys.stdin", Tty(""))
    assert main(["init", "--public-key", str(key_file), "--output", str(tmp_path / "x.yaml")]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.endswith("gpulease: cloud (aws, alicloud) [aws]: no answer (end of input); nothing was "
                                 "changed\n")
    assert not (tmp_path / "x.yaml").exists()


def test_down_all_confirms_on_stderr(deployed, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", Tty(f"{STACK}\n"))
    assert main(["down", STACK, "--all", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["data"]["removed"] == [f"disk {deployed['volume']}", f"bucket {BUCKET}"]
    assert f"This removes {STACK}'s data disk and checkpoint bucket for good. Type the stack name: " in captured.err


@pytest.mark.parametrize("typed", ["", "other\n"])
def test_down_all_not_confirmed_changes_nothing(deployed, monkeypatch, capsys, typed):
    monkeypatch.setattr("sys.stdin", Tty(typed))
    assert main(["down", STACK, "--all"]) == 2
    assert capsys.readouterr().out == ""
    assert deployed["backend"].calls == []
