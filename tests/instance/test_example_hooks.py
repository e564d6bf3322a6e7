"""The example stacks' checkpoint hooks, run for real as the watchdog runs them (``/bin/sh -c <hook>``), beside a
stand-in training process whose command line holds ``train.py``: the hook reaches it and succeeds.

``pkill -USR1 -f train.py`` matched its own ``sh -c 'pkill -USR1 -f train.py'`` shell (whose command line holds the
pattern too): the shell died of the signal and the hook was reported failed on every run. A pattern that cannot
match itself (``[t]rain.py``) signals the job alone."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.support.paths import ROOT

STACKS = sorted((ROOT / "stacks").glob("Pulumi.*.yaml"))
TRAIN = """
import signal, sys, time
def saved(*_):
    open(sys.argv[1], "w").write("saved")
    sys.exit(0)
signal.signal(signal.SIGUSR1, saved)
open(sys.argv[2], "w").write("ready")
time.sleep(60)
"""


def _hooks() -> list[tuple[str, str]]:
    found = []
    for path in STACKS:
        config = yaml.safe_load(path.read_text()).get("config") or {}
        for value in config.values():
            hook = ((value or {}).get("checkpoints") or {}).get("hook") if isinstance(value, dict) else None
            if hook:
                found.append((path.name, hook))
    return found


def test_every_example_stack_with_a_hook_is_covered() -> None:
    assert len(_hooks()) >= 6, _hooks()


@pytest.mark.skipif(shutil.which("pkill") is None, reason="pkill is not installed here")
@pytest.mark.parametrize(("stack", "hook"), _hooks())
def test_the_example_hook_signals_the_job_and_not_itself(tmp_path: Path, stack: str, hook: str) -> None:
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    saved, ready = tmp_path / "saved", tmp_path / "ready"
    job = subprocess.Popen([sys.executable, str(script), str(saved), str(ready)])
    try:
        for _ in range(400):
            if ready.exists():
                break
            time.sleep(0.025)
        done = subprocess.run(["/bin/sh", "-c", hook], capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, f"{stack}: {hook!r} exited {done.returncode}: {done.stderr}"
        assert job.wait(timeout=30) == 0
        assert saved.read_text() == "saved"
    finally:
        job.kill()
        job.wait()
