"""What a person sees in a real terminal (tmux) at 40, 80 and 120 columns: the answer in the first screen (24 lines),
and no instance type, price or name cut short with an ellipsis (``…``): long values wrap instead.

The commands run in detached tmux sessions of the given size, all at once, their whole output read back from
the pane's history."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import time
import uuid

import pytest

from tests.support.paths import ROOT
from tests.support.programs import required

required("tmux")  # fails in CI when missing, never skipped there

FIRST_SCREEN = 24
END = "__gpulease_screen_end__"


def _start(argv: list[str], width: int, env: dict[str, str]) -> str:
    name = f"gpl-screen-{uuid.uuid4().hex[:8]}"
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    # The width is the terminal's alone: a COLUMNS the tmux server inherited from whoever started it is dropped.
    command = f"cd {shlex.quote(str(ROOT))} && env -u COLUMNS -u LINES {exports} {shlex.quote(sys.executable)} " \
        "-m gpulease " + " ".join(
        shlex.quote(a) for a in argv) + f"; echo {END}$?; sleep 600"
    subprocess.run(["tmux", "new-session", "-d", "-s", name, "-x", str(width), "-y", str(FIRST_SCREEN),
                    "bash", "--norc", "-c", command], check=True, timeout=30)
    subprocess.run(["tmux", "set-option", "-t", name, "history-limit", "5000"], check=True, timeout=30)
    return name


def _collect(name: str, deadline: float) -> tuple[list[str], int]:
    try:
        while time.monotonic() < deadline:
            text = subprocess.run(["tmux", "capture-pane", "-p", "-J", "-S", "-", "-t", name], capture_output=True,
                                  text=True, timeout=30, check=True).stdout
            if END in text:
                lines = text.splitlines()
                at = next(i for i, line in enumerate(lines) if END in line)
                return lines[:at], int(lines[at].split(END)[1].strip() or 0)
            time.sleep(0.2)
        raise AssertionError(f"{name} did not finish")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True, timeout=30, check=False)


@pytest.fixture(scope="module")
def screens(tmp_path_factory) -> dict[tuple[str, int], tuple[list[str], int]]:
    tmp = tmp_path_factory.mktemp("screens")
    failing = tmp / "policy.json"
    failing.write_text(json.dumps({"budget-prices-fresh": "mandatory"}))  # the shipped prices are old: a FAIL
    env = {"TERM": "xterm-256color", "HOME": str(tmp), "PULUMI_HOME": str(tmp / "pulumi"), "NO_COLOR": "1",
           "GPULEASE_CATALOG_OVERRIDES": ""}
    runs = {
        ("size", 40): ["size", "--params", "7B", "--method", "lora", "--batch", "4"],
        ("size", 80): ["size", "--params", "7B", "--method", "lora", "--batch", "4"],
        ("help-up", 40): ["up", "--help"],
        ("help-up", 80): ["up", "--help"],
        ("help-init", 80): ["init", "--help"],
        ("size", 120): ["size", "--params", "7B", "--method", "lora", "--batch", "4"],
        ("cost", 80): ["cost", "aws-lora-7b"],
        ("cost", 120): ["cost", "aws-lora-7b"],
        ("plan-pass", 80): ["plan", "aws-lora-7b"],
        ("plan-fail", 80): ["plan", "aws-lora-7b", "--policy-config", str(failing)],
    }
    started = {key: _start(argv, key[1], env) for key, argv in runs.items()}
    deadline = time.monotonic() + 240
    return {key: _collect(name, deadline) for key, name in started.items()}


def _no_ellipsis(lines: list[str]) -> None:
    cut = [line for line in lines if "…" in line]
    assert not cut, "cut short:\n" + "\n".join(cut)


@pytest.mark.parametrize("width", [80, 120])
def test_size_shows_whole_instance_types_and_prices(screens, width):
    lines, code = screens[("size", width)]
    assert code == 0
    _no_ellipsis(lines)
    assert max(len(line) for line in lines) <= width
    text = "\n".join(lines)
    assert "g6e.xlarge" in text and "g6.12xlarge" in text  # whole names, never g6e…
    assert "$1.861/h" in text and "$0.837/h est." in text  # whole prices, never 0.8…
    first = "\n".join(lines[:FIRST_SCREEN])
    assert "total" in first and "that fit" in first  # the estimate and the first offers are on the first screen
    # and how to fit a smaller GPU
    assert "smaller GPU: with --grad-checkpointing this needs 18.9 GB per GPU and fits g6.xlarge" in " ".join(
        " ".join(lines).split())


@pytest.mark.parametrize("width", [80, 120])
def test_cost_shows_whole_resource_names_and_the_worst_case_on_the_first_screen(screens, width):
    lines, code = screens[("cost", width)]
    assert code == 0
    _no_ellipsis(lines)
    text = " ".join(" ".join(lines).split())
    assert "resource names start llama7b-lora-" in text
    assert all(f" {name} " in text for name in ("instance", "data", "checkpoints"))  # whole, never "insta…"
    assert "$0.322/h" in text and "$0.805/h" in text
    first = " ".join(" ".join(lines[:FIRST_SCREEN]).split())
    assert "worst case $" in first and "budget $40.00" in first


def test_plan_pass_says_the_verdict_cost_and_budget_first(screens):
    lines, code = screens[("plan-pass", 80)]
    assert code == 0
    _no_ellipsis(lines)
    first = lines[:FIRST_SCREEN]
    # The budget-start record too, and spot recovery's cancel schedule, request tags and the watchdog's policy.
    assert first[1].startswith("PASS: 0 mandatory, 2 advisory, 32 resources")  # prices, GPU vCPU quota; the spot request tagged with its experiment
    joined = " ".join(" ".join(first).split())
    assert "worst case $" in joined and "of budget $40.00" in joined
    assert "names start llama7b-lora-" in " ".join(lines)
    assert len(lines) <= 66  # 32 resources grouped by type, not a line per wrapped cell (plus the stack-file advisory)


def test_plan_fail_puts_the_mandatory_finding_next_to_fail(screens):
    lines, code = screens[("plan-fail", 80)]
    assert code == 1
    _no_ellipsis(lines)
    assert lines[1].startswith("FAIL: 1 mandatory, 1 advisory")  # the GPU vCPU quota
    assert lines[2].startswith("mandatory budget-prices-fresh (stack):")
    first = " ".join(" ".join(lines[:FIRST_SCREEN]).split())
    assert "worst case $" in first and "of budget $40.00" in first


def test_size_at_40_columns_lists_whole_types_and_prices(screens):
    lines, code = screens[("size", 40)]
    assert code == 0
    _no_ellipsis(lines)
    assert max(len(line) for line in lines) <= 40
    assert "g6e.xlarge  1 x L40S 48 GB" in lines  # a block per type: never g6e.xlarg
    text = " ".join(" ".join(lines).split())
    assert "need 37.2 GB/GPU, 10.8 GB free; on-demand $1.861/h, spot $0.837/h est." in text


@pytest.mark.parametrize(("key", "width"), [(("help-up", 40), 40), (("help-up", 80), 80), (("help-init", 80), 80)])
def test_help_is_wrapped_to_the_terminal(screens, key, width):
    lines, code = screens[key]
    assert code == 0
    # The usage block aside: argparse keeps an option with its value together ("[--format {text,json}]").
    usage_end = lines.index("") if "" in lines else 0
    long = [line for line in lines[usage_end:] if len(line.rstrip()) > width - 1]
    assert not long, "wider than the terminal (the terminal wrapped it):\n" + "\n".join(long)
    text = " ".join(" ".join(lines).split())
    assert "On a capacity error at first creation" in text or "a comment on every field" in text
    # The exit-code table keeps its shape: each code starts a line, its text wraps under the text.
    assert any(line.startswith("  130 ") for line in lines)


@pytest.mark.parametrize("width", [80, 120])
def test_cost_never_cuts_an_after_destroy_price(screens, width):
    lines, code = screens[("cost", width)]
    assert code == 0
    words = " ".join(lines).split()
    text = " ".join(words)
    assert "data $16.00/month" in text or " $16.00/month " in text, "\n".join(lines)
    assert "$4.60/month" in text, "\n".join(lines)
    whole = re.compile(r"^\$[0-9.,]+(/h|/month|/GB)?[,;:.)]*$")
    assert not [w for w in words if w.startswith("$") and not whole.match(w)], "\n".join(lines)
    assert "destro" not in words and "afte" not in words
