"""Benchmark: ``gpulease plan`` of a sweep of 1, 10 and 100 experiments against floors measured in the same run.

plan    = the whole offline review of the sweep: run the program under the capturing mocks, run every policy of
          the pack through the analyzer path, estimate the cost, write the markdown report.
floor   = the same program with the same config registering the same resources through the SDK's bare
          ``MockMonitor`` and the same mocks: no capture, no policies, no cost, no report. plan / floor is what
          the review adds to merely running the program under mocks; the target is <= 1.25x at every size.
replay  = the captured resources registered again, in order with the same options and parents, as plain
          ``pulumi.CustomResource`` / ``ComponentResource`` objects through the bare ``MockMonitor``: the
          registration alone, without the program's own work (spec validation, lookups, user-data rendering).
          Shown for scale; plan / replay is mostly the program's own cost.

All run in this process, alternating, after a warm-up (imports and first-render caches); each figure is the
best of ``--repeats`` runs (other load on the machine only ever adds time). Every run renders and judges at one
fixed moment, noon UTC of the shipped price catalog's date (``NOW``): the review then sees fresh prices, as a user
with a refreshed catalog does, instead of ``budget-prices-fresh``'s advisory about the shipped catalog's age on
the day the bench happens to run; the work is the same either way. Run:

    .venv/bin/python bench/plan_bench.py [--sizes 1 10 100] [--repeats 5] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pulumi  # noqa: E402
from pulumi.runtime import mocks as pulumi_mocks  # noqa: E402

from gpulease.core.catalog.freshness import shipped_as_of  # noqa: E402
from gpulease.review import render as render_module  # noqa: E402
from gpulease.review import report as plan_report  # noqa: E402
from gpulease.review.engine import StackReview, estimate  # noqa: E402
from gpulease.review.policy_runner import PolicyRunner  # noqa: E402
from gpulease.review.render import Rendering, render  # noqa: E402

TARGET = 1.25
REGION = "us-east-1"
NOW = datetime.fromisoformat(f"{shipped_as_of()}T12:00:00+00:00")
"""The moment every run renders and judges at (see the module docstring)."""


def sweep_config(size: int) -> dict[str, Any]:
    """A LoRA sweep of ``size`` runs on AWS, as a user would write it."""
    return {
        "aws:region": REGION,
        "gpulease:sweep": {
            "base": {
                "name": "bench",
                "owner": "alice@example.com",
                "project": "llm-finetune",
                "costCenter": "ml-research",
                "budgetUsd": 100000,
                "gpu": {"gpuMemoryGb": 24},
                "maxRuntimeHours": 6,
                "ssh": {"allowedCidrs": ["203.0.113.7/32"], "keyName": "alice-laptop"},
                "dataDisk": {"sizeGb": 100},
                "checkpoints": {"prefix": "sweeps/bench/"},
            },
            "runs": [{"name": f"r{i}", "overrides": {"tags": {"run": str(i)}}} for i in range(size)],
        },
    }


def plan_once(config: dict[str, Any], runner: PolicyRunner) -> tuple[float, StackReview]:
    start = time.perf_counter()
    rendering = render(config, stack="bench", project="gpulease", now=NOW)
    if rendering.error:
        raise SystemExit(f"the benchmark sweep failed to render: {rendering.error}")
    verdict = runner.analyze(rendering, now=NOW)
    review = StackReview(ROOT, ROOT / "stacks" / "Pulumi.bench.yaml", rendering, verdict, estimate(rendering))
    plan_report.markdown([review])
    return time.perf_counter() - start, review


class _BareMonitor(pulumi_mocks.MockMonitor):
    """The SDK's mock monitor as it is: registers, records nothing."""

    def __init__(self, mocks: pulumi.runtime.Mocks, *_args: Any, **_kwargs: Any):
        super().__init__(mocks)
        self.captured: list = []
        self.duplicates: list[str] = []  # what the render's set-up hands its recorders (nothing is judged here)


@contextmanager
def bare_monitor() -> Iterator[None]:
    """``gpulease.review.render`` with the SDK's bare monitor: the same set-up (config, mocks, event loop), no capture."""
    original = render_module.CapturingMonitor
    # The review's own recorders (registration sites, skipped applies, thread failures, unknown stack outputs) are
    # review work: the floor runs without them.
    recorders = ("recording_sites", "recording_skipped_applies", "thread_errors", "unknown_stack_outputs")
    saved = {name: getattr(render_module, name) for name in recorders}
    render_module.CapturingMonitor = _BareMonitor  # type: ignore[misc]
    for name in recorders:
        setattr(render_module, name, lambda *_a, **_k: nullcontext())
    try:
        yield
    finally:
        render_module.CapturingMonitor = original  # type: ignore[misc]
        for name, value in saved.items():
            setattr(render_module, name, value)


