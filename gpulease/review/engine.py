"""One offline review of a stack: what the program registers (under mocks), the pack's verdict, the cost.

This is ``gpulease plan`` without the printing: the CLI, the pull-request workflow, the tests and the benchmark
all build ``StackReview`` objects here and hand them to ``gpulease.review.report`` for display.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from gpulease.core import clock
from gpulease.core.cost import StackCost, configured_region, estimate_resources
from gpulease.core.errors import UserError
from gpulease.review import stacks
from gpulease.review.policy_runner import PolicyResult, PolicyRunner
from gpulease.review.render import Rendering, load_stack_file, render
from gpulease.review.stacks import PROJECT_ROOT

EXIT_OK = 0
EXIT_VIOLATIONS = 1
EXIT_BAD_INPUT = 2


@dataclass
class StackReview:
    project_dir: Path
    stack_file: Path
    rendering: Rendering
    policy: PolicyResult | None
    cost: StackCost | None = None  # None when the program failed
    reviewed_at: datetime | None = None  # the moment the review judged at (price ages are counted to it)

    @property
    def name(self) -> str:
        return f"{self.rendering.project}/{self.rendering.stack}"

    @property
    def status(self) -> str:
        """``error`` (the program failed: bad input), ``fail`` (mandatory violations) or ``pass``."""
        if self.rendering.error:
            return "error"
        if self.policy and self.policy.mandatory:
            return "fail"
        return "pass"

    @property
    def exit_code(self) -> int:
        return {"error": EXIT_BAD_INPUT, "fail": EXIT_VIOLATIONS}.get(self.status, EXIT_OK)


class UnsupportedProjectError(UserError):
    """A Pulumi project whose program ``gpulease plan`` cannot run (not Python, no entry point)."""


def program_dir_of(project_dir: Path) -> Path:
    """Where a Pulumi Python project's ``__main__.py`` is: the project root, or its ``main`` directory."""
    meta = stacks.project_meta(project_dir)
    runtime = meta.get("runtime")
    runtime_name = runtime.get("name") if isinstance(runtime, dict) else runtime
    if runtime_name != "python":
        raise UnsupportedProjectError(
            f"{project_dir}: runtime {runtime_name!r} is not supported; gpulease plan runs Python Pulumi programs"
        )
    main = project_dir / str(meta.get("main") or ".")
    directory = main if main.is_dir() else main.parent
    if not (directory / "__main__.py").exists():
        raise UnsupportedProjectError(f"{project_dir}: no __main__.py in {directory}; accepted: a Python program "
                                      "whose entry point is __main__.py (the Pulumi default)")
    return directory


def render_target(
    project_dir: Path, stack_file: Path, now: datetime | None = None, organization: str | None = None
) -> Rendering:
    """Run a project's program for one of its stack files, under mocks."""
    project, _ = stacks.project_info(project_dir)
    try:
        config = load_stack_file(stack_file)
    except UserError as exc:
        # A stack file that cannot be read is this stack's error; the other stacks are still reviewed.
        return Rendering(project=project, stack=stacks.stack_name(stack_file), config={}, error=str(exc))
    program_dir = None if project_dir.resolve() == PROJECT_ROOT else program_dir_of(project_dir)
    return render(config, stack=stacks.stack_name(stack_file), project=project, program_dir=program_dir, now=now,
                  organization=organization)


def estimate(rendering: Rendering) -> StackCost:
    """The cost model's estimate for a rendering: in the stack's configured region, each resource in its explicit
    provider's, templates found through the dependencies (``gpulease.core.cost``)."""
    providers = {r.urn: r.inputs.get("region") for r in rendering.resources if r.type.startswith("pulumi:providers:")}
    resources = [
        (r.type, r.inputs, {"name": r.name, "retainOnDelete": r.retain_on_delete, "urn": r.urn,
                            "dependencies": r.property_dependencies,
                            "region": providers.get((r.provider or "").rsplit("::", 1)[0])})
        for r in rendering.resources if r.custom
    ]
    return estimate_resources(resources, region=configured_region(rendering.config))


def review(
    targets: list[str],
    *,
    policy_config: Mapping[str, Any] | None = None,
    policies: bool = True,
    now: datetime | None = None,
    project_dir: Path = PROJECT_ROOT,
) -> list[StackReview]:
    """Review every stack the targets name (stack names, stack files or project directories), in order."""
    pairs = [pair for target in targets for pair in stacks.resolve(target, project_dir)]
    runner = PolicyRunner(config=policy_config) if policies else None
    moment = now or clock.utcnow()
    out = []
    for proj, stack_file in pairs:
        rendering = render_target(proj, stack_file, now=now)
        verdict = runner.analyze(rendering, now=now) if runner and not rendering.error else None
        cost = estimate(rendering) if not rendering.error else None
        out.append(StackReview(project_dir=proj, stack_file=stack_file, rendering=rendering, policy=verdict, cost=cost,
                               reviewed_at=moment))
    return out


def exit_code(reviews: list[StackReview]) -> int:
    """2 when any stack could not be rendered, else 1 when any has a mandatory violation, else 0."""
    return max((r.exit_code for r in reviews), default=EXIT_OK)
