"""Benchmark: ``gpulease plan`` of a sweep of 100 runs, as a new process, against the same program run under the
Pulumi SDK's own mocks in a new process (a floor measured in the same run).

plan  = ``python -m gpulease plan <sweep stack> --format json`` (stdout discarded): start-up, the CLI, the render
        in its own child process (the program under the capturing mocks), every policy of the pack, the cost
        estimate and the JSON report. **Target: under 5 s for 100 runs, and plan / floor <= 1.0.**
floor = the same program and config in a new process through the SDK's bare ``MockMonitor`` with the SDK's own
        registration path (its stack trace per resource, its worker threads for every monitor call, the default
        garbage collector): what merely running the program offline costs, with no capture, no policies, no cost,
        no report and no isolation.

The sweep is ``bench/plan_bench.py``'s (``sweep_config``): one spot GPU, disk, schedule and user-data per run.
Its stack file is written to ``stacks/`` for the run and removed afterwards. Both commands run alternately
``--repeats`` times after a warm-up; each figure is the best run's wall time, with its CPU time (user + system,
the child processes included) beside it: on a shared machine the CPU time is the steadier figure. Run:

    .venv/bin/python bench/sweep_speed.py [--runs 100] [--repeats 5]

It exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from plan_bench import sweep_config  # noqa: E402

TARGET_SECONDS = 5.0
TARGET_RATIO = 1.0
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

FLOOR = """
import contextlib, sys, yaml
from pulumi.runtime import mocks as pulumi_mocks
from gpulease.review import render as r

class Bare(pulumi_mocks.MockMonitor):
    def __init__(self, mocks, *_args, **_kwargs):
        super().__init__(mocks)
        self.captured = []

r.CapturingMonitor = Bare
r.fast_registration = contextlib.nullcontext
r.recording_sites = contextlib.nullcontext
config = yaml.safe_load(open(sys.argv[1]))["config"]
rendering = r.render(config, stack="bench", project="gpulease")
assert rendering.error is None, rendering.error
"""


def timed(cmd: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds (user + system of the process and its children) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, env=ENV, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    name = f"bench-sweep-{os.getpid()}"
    stack_file = ROOT / "stacks" / f"Pulumi.{name}.yaml"
    stack_file.write_text(yaml.safe_dump({"config": sweep_config(args.runs)}))
    try:
        plan_cmd = [sys.executable, "-m", "gpulease", "plan", name, "--format", "json"]
        floor_cmd = [sys.executable, "-c", FLOOR, str(stack_file)]
        timed(plan_cmd), timed(floor_cmd)  # warm the file cache and the bytecode
        plans, floors = [], []
        for _ in range(args.repeats):  # alternate, so that a burst of load hits both
            floors.append(timed(floor_cmd))
            plans.append(timed(plan_cmd))
    finally:
        stack_file.unlink()
    (plan, plan_cpu), (floor, floor_cpu) = min(plans), min(floors)
    ratio = plan / floor
    met = plan < TARGET_SECONDS and ratio <= TARGET_RATIO
    print(f"| runs | plan (s) | plan CPU (s) | floor (s) | floor CPU (s) | plan / floor (target <= {TARGET_RATIO}x) "
          f"| target < {TARGET_SECONDS:g} s |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    print(f"| {args.runs} | {plan:.2f} | {plan_cpu:.2f} | {floor:.2f} | {floor_cpu:.2f} | {ratio:.2f}x | "
          f"{'met' if met else 'MISSED'} |")
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
