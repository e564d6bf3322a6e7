"""A small "training job" for the run tools: it takes steps, saves checkpoints, resumes from the newest one, and
moves the fake nvidia-smi's numbers the way a framework using the GPU would.

``train.py [--max-steps N] [--save-every K] [--resume] [--ignore-checkpoints] [--idle] [--step-seconds S]
[--memory MIB] [--report file|line|none] [--announce-checkpoints]``:

- steps from 1 (or, with ``--resume``, from the newest ``step-<n>.pt`` under ``$GPULEASE_CHECKPOINT_DIR``; with
  ``--ignore-checkpoints`` too, from 1 as a job that does not resume would);
- with ``--resume`` it reports the step it resumed at: ``GPULEASE_RESUMED_STEP=<n>`` on its output (``line``), or
  n in ``$GPULEASE_RESUME_STEP_FILE`` (``file``), or not at all (``none``);
- unless ``--idle``, it writes ``<util>, <memory>, <total>`` into the fake nvidia-smi's state file (``$GPU_STATE``
  is baked into the command by the test: the job's environment is clean) as it starts;
- every ``--save-every`` steps it writes ``step-<n>.pt`` (and with ``--announce-checkpoints`` prints
  ``GPULEASE_CHECKPOINT_STEP=<n>``).
"""

from __future__ import annotations

import os
import pwd
import shlex
import sys
from pathlib import Path

from tests.support.job_agent import JOB_USER

# The login user runs the job: the system's python3 (a virtualenv under root's home is not theirs to run).
PYTHON = "/usr/bin/python3" if os.geteuid() == 0 and os.path.exists("/usr/bin/python3") else sys.executable

TRAIN_PY = r'''
import argparse, os, re, sys, time
p = argparse.ArgumentParser()
p.add_argument("--max-steps", type=int, default=int(os.environ.get("GPULEASE_VERIFY_STEPS") or 1000))
p.add_argument("--save-every", type=int, default=5)
p.add_argument("--resume", action="store_true")
p.add_argument("--ignore-checkpoints", action="store_true")
p.add_argument("--idle", action="store_true")
p.add_argument("--step-seconds", type=float, default=0.05)
p.add_argument("--memory", type=float, default=20000)
p.add_argument("--report", default="line")
p.add_argument("--announce-checkpoints", action="store_true")
p.add_argument("--gpu-state", default="")
a = p.parse_args()
ckpt = os.environ["GPULEASE_CHECKPOINT_DIR"]
start = 0
if a.resume and not a.ignore_checkpoints:
    steps = [int(m.group(1)) for n in os.listdir(ckpt) for m in [re.match(r"step-(\d+)\.pt$", n)] if m]
    start = max(steps, default=0)
if a.resume and a.report == "line":
    print(f"GPULEASE_RESUMED_STEP={start}", flush=True)
elif a.resume and a.report == "file":
    with open(os.environ["GPULEASE_RESUME_STEP_FILE"], "w") as fh:
        fh.write(f"{start}\n")
if not a.idle and a.gpu_state:
    with open(os.path.join(a.gpu_state, "utilization.csv"), "w") as fh:
        fh.write(f"97, {a.memory:g}, 23028\n")
print(f"training from step {start + 1} to {a.max_steps}", flush=True)
for step in range(start + 1, a.max_steps + 1):
    time.sleep(a.step_seconds)
    print(f"step {step} loss {1 / step:.4f} lr 0.0001", flush=True)
    if step % a.save_every == 0:
        with open(os.path.join(ckpt, f"step-{step}.pt"), "w") as fh:
            fh.write("weights" * 10)
        if a.announce_checkpoints:
            print(f"GPULEASE_CHECKPOINT_STEP={step}", flush=True)
        print(f"saved {ckpt}/step-{step}.pt", flush=True)
'''


def prepare(data: Path) -> Path:
    """The data directory as the bootstrap leaves it (logs, checkpoints, code owned by the login user), the job in
    ``code/train.py`` and the fake nvidia-smi's state in ``gpu/`` (writable by the job); returns the state dir."""
    user = pwd.getpwnam(JOB_USER)
    gpu = data / "gpu"
    for name in ("logs", "checkpoints", "code", "gpu"):
        (data / name).mkdir(exist_ok=True)
    (data / "code" / "train.py").write_text(TRAIN_PY)
    (gpu / "utilization.csv").write_text("0, 0, 23028\n")
    (gpu / "header.txt").write_text("| NVIDIA-SMI 550.127.05   Driver Version: 550.127.05   CUDA Version: 12.4 |\n")
    (gpu / "inventory.csv").write_text("NVIDIA A10G, 550.127.05\n")
    if os.geteuid() == 0:
        for path in [data, *data.rglob("*")]:
            os.chown(path, user.pw_uid, user.pw_gid)
    return gpu


def train(data: Path, *args: str) -> str:
    """The command line of the fake job, as a spec's verify.command / job.command would give it."""
    gpu = str(data / "gpu")
    return shlex.join([PYTHON, str(data / "code" / "train.py"), "--gpu-state", gpu, *args])
