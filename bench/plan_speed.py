"""Benchmark: ``gpulease plan`` of one stack, as a new process, against a bare Python process that only imports the
Pulumi SDK classes that stack registers (the least any program deploying it must load).

plan  = ``python -m gpulease plan <stack> --format json`` (stdout discarded): start-up, the CLI, the spec, the
        program under mocks, every policy of the pack, the cost estimate, the JSON report.
floor = ``python -c "import pulumi; from pulumi_aws.ec2 import Instance; ..."`` for exactly the resource classes
        (and the provider package of the invokes) the stack's rendering registered, found before timing.

Both run alternately ``--repeats`` times after a warm-up run; each figure is the best run (other load on the machine
only ever adds time). They run as an installed project runs: with bytecode caches (``PYTHONDONTWRITEBYTECODE`` is
dropped from their environment, so the warm-up writes the project's ``__pycache__`` as a first use would). The
target is plan / floor <= 1.3 for every stack given. Run:

    .venv/bin/python bench/plan_speed.py [aws-lora-7b ali-lora-7b ...] [--repeats 7]

It exits 1 when a stack misses the target.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpulease.review.engine import review  # noqa: E402

TARGET = 1.3
SDK_MODULES = {"aws": "pulumi_aws", "alicloud": "pulumi_alicloud", "time": "pulumiverse_time"}


def floor_imports(stack: str) -> str:
    """The import statements of the SDK classes the stack registers, as the program would reach them."""
    (found,) = review([stack], policies=False)
    lines = {"import pulumi"}
    for res in found.rendering.custom_resources:
        package, module_path, class_name = res.type.split(":")
        root = SDK_MODULES[package]
        module = module_path.split("/")[0]
        dotted = root if module == "index" else f"{root}.{module}"
        lines.add(f"from {dotted} import {class_name}")
    return "\n".join(sorted(lines))


ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def best(cmd: list[str], repeats: int) -> list[tuple[float, float]]:
    """(wall, CPU) seconds of each run; CPU is user + system of the process and its children (a render's child)."""
    times = []
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(cmd, cwd=ROOT, env=ENV, check=True, stdout=subprocess.DEVNULL)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        times.append((time.perf_counter() - start, cpu))
    return times


def measure(stack: str, repeats: int) -> tuple[float, float, float, float]:
    """Best wall times of plan and floor, and their best CPU times (steadier on a shared machine)."""
    floor_cmd = [sys.executable, "-c", floor_imports(stack)]
    plan_cmd = [sys.executable, "-m", "gpulease", "plan", stack, "--format", "json"]
    best(floor_cmd, 1), best(plan_cmd, 1)  # warm the file cache
    floor, plan = [], []
    for _ in range(repeats):  # alternate, so that a burst of load hits both
        floor += best(floor_cmd, 1)
        plan += best(plan_cmd, 1)
    return min(w for w, _ in plan), min(w for w, _ in floor), min(c for _, c in plan), min(c for _, c in floor)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("stacks", nargs="*", default=["aws-lora-7b", "ali-lora-7b"])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    print(f"| stack | plan (s) | floor (s) | plan / floor (target <= {TARGET}x) | plan CPU (s) | floor CPU (s) "
          "| CPU ratio |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    missed = False
    for stack in args.stacks:
        plan, floor, plan_cpu, floor_cpu = measure(stack, args.repeats)
        ratio = plan / floor
        missed |= ratio > TARGET
        print(f"| {stack} | {plan:.3f} | {floor:.3f} | {ratio:.2f}x {'met' if ratio <= TARGET else 'MISSED'} | "
              f"{plan_cpu:.3f} | {floor_cpu:.3f} | {plan_cpu / floor_cpu:.2f}x |")
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
