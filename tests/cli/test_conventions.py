"""The conventions every command shares: formats, the JSON envelope, exit codes in --help, --version,
completion, 'did you mean', one organization, and --output that never replaces what it should not."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from gpulease.cli import main
from gpulease.cli.main import COMMANDS, build_parser
from gpulease.cli.output_file import check_output, report_marker
from gpulease.review import organization
from tests.support.paths import ROOT


def _exit_code(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


def test_a_mistyped_command_gets_the_nearest_one(capsys):
    assert main(["pln", "aws-lora-7b"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpulease: 'pln' is not a command; did you mean 'plan'?") and err.count("\n") == 1


def test_version(capsys):
    assert _exit_code(["--version"]) == 0
    assert capsys.readouterr().out.startswith("gpulease ")


@pytest.mark.parametrize("command", [c for c in COMMANDS])
def test_every_help_lists_the_exit_codes(capsys, command):
    assert _exit_code([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert "exit codes (every command):" in out
    assert all(f"\n  {code} " in out for code in ("0", "1", "2", "3"))


def _options(parser, path):
    p = parser
    for word in path:
        sub = next(a for a in p._actions if a.__class__.__name__ == "_SubParsersAction")
        p = sub.choices[word]
    return p._option_string_actions


@pytest.mark.parametrize("path", [["plan"], ["cost"], ["size"], ["status"], ["push"], ["pull"], ["ls"], ["reap"],
                                  ["catalog", "refresh"], ["ephemeral", "run"]])
def test_every_command_with_json_takes_format_and_json(path):
    options = _options(build_parser(), path)
    assert "--format" in options and "--json" in options


def test_json_and_format_json_are_one_option(capsys):
    for argv in (["size", "--params", "7B", "--json"], ["size", "--params", "7B", "--format", "json"]):
        assert main(argv) == 0
        doc = json.loads(capsys.readouterr().out)
        assert (doc["report"], doc["ok"], doc["errors"]) == ("gpulease size", True, [])
        assert "offers" in doc["data"] and "seqLen" in doc["data"]["workload"]
        # camelCase inside data; the old top-level keys stay beside the envelope for one release
        assert all("_" not in key for offer in doc["data"]["offers"] for key in offer)
        assert doc["offers"] == doc["offers"] and "estimate" in doc


def test_plan_format_table_is_still_accepted_and_a_bad_format_names_the_accepted_ones(capsys):
    parser = build_parser("plan")
    assert parser.parse_args(["plan", "x", "--format", "table"]).format == "text"
    assert _exit_code(["plan", "x", "--format", "yaml"]) == 2
    err = capsys.readouterr().err
    assert "'yaml' is not a format; accepted: text, markdown, json" in err and err.count("\n") == 1


def test_region_and_regions_are_one_repeatable_option():
    ls = build_parser("ls").parse_args(["ls", "--region", "us-east-1", "--regions", "us-west-2,eu-west-1"])
    assert ls.region == ["us-east-1", "us-west-2,eu-west-1"]
    refresh = build_parser("catalog").parse_args(["catalog", "refresh", "--region", "us-east-1", "--regions", "b"])
    assert refresh.regions == ["us-east-1", "b"]


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_bash_completion_completes_commands_options_and_choices(capsys, tmp_path):
    assert main(["completion", "bash"]) == 0
    script = tmp_path / "gpulease.bash"
    script.write_text(capsys.readouterr().out)

    def complete(*words: str) -> list[str]:
        line = " ".join(["gpulease", *words])
        probe = (f'source {script}; COMP_WORDS=(gpulease {" ".join(words) or chr(39) * 2}); '
                 f'COMP_CWORD={len(words) if words else 1}; COMP_LINE="{line}"; _gpulease; '
                 'printf "%s\\n" "${COMPREPLY[@]}"')
        done = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, timeout=20, check=True)
        return done.stdout.split()

    assert "plan" in complete("pl") and "completion" in complete("comp")
    assert "--format" in complete("plan", "aws-lora-7b", "--fo")
    assert complete("plan", "--format", "") == ["text", "markdown", "json"]
    assert "refresh" in complete("catalog", "re")
    assert "--allow-partial" in complete("catalog", "refresh", "--all")


def test_zsh_completion_loads_bash_completion_first(capsys):
    assert main(["completion", "zsh"]) == 0
    assert capsys.readouterr().out.startswith("autoload -U +X bashcompinit && bashcompinit\n")


# --- --output ---------------------------------------------------------------------------------------------------


def test_plan_output_never_replaces_the_stack_file_it_reads(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("gpulease.cli.plan.review", lambda *a, **k: pytest.fail("reviewed before the check"))
    stack = ROOT / "stacks" / "Pulumi.aws-lora-7b.yaml"
    before = stack.read_bytes()
    for extra in ([], ["--force"]):
        assert main(["plan", "aws-lora-7b", "--output", str(stack), *extra]) == 2
        err = capsys.readouterr().err
        assert "is a file this command reads" in err and err.count("\n") == 1
    assert stack.read_bytes() == before


def test_output_over_a_foreign_file_needs_force_and_an_own_report_does_not(tmp_path):
    foreign = tmp_path / "notes.md"
    foreign.write_text("my notes\n")
    with pytest.raises(Exception, match="exists and is not a gpulease report"):
        check_output(foreign)
    check_output(foreign, force=True)
    for marker in ("<!-- gpulease-plan -->\n## gpulease plan", f"{report_marker('plan')}\n...",
                   '{\n  "report": "gpulease plan",', "# Written by `gpulease catalog refresh` at ..."):
        own = tmp_path / "own.txt"
        own.write_text(marker)
        check_output(own)
    check_output(tmp_path / "new.md")


def test_a_file_that_only_quotes_a_marker_is_not_an_own_report(tmp_path):
    from gpulease.cli.output_file import is_own_report

    workflow = tmp_path / "policy-review.yml"
    workflow.write_bytes((Path(__file__).resolve().parents[2] / ".github/workflows/policy-review.yml").read_bytes())
    doc = tmp_path / "notes.md"
    doc.write_text("# Notes\n\nThe comment starts with `<!-- gpulease-plan -->`; the text report with\n"
                   "gpulease-report: plan\nand JSON with {\"report\": \"gpulease plan\"}.\n"
                   "Written by `gpulease catalog refresh` at 2026-01-01\n")
    for path in (workflow, doc):
        assert not is_own_report(path)
        with pytest.raises(Exception, match="exists and is not a gpulease report"):
            check_output(path)


def test_the_written_reports_carry_their_marker(tmp_path, monkeypatch):
    from gpulease.cli import plan
    from gpulease.cli.output_file import is_own_report

    monkeypatch.setattr(plan, "review", lambda *a, **k: [])
    for fmt in ("text", "json", "markdown"):
        out = tmp_path / f"plan.{fmt}"
        assert main(["plan", "aws-lora-7b", "--format", fmt, "--output", str(out)]) == 0
        assert is_own_report(out), out.read_text()[:200]
        assert main(["plan", "aws-lora-7b", "--format", fmt, "--output", str(out)]) == 0  # again: its own report


def test_catalog_refresh_output_over_an_input_is_refused(tmp_path, capsys):
    override = tmp_path / "prices.yaml"
    override.write_text("# Written by `gpulease catalog refresh` at 2026-01-01\n")
    code = main(["catalog", "refresh", "--cloud", "aws", "--catalog", str(override), "--output", str(override)])
    assert code == 2 and "is a file this command reads" in capsys.readouterr().err


# --- the organization -------------------------------------------------------------------------------------------


def _project(tmp_path: Path, backend: str | None = None) -> Path:
    project = tmp_path / "proj"
    project.mkdir(parents=True)
    body = "name: p\nruntime: python\n" + (f"backend:\n  url: {backend}\n" if backend else "")
    (project / "Pulumi.yaml").write_text(body)
    return project


def test_the_organization_comes_from_one_place_in_order(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = {"PULUMI_HOME": str(home)}
    project = _project(tmp_path)
    assert not organization.resolve(project, env=env).known  # nothing configured: unknown, never "None"
    assert organization.resolve(project, "acme", env=env) == organization.Organization("acme", "--org")
    diy = organization.resolve(project, env={**env, "PULUMI_BACKEND_URL": "s3://state-bucket"})
    assert diy.name == "organization" and "s3://state-bucket" in diy.found_by
    (home / "credentials.json").write_text(json.dumps({
        "current": "https://api.pulumi.com",
        "accounts": {"https://api.pulumi.com": {"username": "alice"}}}))
    assert organization.resolve(project, env=env).name == "alice"  # a user's own organization
    (home / "config.json").write_text(json.dumps({"backends": {"https://api.pulumi.com": {"defaultOrg": "acme"}}}))
    assert organization.resolve(project, env=env).name == "acme"  # pulumi org set-default
    local = _project(tmp_path / "b", backend="file://~")
    assert organization.resolve(local, env=env).name == "organization"  # the project's backend wins over login


def test_an_unknown_organization_shows_in_the_names_never_none(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("PULUMI_HOME", str(tmp_path / "none"))
    monkeypatch.delenv("PULUMI_BACKEND_URL", raising=False)
    assert main(["plan", "aws-lora-7b", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    [stack] = doc["data"]["stacks"]
    assert stack["outputs"]["checkpointUri"] == "s3://gpulease-llm-finetune-llama7b-lora-org-unknown/checkpoints/"
    buckets = [r["inputs"]["bucket"] for r in stack["resources"] if "bucket" in r["inputs"] and r["custom"]]
    assert buckets and all(b.endswith("-org-unknown") for b in buckets if b.startswith("gpulease-")), buckets
    assert doc["data"]["organizations"] == [{"name": None, "known": False,
                                             "foundBy": "no --org and no Pulumi backend configured"}]
    assert "sshCommand" in stack["placeholders"] and "checkpointUri" not in stack["placeholders"]
    # pull --offline refuses rather than derive a bucket from a made-up organization
    assert main(["pull", "aws-lora-7b", "--offline"]) == 2
    assert "not known here" in capsys.readouterr().err


def test_plan_and_pull_offline_derive_the_same_bucket(capsys, monkeypatch, tmp_path):
    from gpulease.transfer.locate import locate

    monkeypatch.setenv("PULUMI_BACKEND_URL", f"file://{tmp_path}")
    assert main(["plan", "aws-lora-7b", "--format", "json"]) == 0
    [stack] = json.loads(capsys.readouterr().out)["data"]["stacks"]
    bucket = stack["outputs"]["checkpointUri"].split("/")[2]
    assert bucket.startswith("gpulease-llm-finetune-llama7b-lora-") and "org-unknown" not in bucket
    assert locate("aws-lora-7b", use_pulumi=False).bucket == bucket
    assert locate("aws-lora-7b", use_pulumi=False, organization="organization").bucket == bucket
