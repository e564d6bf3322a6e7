"""The documented cron lines, run for real by bash with stand-ins: a hung sweep is stopped by its timeout and
logged, a run that finds the lock taken says so in the log, a good run logs nothing, and the next run after a
hung one gets the lock (one hung sweep never silently skips every later run)."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.paths import ROOT

DOC = ROOT / "docs" / "inventory-and-reaper.md"


def cron_commands() -> list[str]:
    block = re.search(r"```cron\n(.*?)```", DOC.read_text(), re.S)
    assert block, "the docs carry a cron example"
    lines = [line for line in block.group(1).splitlines() if line and not line.startswith("#")]
    # minute hour day month weekday, then the command
    return [line.split(None, 5)[5] for line in lines]


def test_every_cron_line_is_locked_bounded_and_logged():
    commands = cron_commands()
    assert len(commands) == 2 and any("--cloud alicloud" in c for c in commands)
    for command in commands:
        assert re.search(r"flock -n -E 75 \S+ timeout -k 60 50m ", command), command
        assert "logger" in command and "--execute" in command and "--allowed-account" in command


@pytest.fixture
def sandbox(tmp_path: Path) -> dict[str, Path]:
    repo = tmp_path / "repo"
    (repo / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / "lock").mkdir()
    (tmp_path / "log").mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    logger = bin_dir / "logger"
    logger.write_text(f'#!/bin/sh\necho "$*" >> {tmp_path}/syslog\n')
    logger.chmod(logger.stat().st_mode | stat.S_IEXEC)
    return {"root": tmp_path, "repo": repo, "bin": bin_dir, "syslog": tmp_path / "syslog"}


def runnable(command: str, box: dict[str, Path], *, sweep_seconds: float, exit_code: int = 0) -> str:
    """The cron command with the machine's paths moved into the sandbox and a 0.5 s timeout instead of 50 min
    (the hung stand-in sleeps 30 s: however late it starts, the timeout ends it with 124)."""
    python = box["repo"] / ".venv" / "bin" / "python"
    python.write_text(f"#!/bin/sh\nsleep {sweep_seconds}\nexit {exit_code}\n")
    python.chmod(python.stat().st_mode | stat.S_IEXEC)
    root = box["root"]
    command = command.replace("cd /opt/gpulease", f"cd {box['repo']}")
    command = command.replace("/run/lock/", f"{root}/lock/").replace("/var/log/", f"{root}/log/")
    return command.replace("timeout -k 60 50m", "timeout -k 1 0.5s")


def run_cron(command: str, box: dict[str, Path]) -> float:
    env = {"PATH": f"{box['bin']}:{os.environ['PATH']}", "HOME": str(box["root"])}
    started = time.monotonic()
    subprocess.run(["bash", "-c", command], env=env, check=False, timeout=60)
    return time.monotonic() - started


def syslog(box: dict[str, Path]) -> list[str]:
    return box["syslog"].read_text().splitlines() if box["syslog"].exists() else []


@pytest.mark.parametrize("index", [0, 1])
def test_a_hung_sweep_is_stopped_logged_and_the_next_run_proceeds(sandbox, index):
    documented = cron_commands()[index]

    elapsed = run_cron(runnable(documented, sandbox, sweep_seconds=30), sandbox)
    assert elapsed < 20, "the timeout stopped the hung sweep"
    (line,) = syslog(sandbox)
    assert "exited 124" in line

    elapsed = run_cron(runnable(documented, sandbox, sweep_seconds=0), sandbox)
    assert len(syslog(sandbox)) == 1, "the next run got the lock and succeeded quietly"


@pytest.mark.parametrize("index", [0, 1])
def test_a_run_that_finds_the_lock_taken_says_so(sandbox, index):
    documented = cron_commands()[index]
    lock = re.search(r"flock -n -E 75 (\S+)", documented).group(1).replace("/run/lock/", f"{sandbox['root']}/lock/")
    holder = subprocess.Popen(["flock", lock, "sleep", "30"])
    try:
        deadline = time.monotonic() + 10
        while subprocess.run(["flock", "-n", lock, "true"], check=False).returncode == 0:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        run_cron(runnable(documented, sandbox, sweep_seconds=0), sandbox)
    finally:
        holder.kill()
        holder.wait()
    (line,) = syslog(sandbox)
    assert "exited 75" in line and "previous sweep still holds the lock" in line
