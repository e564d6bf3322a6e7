"""Every ``--json`` command prints one envelope shape (``conventions.ENVELOPE_SCHEMA``): ``report``, ``ok``,
``data``, ``errors`` with kebab-case codes; a user mistake is ``bad-input`` in every one of them."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from gpulease.cli import conventions
from gpulease.cli.main import build_parser, main
from tests.cli.test_down import STACK as DEPLOYED
from tests.cli.test_init import _flags
from tests.live.test_logs import STACK as LOGGED

MISSING = "/nonexistent/outputs.json"
BAD_INPUT = {
    "init": ["init", "--params", "8B", "--output", "{tmp}/Pulumi.x.yaml"],
    "check": ["check", "no-such-stack"],
    "plan": ["plan", "no-such-stack", "--format", "json"],
    "up": ["up", "no-such-stack"],
    "resume": ["resume", "no-such-stack"],
    "down": ["down", "no-such-stack"],
    "logs": ["logs", "no-such-stack", "--outputs", MISSING],
    "ls": ["ls", "--cloud", "aws"],
    "reap": ["reap", "--cloud", "aws"],
    "ephemeral run": ["ephemeral", "run", "--base-stack", "no-such-stack", "--", "true"],
    "ephemeral up": ["ephemeral", "up", "--base-stack", "no-such-stack"],
    "ephemeral down": ["ephemeral", "down", "no such stack"],
    "ephemeral ls": ["ephemeral", "ls"],
    "ephemeral gc": ["ephemeral", "gc"],
    "ephemeral collect": ["ephemeral", "collect", "no such stack", "--artifacts-dir", "{tmp}/art"],
    "size": ["size", "--params", "bogus"],
    "cost": ["cost", "no-such-stack"],
    "catalog refresh": ["catalog", "refresh", "--output", "{tmp}"],
    "push": ["push", "no-such-stack", "{tmp}"],
    "pull": ["pull", "no-such-stack", "{tmp}/out"],
    "status": ["status", "no-such-stack", "--outputs", MISSING],
    "ssh": ["ssh", "no-such-stack", "--outputs", MISSING],
    "schema": ["schema", "--write", "--check"],
}
"""One user mistake per command that has --json, caught before anything is called."""


def _json_commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return [c for name, child in action.choices.items() for c in _json_commands(child, (*path, name))]
    return [" ".join(path)] if "--json" in parser._option_string_actions else []


def _envelope(text: str) -> dict[str, Any]:
    doc = json.loads(text)
    jsonschema.validate(doc, conventions.ENVELOPE_SCHEMA)
    return doc


def test_every_json_command_is_in_the_table():
    assert sorted(_json_commands(build_parser())) == sorted(BAD_INPUT)


@pytest.mark.parametrize("command", sorted(BAD_INPUT))
def test_a_user_mistake_is_the_one_envelope_with_bad_input(command, tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("GPULEASE_REGIONS", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no pulumi: the ephemeral commands stop before any call
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    argv = [a.replace("{tmp}", str(tmp_path)) for a in BAD_INPUT[command]]
    if "--format" not in argv:
        cut = argv.index("--") if "--" in argv else len(argv)
        argv[cut:cut] = ["--json"]
    try:
        code = main(argv)
    except SystemExit as exc:  # a usage mistake (schema has no other input): the parser's own one line
        code = exc.code
    assert code == 2
    doc = _envelope(capsys.readouterr().out)
    assert doc["report"] == f"gpulease {command}" and doc["ok"] is False and doc["data"] is None
    assert [e["code"] for e in doc["errors"]] == ["bad-input"]


def test_the_journey_commands_answers_are_the_envelope(tmp_path, key_file, reviewed, bucket, deployed,
                                                        capsys):
    runs = {
        "init": _flags(tmp_path / "Pulumi.llama8b-lora.yaml", key_file, "--json"),
        "logs": ["logs", LOGGED, "--outputs", bucket["outputs"], "--json"],
        "down": ["down", DEPLOYED, "--json"],
        "size": ["size", "--params", "7B", "--method", "lora", "--json"],
    }
    for command, argv in runs.items():
        assert main(argv) == 0, command
        doc = _envelope(capsys.readouterr().out)
        assert doc["report"] == f"gpulease {command}" and doc["ok"] is True and doc["errors"] == []


def test_a_cluster_size_answer_is_the_envelope(capsys):
    assert main(["size", "--params", "70B", "--method", "full", "--nodes", "2", "--json"]) in (0, 1)
    doc = _envelope(capsys.readouterr().out)
    assert doc["report"] == "gpulease size" and doc["data"]["nodes"] == 2
    assert doc["ok"] is bool(doc["data"]["offers"])


def test_a_camel_case_error_code_is_refused():
    with pytest.raises(ValueError, match="'badInput' is not kebab-case"):
        conventions.error_entry("badInput", "x")


def test_the_schema_refuses_what_is_not_the_envelope():
    good = conventions.envelope("plan", {}, ok=True)
    jsonschema.validate(good, conventions.ENVELOPE_SCHEMA)
    for bad in ({"ok": True, "data": {}, "errors": []},  # no report (the journey commands' old shape)
                {**good, "errors": [{"code": "badInput", "message": "x"}]},
                {**good, "ok": True, "errors": [{"code": "bad-input", "message": "x"}]},
                {**good, "errors": ["one string"]}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, conventions.ENVELOPE_SCHEMA)


def test_the_docs_name_the_one_code():
    text = (Path(__file__).resolve().parents[2] / "docs" / "journey.md").read_text()
    assert "`bad-input`" in text and "badInput" not in text


def test_ssh_json_is_the_target_and_commands_in_the_envelope_never_run(tmp_path, monkeypatch, capsys):
    from gpulease.live import connect

    monkeypatch.setattr(connect, "RUNNER", lambda connection: pytest.fail("ssh --json ran the session"))
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps({"instanceId": "i-0abc", "publicIp": "198.51.100.7"}))
    for argv in (["ssh", "aws-lora-7b", "--json", "--outputs", str(outputs)],
                 ["ssh", "--json", "aws-lora-7b", "--outputs", str(outputs)],
                 ["ssh", "aws-lora-7b", "--format", "json", "--outputs", str(outputs)]):
        assert main(argv) == 0
        doc = _envelope(capsys.readouterr().out)
        data = doc["data"]
        assert (doc["report"], doc["ok"], data["mode"], data["instanceId"]) == ("gpulease ssh", True, "ssh", "i-0abc")
        assert data["command"][0] == "ssh" and "ubuntu@198.51.100.7" in data["command"]


def test_an_ssh_mistake_after_the_stack_is_the_envelope_too(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["ssh", "aws-lora-7b", "--json", "--node", "x"])
    assert exit_.value.code == 2
    captured = capsys.readouterr()
    doc = _envelope(captured.out)
    assert doc["report"] == "gpulease ssh" and doc["errors"][0]["code"] == "bad-input"
    assert captured.err.count("\n") == 1 and "--node" in captured.err


def test_schema_json_wraps_the_schema_and_the_staleness_check(capsys):
    assert main(["schema"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert "$schema" in plain or "properties" in plain  # without --json: the schema itself, for editors
    assert main(["schema", "--json"]) == 0
    doc = _envelope(capsys.readouterr().out)
    assert doc["report"] == "gpulease schema" and doc["data"] == plain
    assert main(["schema", "--check", "--json"]) == 0
    doc = _envelope(capsys.readouterr().out)
    assert doc["data"]["upToDate"] is True and doc["ok"] is True
