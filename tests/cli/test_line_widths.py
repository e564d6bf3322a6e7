"""Every command's text output on the example stacks, piped with ``COLUMNS=80``: no line ends in spaces, and no
line is wider than 80 columns unless it holds a token that cannot be broken (a URL, a path, a resource name) and
would not fit on a line of its own there.

The same output as a terminal of that width would show, read back through the pipe a CI log or ``| less`` reads."""

from __future__ import annotations

import pytest
from rich.cells import cell_len

from gpulease.cli.main import main
from gpulease.review import stacks
from tests.support.inventory import FUTURE, REGION, address, launch, tags, volume

WIDTH = 80
EXAMPLES = [stacks.stack_name(p) for p in stacks.stack_files()]


def layout_problems(text: str, width: int = WIDTH) -> list[str]:
    """The lines that end in spaces, and those wider than ``width`` that a wrap between words could have kept in."""
    problems = []
    for number, line in enumerate(text.splitlines(), 1):
        if line != line.rstrip():
            problems.append(f"line {number} ends in spaces: {line!r}")
        if cell_len(line) <= width:
            continue
        indent = cell_len(line) - cell_len(line.lstrip())
        if not any(indent + cell_len(token) > width for token in line.split()):
            problems.append(f"line {number} is {cell_len(line)} columns wide: {line!r}")
    return problems


@pytest.fixture(autouse=True)
def _eighty_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    monkeypatch.setenv("NO_COLOR", "1")


def _checked(argv: list[str], capsys: pytest.CaptureFixture[str], codes: tuple[int, ...] = (0, 1)) -> str:
    code = main(argv)
    out = capsys.readouterr()
    assert code in codes, out.err
    text = out.out + out.err
    problems = layout_problems(text)
    assert not problems, f"gpulease {' '.join(argv)}:\n" + "\n".join(problems) + "\n\n" + text
    return text


def test_the_check_finds_trailing_spaces_and_lines_a_wrap_would_have_broken() -> None:
    assert layout_problems("ok\nend  \n") == ["line 2 ends in spaces: 'end  '"]
    assert len(layout_problems("word " * 20)) == 2  # trailing space, and 100 columns of short words
    assert layout_problems("see https://example.com/" + "a" * 90) == []  # the URL cannot be broken
    assert layout_problems("  " + "x" * 79) == []
    assert len(layout_problems("─" * 81)) == 0 and len(layout_problems("ab " + "─" * 78)) == 1


def test_plan_of_every_example_stack(capsys) -> None:
    text = _checked(["plan", *(str(p) for p in stacks.stack_files())], capsys)
    assert all(f"gpulease/{name}" in text for name in EXAMPLES)


@pytest.mark.parametrize("stack", EXAMPLES)
def test_cost_of_each_example_stack(stack, capsys) -> None:
    assert f"gpulease cost: {stack}" in _checked(["cost", stack], capsys)


@pytest.mark.parametrize("argv", [
    ["size", "--params", "7B", "--method", "lora", "--batch", "4"],
    ["size", "--params", "70B", "--method", "qlora", "--cloud", "alicloud"],
    ["size", "--params", "8B", "--method", "full", "--nodes", "2"],
])
def test_size(argv, capsys) -> None:
    assert "GB" in _checked(argv, capsys)


def test_status_of_a_running_stack(running, capsys) -> None:
    assert running["id"] in _checked(["status", "aws-lora-7b", "--outputs", running["outputs"]], capsys)


def test_ls_of_an_account(aws, capsys) -> None:
    ec2 = aws.client("ec2")
    (inst,) = launch(ec2, tags(expires=FUTURE), instance_type="g5.xlarge")
    vol = volume(ec2, tags(retain=True))
    address(ec2, tags())
    text = _checked(["ls", "--region", REGION], capsys)
    assert inst in text and vol in text
