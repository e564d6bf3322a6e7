"""The checkpoint signal reaches the training processes, never torchrun's elastic agent: its command line names the
training script too, and SIGUSR1's default action would end it (torch handles only TERM, INT, HUP and QUIT:
``TORCHELASTIC_SIGNALS_TO_HANDLE`` in torch/distributed/elastic/multiprocessing/api.py)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from instance import watchdog, watchdog_procs
from tests.support.instance import FakeClock, make_rig

START = 1_900_000_000.0

WORKER = (
    "import signal, sys, time\n"
    "def save(*_):\n"
    "    open(sys.argv[1], 'w').write('weights')\n"
    "    sys.exit(0)\n"
    "signal.signal(signal.SIGUSR1, save)\n"
    "open(sys.argv[1] + '.ready', 'w').close()\n"
    "time.sleep(60)\n"
)


def _wait_for(path: Path) -> None:
    for _ in range(250):
        if path.exists():
            return
        time.sleep(0.02)
    raise AssertionError(f"{path} never appeared")


def test_the_signal_goes_to_the_worker_and_never_to_the_torchrun_launcher(tmp_path: Path) -> None:
    marker = f"train-{tmp_path.name}.py"
    saved = tmp_path / "step-200.pt"
    launcher = tmp_path / "bin" / "torchrun"
    launcher.parent.mkdir(exist_ok=True)
    # A launcher the way torchrun runs: no handler for SIGUSR1 (its default action ends it), one worker below it.
    launcher.write_text(f"#!{sys.executable}\n"
                        "import subprocess, sys, time\n"
                        f"worker = subprocess.Popen([sys.executable, '-c', {WORKER!r}, {str(saved)!r}, sys.argv[-1]])\n"
                        "worker.wait()\n"
                        "time.sleep(60)\n")
    launcher.chmod(0o755)
    rig = make_rig(tmp_path, checkpoint_hook=None, checkpoint_signal="SIGUSR1", checkpoint_process=marker,
                   proc_root="/proc")
    agent = subprocess.Popen([str(launcher), "--nproc-per-node", "1", marker])
    try:
        _wait_for(Path(str(saved) + ".ready"))
        watchdog.configure_logging(rig.settings, FakeClock(START))
        dog = watchdog.Watchdog(rig.settings, FakeClock(START))
        dog.signal_process("SIGUSR1", marker, 10)
        assert saved.read_text() == "weights"  # the worker wrote its checkpoint and exited
        time.sleep(0.1)
        assert agent.poll() is None  # the launcher still runs
    finally:
        agent.kill()
        agent.wait()
    log = rig.log_text()
    assert f"not signalling the launcher(s) [{agent.pid}] matching {marker!r}" in log
    assert "sent SIGUSR1 to [" in log and f"{agent.pid}]" not in log.split("sent SIGUSR1 to [")[1].split("\n")[0]


@pytest.mark.parametrize(("argv", "launcher"), [
    (["torchrun", "--nproc-per-node", "8", "train.py"], True),
    (["/opt/venv/bin/torchrun", "train.py"], True),
    (["/usr/bin/python3", "/opt/venv/bin/torchrun", "train.py"], True),
    (["python3", "-m", "torch.distributed.run", "train.py"], True),
    (["python", "-u", "-m", "torch.distributed.launch", "train.py"], True),
    (["python3", "-X", "dev", "-mtorch.distributed.run", "train.py"], True),
    (["/usr/bin/python3", "-u", "train.py", "--local-rank=0"], False),
    (["python3", "-c", "import torchrun", "train.py"], False),
    (["sh", "-c", "python3 train.py"], True),
    (["/bin/bash", "-c", "torchrun train.py"], True),
    ([], False),
])
def test_what_counts_as_the_launcher(argv: list[str], launcher: bool) -> None:
    assert watchdog_procs._launcher(argv) is launcher
