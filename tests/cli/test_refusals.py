"""The refusal table: a hostile or near-miss input → the exact one line the user reads (on stderr, exit 2).

Each line names the file (as the user would type it) and the field, what was wrong and what is accepted, the
nearest valid value for a near miss; a value the user gave comes back capped at 80 characters with ``…`` and with
its control characters written out; no pydantic wording; parts of a message stay apart."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from gpulease.cli.main import main
from gpulease.review import stacks

EXAMPLE = stacks.PROJECT_ROOT / "stacks" / "Pulumi.aws-lora-7b.yaml"
LONG = "a" * 300
CAPPED = "'" + "a" * 77 + "…'"
SPEC_END = ". Nothing was created. The fields are documented in docs/config.md."
PYDANTIC = re.compile(r"Input should be|Value error,|instance of |type=|errors\.pydantic\.dev|Field required")


def _stack(folder: Path, name: str, edit: tuple[str, str]) -> None:
    text = EXAMPLE.read_text()
    assert edit[0] in text
    (folder / f"Pulumi.{name}.yaml").write_text(text.replace(*edit))


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user's folder with stack files of their own, the command run from it."""
    _stack(tmp_path, "spto", ("market: spot", "market: spto"))
    _stack(tmp_path, "essd", ("sizeGb: 200", "sizeGb: 200\n      type: cloud_essd"))
    _stack(tmp_path, "typo", ("maxRuntimeHours: 8", "maxRuntimHours: 8"))
    _stack(tmp_path, "long", ("name: llama7b-lora", f"name: \"llama\\x1b[2J{'X' * 200}\""))
    _stack(tmp_path, "volume", ("sizeGb: 200", "sizeGb: 200\n      existingVolumeId: d-123"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("GPULEASE_CATALOG_DIR", raising=False)  # the default folder, under HOME
    return tmp_path


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    try:
        code = main(argv)
    except SystemExit as exit_:  # a usage mistake: argparse's exit
        code = exit_.code
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert not PYDANTIC.search(err) and "\x1b" not in err
    return lines[0]


@pytest.mark.parametrize(("argv", "line"), [
    (["size", "--params", "7B", "--method", "lroa"],
     "gpulease size: argument --method: invalid choice: 'lroa' (choose from 'full', 'lora', 'qlora'); did you mean "
     "'lora'?; see gpulease size --help"),
    (["size", "--params", "7B", "--precision", "fp61"],
     "gpulease size: argument --precision: invalid choice: 'fp61' (choose from 'bf16', 'fp16', 'fp32'); did you mean "
     "'fp16'?; see gpulease size --help"),
    (["ls", "--cloud", "awss"],
     "gpulease ls: argument --cloud: invalid choice: 'awss' (choose from 'aws', 'alicloud'); did you mean 'aws'?; see "
     "gpulease ls --help"),
    (["plan", "aws-lora-7b", "--format", "jsno"],
     "gpulease plan: argument --format: 'jsno' is not a format; accepted: text, markdown, json; did you mean 'json'?; "
     "see gpulease plan --help"),
    (["size", "--params", "7B", "--method", LONG],
     f"gpulease size: argument --method: invalid choice: {CAPPED} (choose from 'full', 'lora', 'qlora'); see gpulease "
     "size --help"),
    (["size", "--params", "\x1b[31m7B"],
     "gpulease: --params: '\\x1b[31m7B' is not a parameter count; accepted: e.g. 7B, 1.5B, 350M or 7e9"),
    ([LONG + "\x1b"], f"gpulease: {CAPPED} is not a command (commands: init, check, plan, up, down, logs, schema, ls, "
                      "reap, ephemeral, size, cost, catalog, push, pull, status, ssh, resume, completion)"),
])
def test_usage_refusals(argv, line, capsys) -> None:
    assert _refused(argv, capsys) == line


@pytest.mark.parametrize("command", ["up", "check", "status"])
@pytest.mark.parametrize(("stack", "problem"), [
    ("spto", "gpulease:experiment.market: \"spto\" is not one of the choices; accepted: 'spot' or 'on-demand' (did "
             "you mean spot?)"),
    ("essd", "gpulease:experiment.dataDisk.type: 'cloud_essd' is an Alibaba Cloud disk type, and this stack's cloud "
             "is aws (cloud defaults to aws); accepted: cloud: alicloud to use it, or on aws: gp3, gp2, io1, io2, st1"),
    ("typo", "gpulease:experiment.maxRuntimHours: unknown field; did you mean maxRuntimeHours? accepted: the fields "
             "docs/config.md lists here"),
    ("long", "gpulease:experiment.name: '" + "llama\\x1b[2J" + "X" * 65 + "…' is not DNS-safe; accepted: 1-40 "
             "lowercase letters, digits and hyphens, starting with a letter"),
    ("volume", "gpulease:experiment.dataDisk.existingVolumeId: 'd-123' is not an AWS disk id; accepted: e.g. "
               "vol-0123456789abcdef0"),
])
def test_stack_file_refusals_name_the_file_as_typed_and_the_field(here, command, stack, problem, capsys) -> None:
    assert _refused([command, stack], capsys) == (
        f"gpulease: invalid gpulease config in stack '{stack}' (Pulumi.{stack}.yaml): {problem}{SPEC_END}")


def test_the_same_file_named_by_its_path_is_named_so(here, capsys) -> None:
    (here / "stacks").mkdir()
    shutil.move(here / "Pulumi.spto.yaml", here / "stacks" / "Pulumi.spto.yaml")
    line = _refused(["up", "stacks/Pulumi.spto.yaml"], capsys)
    assert line.startswith("gpulease: invalid gpulease config in stack 'spto' (stacks/Pulumi.spto.yaml): ")


def test_a_bad_catalog_row_names_its_file_line_and_row_never_a_stack_field(here, capsys, monkeypatch) -> None:
    prices = here / "prices.yaml"
    prices.write_text("instances:\n  - cloud: aws\n    type: g6.xlarge\n    spotPrices: {us-east-1a: \"abc\"}\n")
    monkeypatch.setenv("GPULEASE_CATALOG_OVERRIDES", str(prices))
    assert _refused(["size", "--params", "7B"], capsys) == (
        f"gpulease: {prices} line 2: instances[0] (aws g6.xlarge): spotPrices.us-east-1a: \"abc\" is text; accepted: "
        "a number")
    assert main(["plan", str(EXAMPLE)]) == 2
    out = capsys.readouterr().out
    assert f"ERROR (not reviewed): {prices} line 2: instances[0] (aws g6.xlarge)" in " ".join(out.split())
    assert "gpulease:experiment" not in out


def test_a_catalog_folder_that_is_a_file_is_one_line_never_ignored(here, capsys) -> None:
    folder = here / ".config" / "gpulease"
    folder.mkdir(parents=True)
    (folder / "catalog").write_text("not a folder\n")
    assert _refused(["size", "--params", "7B"], capsys) == (
        f"gpulease: the catalog folder {folder / 'catalog'} is not a folder; accepted: a folder of price files there "
        "(gpulease catalog refresh makes one), nothing there, or GPULEASE_CATALOG_DIR naming another folder")


@pytest.mark.parametrize(("stack", "problem"), [
    ("spto", "gpulease:experiment.market: \"spto\" is not one of the choices"),
    ("huge", "gpulease:experiment.gpu: no aws instance type in us-east-1 offers 1 x GPU with >= 9000 GB"),
])
def test_plan_names_the_users_own_file_also_for_what_the_program_finds(here, stack, problem, capsys) -> None:
    _stack(here, "huge", ("gpuMemoryGb: 24", "gpuMemoryGb: 9000"))
    assert main(["plan", stack]) == 2
    out = " ".join(capsys.readouterr().out.split())
    assert f"ERROR (not reviewed): invalid gpulease config in stack '{stack}' (Pulumi.{stack}.yaml): - {problem}" in out
