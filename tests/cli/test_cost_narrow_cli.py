"""`gpulease cost` through the CLI at 80 to 110 columns: instance types, prices and headers whole."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def gl(*args: str, columns: int = 100, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": str(columns)}
    return subprocess.run([sys.executable, "-m", "gpulease", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("stack,itype,columns", [
    ("ali-lora-7b", "ecs.gn7i-c8g1.2xlarge", 110),
    ("ali-cluster-2x8", "ecs.gn7e-c16g1.32xlarge", 100),
    ("aws-cluster-4x8", "p4d.24xlarge", 100),
])
def test_cost_never_breaks_an_instance_type(stack: str, itype: str, columns: int) -> None:
    out = gl("cost", stack, columns=columns).stdout
    assert itype in out, f"{itype} broken across lines at {columns} columns:\n{out}"


def test_cost_sweep_at_80_columns_keeps_whole_prices() -> None:
    out = gl("cost", "aws-sweep-lora", columns=80).stdout
    assert not re.search(r"\$\s*$", out, re.M), out  # a worst-case column cut to a bare "$"


def test_cost_sweep_at_100_columns_keeps_the_header() -> None:
    out = gl("cost", "aws-sweep-lora", columns=100).stdout
    assert "experiment" in out.split("each line", 1)[1].split("per experiment", 1)[0], out