def program_floor_once(config: dict[str, Any]) -> float:
    """The same program and config through the bare monitor with the same mocks."""
    with bare_monitor():
        start = time.perf_counter()
        rendering = render(config, stack="bench", project="gpulease", now=NOW)
        elapsed = time.perf_counter() - start
    if rendering.error:
        raise SystemExit(f"the floor run failed: {rendering.error}")
    return elapsed


def replay_once(captured: Rendering) -> float:
    """Register the captured resources again as plain resources, through the bare monitor."""

    def program() -> None:
        made: dict[str, pulumi.Resource] = {}
        for r in captured.resources:
            opts = pulumi.ResourceOptions(
                parent=made.get(r.parent) if r.parent else None,
                protect=r.protect,
                retain_on_delete=r.retain_on_delete,
                ignore_changes=r.ignore_changes or None,
                depends_on=[made[d] for d in r.dependencies if d in made] or None,
            )
            if r.custom:
                made[r.urn] = pulumi.CustomResource(r.type, r.name, dict(r.inputs), opts)
            else:
                made[r.urn] = pulumi.ComponentResource(r.type, r.name, None, opts)

    with bare_monitor():
        start = time.perf_counter()
        rendering = render(captured.config, stack=captured.stack, project=captured.project, program=program, now=NOW)
        elapsed = time.perf_counter() - start
    if rendering.error:
        raise SystemExit(f"the replay failed: {rendering.error}")
    return elapsed


def measure(size: int, repeats: int, runner: PolicyRunner) -> dict[str, Any]:
    config = sweep_config(size)
    _, review = plan_once(config, runner)  # warm-up, and the resources the floor registers
    program_floor_once(config)
    plans, floors, replays = [], [], []
    plan_cpu, floor_cpu = [], []
    for _ in range(repeats):
        # Each run starts from a collected heap, so none pays for the garbage of the one before it.
        gc.collect()
        began = time.process_time()
        floors.append(program_floor_once(config))
        floor_cpu.append(time.process_time() - began)
        gc.collect()
        replays.append(replay_once(review.rendering))
        gc.collect()
        began = time.process_time()
        plans.append(plan_once(config, runner)[0])
        plan_cpu.append(time.process_time() - began)
    plan, floor, replay = min(plans), min(floors), min(replays)
    return {
        "experiments": size,
        "resources": len(review.rendering.resources),
        "violations": sorted({v.policy for v in review.policy.violations}) if review.policy else [],
        "plan_s": plan,
        "floor_s": floor,
        "replay_s": replay,
        "ratio": plan / floor,
        # CPU seconds of the same runs (this process, every thread): steadier than wall time on a shared machine.
        "cpu_ratio": min(plan_cpu) / min(floor_cpu),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 10, 100])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--profile", action="store_true", help="profile one plan of the largest size")
    args = parser.parse_args(argv)
    runner = PolicyRunner()
    rows = [measure(size, args.repeats, runner) for size in args.sizes]
    print(f"| experiments | resources | plan (s) | floor (s) | plan / floor (target <= {TARGET}x) | replay (s) "
          "| plan / replay | CPU plan / floor |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for row in rows:
        verdict = "met" if row["ratio"] <= TARGET else "MISSED"
        print(f"| {row['experiments']} | {row['resources']} | {row['plan_s']:.3f} | {row['floor_s']:.3f} | "
              f"{row['ratio']:.2f}x {verdict} | {row['replay_s']:.3f} | {row['plan_s'] / row['replay_s']:.1f}x | {row['cpu_ratio']:.2f}x |")
    if any(row["violations"] for row in rows):
        print("note: the benchmark sweep has policy violations:",
              "; ".join(f"{row['experiments']}: {', '.join(row['violations'])}" for row in rows if row["violations"]))
    if args.profile:
        profiler = cProfile.Profile()
        profiler.enable()
        plan_once(sweep_config(max(args.sizes)), runner)
        profiler.disable()
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(30)
    return 0 if all(row["ratio"] <= TARGET for row in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
