"""The budget verdict's ways out: only what the stack can set, in figures the stack file accepts."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def gl(*args: str, columns: int = 100, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": str(columns)}
    return subprocess.run([sys.executable, "-m", "gpulease", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_budget_way_out_storage_is_not_float_noise() -> None:
    out = gl("plan", "aws-cluster-4x8", "--config", "budgetUsd=500").stdout
    assert "0.0000000" not in out, out


@pytest.mark.parametrize("stack,budget", [("aws-debug-t4", "1"), ("ali-cluster-2x8", "10")])
def test_budget_way_out_offers_no_spot_cap_on_demand(stack: str, budget: str) -> None:
    out = gl("plan", stack, "--config", f"budgetUsd={budget}").stdout
    assert "maxSpotPriceUsd" not in out, out


@pytest.mark.parametrize("stack,budget", [("aws-lora-7b", "0.1"), ("ali-cluster-2x8", "10")])
def test_budget_way_out_hours_are_ones_the_schema_accepts(stack: str, budget: str) -> None:
    out = gl("plan", stack, "--config", f"budgetUsd={budget}").stdout
    hours = re.search(r"maxRuntimeHours ([0-9.]+) or less", out)
    if hours:
        again = gl("plan", stack, "--config", f"budgetUsd={budget}", "--config", f"maxRuntimeHours={hours[1]}")
        assert again.returncode != 2, again.stdout + again.stderr


def test_sweep_way_out_names_the_run_that_sets_its_own_hours_and_the_hours_fit(tmp_path: Path) -> None:
    # Run r64 sets its own maxRuntimeHours 8: the base's value does not reach it, so the offer names it, and the
    # offered hours fit once set in the base and in r64 (a base-only change cannot fit: r64 alone takes $14.89).
    out = " ".join(gl("plan", "aws-sweep-lora", "--config", "sweep.base.budgetUsd=3").stdout.split())
    assert "run lora-rank-r64, which sets its own maxRuntimeHours 8" in out, out
    hours = re.search(r"maxRuntimeHours ([0-9.]+) or less", out)[1]
    project = tmp_path / "p"
    (project / "stacks").mkdir(parents=True)
    for f in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(ROOT / f, project / f)
    src = (ROOT / "stacks" / "Pulumi.aws-sweep-lora.yaml").read_text().replace("budgetUsd: 120", "budgetUsd: 3")
    assert src.count("maxRuntimeHours: ") == 2
    (project / "stacks" / "Pulumi.sw.yaml").write_text(re.sub(r"maxRuntimeHours: [0-9]+", f"maxRuntimeHours: {hours}",
                                                               src))
    again = gl("plan", "sw", cwd=project)
    assert again.returncode == 0, again.stdout


def test_spot_cap_offered_is_not_below_the_estimated_spot_price() -> None:
    out = gl("plan", "aws-lora-7b", "--config", "budgetUsd=2").stdout
    cap = float(re.search(r"maxSpotPriceUsd\) at\s+most \$([0-9.]+)/h", out)[1])
    assert cap >= 0.322 or "never" in out or "below" in out, out  # g6.xlarge spot est. $0.322/h


def test_no_shorter_runtime_is_offered_below_the_clouds_floor() -> None:
    out = " ".join(gl("plan", "aws-lora-7b", "--config", "budgetUsd=0.1").stdout.split())
    assert "no shorter runtime fits (maxRuntimeHours is at least 0.25 h on aws)" in out, out


def test_the_policys_runtime_floor_is_the_specs() -> None:
    from components.spec.clouds import SPEC_RULES
    from gpulease.core import vocabulary as v
    assert {c: SPEC_RULES[c].min_runtime_minutes for c in ("aws", "alicloud")} == v.MIN_RUNTIME_MINUTES
