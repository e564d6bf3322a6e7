"""One offline review of a stack: what the program registers (under mocks), the pack's verdict, the cost.

This is ``gpulease plan`` without the printing: the CLI, the pull-request workflow, the tests and the benchmark
all build ``StackReview`` objects here and hand them to ``gpulease.review.report`` for display.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from components.spec.load import STACK_FILE_ENV
from gpulease.core import clock
from gpulease.core.cost import StackCost, configured_regions, estimate_resources
from gpulease.core.errors import UserError
from gpulease.core.shown import shown_path
from gpulease.review import isolation, preconditions, stacks
from gpulease.review.config_overrides import lay_over
from gpulease.review.policy_runner import PolicyResult, PolicyRunner, Violation
from gpulease.review.redact import rendering_secrets, too_many
from gpulease.review.render import Rendering, load_stack_file, render
from gpulease.review.stacks import DEFAULT_STACK, PROJECT_ROOT
from gpulease.review.unknown_compute import holds_unknown_or_secret, wire_values

EXIT_OK = 0
EXIT_VIOLATIONS = 1
EXIT_BAD_INPUT = 2
EXIT_PARTIAL = 3
# Several stacks: the exit code of the worst, in this order: one not reviewed at all, then one reviewed only in
# part (its findings are reported, but a part of the program was never seen, so it cannot pass), then violations.
_EXIT_SEVERITY = (EXIT_BAD_INPUT, EXIT_PARTIAL, EXIT_VIOLATIONS, EXIT_OK)
NO_STACK_FILE = "(no stack file)"


@dataclass
class StackReview:
    project_dir: Path
    stack_file: Path | None  # None: a project reviewed without a stack file (--config and the program's defaults)
    rendering: Rendering
    policy: PolicyResult | None
    cost: StackCost | None = None  # None when nothing was rendered
    reviewed_at: datetime | None = None  # the moment the review judged at (price ages are counted to it)

    @property
    def name(self) -> str:
        return f"{self.rendering.project}/{self.rendering.stack}"

    @property
    def stack_file_label(self) -> str:
        """The stack file as the user would type it here (relative to the working folder when inside it)."""
        return shown_path(self.stack_file) if self.stack_file is not None else NO_STACK_FILE

    @property
    def status(self) -> str:
        """``error`` (nothing could be reviewed: bad input, or the program failed before it registered anything),
        ``partial`` (the program stopped part way; what it registered is reviewed), ``fail`` (mandatory
        violations) or ``pass``."""
        if self.rendering.partial:
            return "partial"
        if self.rendering.error:
            return "error"
        if self.policy and self.policy.mandatory:
            return "fail"
        return "pass"

    @property
    def exit_code(self) -> int:
        return {"error": EXIT_BAD_INPUT, "partial": EXIT_PARTIAL, "fail": EXIT_VIOLATIONS}.get(self.status, EXIT_OK)


class UnsupportedProjectError(UserError):
    """A Pulumi project whose program ``gpulease plan`` cannot run (not Python, no entry point)."""


def program_of(project_dir: Path) -> Path:
    """The program file ``gpulease plan`` runs for a Pulumi Python project (``stacks.program_file``: the file
    Pulumi's Python host runs)."""
    meta = stacks.project_meta(project_dir)
    runtime = meta.get("runtime")
    runtime_name = runtime.get("name") if isinstance(runtime, dict) else runtime
    if runtime_name != "python":
        raise UnsupportedProjectError(
            f"{project_dir}: runtime {runtime_name!r} is not supported; gpulease plan runs Python Pulumi programs"
        )
    try:
        return stacks.program_file(project_dir)
    except stacks.ProgramFileError as exc:
        raise UnsupportedProjectError(str(exc)) from None


Judgement = tuple[PolicyResult | None, StackCost | None]


def judge(rendering: Rendering, runner: PolicyRunner | None, now: datetime | None = None) -> Judgement:
    """The pack's verdict and the cost of what a rendering holds; nothing when nothing was rendered."""
    if rendering.error is not None and not rendering.partial:
        return None, None
    verdict = runner.analyze(rendering, now=now) if runner else None
    if verdict is not None:
        verdict.violations.extend(precondition_findings(rendering))
        verdict.violations.extend(quota_advisories(rendering))
    return verdict, partial_cost(estimate(rendering), rendering)


PARTIAL_COST = "the review is partial: what the program registers after its failure is not priced"


def partial_cost(cost: StackCost, rendering: Rendering) -> StackCost:
    """A partial rendering's figures are all unknown (never a known figure, never $0): what the program would have
    registered after its failure is not in them."""
    if rendering.partial:
        cost.worst_case_known = False
        cost.hourly_reason, cost.expected_reason, cost.after_destroy_reason, cost.worst_case_reason = (
            _partial(cost.hourly_reason), _partial(cost.expected_reason), _partial(cost.after_destroy_reason),
            _partial(cost.worst_case_reason))
        cost.experiments = [
            replace(e, worst_case_known=False, worst_case_reason=_partial(e.worst_case_reason),
                    hourly_reason=_partial(e.hourly_reason), expected_reason=_partial(e.expected_reason),
                    after_destroy_reason=_partial(e.after_destroy_reason))
            for e in cost.experiments]
    return cost


def _partial(reason: str | None) -> str:
    return "; ".join(x for x in (PARTIAL_COST, reason) if x)


PLAN_QUOTAS = ("eip-quota", "gpu-vcpus")
"""The advisory rows of ``preconditions`` the plan shows: a quota a stack can use most of by itself (four nodes use
four of the default five Elastic IPs), and the GPU vCPU quota its instances count against (its code, the vCPUs the
stack needs: a new AWS account often has 0; ``gpulease check`` reads the account's own)."""


def quota_advisories(rendering: Rendering) -> list[Violation]:
    """The quotas of ``PLAN_QUOTAS`` the stack may exhaust, as advisory findings of the plan: the account's own
    quota is not visible offline."""
    rows = {p.name: p for p in preconditions.PRECONDITIONS}
    return [Violation(policy=f"quota-{name}", level="advisory", message=f"{rows[name].rule}\n{line}", urn=None,
                      stage="offline") for name, line in preconditions.advisories(rendering) if name in PLAN_QUOTAS]


PRECONDITIONS_RULE = "api-preconditions"


def precondition_findings(rendering: Rendering) -> list[Violation]:
    """Every row of ``preconditions.violations`` for this rendering, the kit's own stacks or any other program:
    one finding each, named ``api-preconditions`` with the row's name, rule and source; mandatory for the rows of
    ``preconditions.MANDATORY``, advisory otherwise."""
    rows = {p.name: p for p in preconditions.PRECONDITIONS}
    return [Violation(policy=PRECONDITIONS_RULE, level="mandatory" if name in preconditions.MANDATORY else "advisory",
                      message=f"{name}: {rows[name].rule} ({rows[name].source})\n{name}: {line}", urn=None,
                      stage="offline") for name, line in preconditions.violations(rendering)]


def start_render(
    project_dir: Path,
    stack_file: Path | None,
    *,
    stack: str | None = None,
    overrides: Mapping[str, Any] | None = None,
    now: datetime | None = None,
    timeout: float = isolation.DEFAULT_TIMEOUT_S,
    runner: PolicyRunner | None = None,
    judged: bool = False,
    organization: str | None = None,
) -> PendingRender:
    """Start rendering one stack of a project in a process of its own (``gpulease.review.isolation``).

    ``stack_file`` None reviews the project without one, as stack ``stack`` (default ``dev``); ``overrides`` (the
    ``--config`` values) are laid over the stack file's config. With ``judged``, the child also judges what it
    rendered (``judge`` with ``runner``) and ``PendingRender.judgement`` holds the verdict and the cost.
    ``organization`` is what ``pulumi.get_organization()`` answers (``render``)."""
    project, _ = stacks.project_info(project_dir)
    name = stacks.stack_name(stack_file) if stack_file is not None else (stack or DEFAULT_STACK)
    try:
        config = load_stack_file(stack_file) if stack_file is not None else {}
        config = lay_over(config, overrides, project)
    except UserError as exc:
        # A stack file that cannot be read (or a --config path it cannot take) is this stack's error; the other
        # stacks are still reviewed.
        return PendingRender(Rendering(project=project, stack=name, config={}, error=str(exc)))
    program_path = None if project_dir.resolve() == PROJECT_ROOT else program_of(project_dir)

    def work(sink: Any = None) -> Rendering:
        with _naming(stack_file):
            return render(config, stack=name, project=project, program_path=program_path, now=now, sink=sink,
                          organization=organization)

    def judge_in_child(rendering: Rendering) -> Judgement:
        # Looked up when called: a test may replace ``judge`` (the child inherits the replacement).
        return globals()["judge"](rendering, runner, now)

    if not isolation.available():
        return PendingRender(work())
    child = isolation.Child(work, timeout, judge=judge_in_child if judged else None)
    return PendingRender(None, child=child, project=project, stack=name, config=config)


@contextlib.contextmanager
def _naming(stack_file: Path | None) -> Iterator[None]:
    """The program's errors name ``stack_file`` as the user would type it (``STACK_FILE_ENV``) while it renders."""
    previous = os.environ.get(STACK_FILE_ENV)
    if stack_file is not None:
        os.environ[STACK_FILE_ENV] = shown_path(stack_file)
    else:
        os.environ.pop(STACK_FILE_ENV, None)
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(STACK_FILE_ENV, None)
        else:
            os.environ[STACK_FILE_ENV] = previous


class PendingRender:
    """A render under way in its child process (or already done); ``result`` waits for it."""

    def __init__(self, done: Rendering | None, *, child: isolation.Child | None = None, project: str = "",
                 stack: str = "", config: dict[str, Any] | None = None):
        self._done, self._child = done, child
        self._meta = (project, stack, dict(config or {}))
        self.sdk_modules: list[str] = []
        self.judgement: Judgement | None = None  # from the child, when it judged (``start_render(judged=True)``)

    def cancel(self) -> None:
        """Stop the render (its child goes at once)."""
        if self._done is None and self._child is not None:
            self._child.kill()

    def result(self) -> Rendering:
        if self._done is None and self._child is not None:
            outcome = self._child.wait()
            self.sdk_modules = outcome.sdk_modules
            self.judgement = outcome.judged
            project, stack, config = self._meta
            self._done = isolation.rendering_of(outcome, project=project, stack=stack, config=config)
        assert self._done is not None
        return self._done


def render_target(project_dir: Path, stack_file: Path | None, now: datetime | None = None, **kwargs: Any) -> Rendering:
    """Render one stack of a project, isolated, and wait for it (``start_render`` for the arguments)."""
    return start_render(project_dir, stack_file, now=now, **kwargs).result()


def cost_inputs(resource: Any) -> Any:
    """A resource's inputs for the cost model: values not known offline kept as ``UNKNOWN`` (an unknown size is an
    unknown worst case, never an absent one read as a single instance), secrets unwrapped."""
    struct = getattr(resource, "input_struct", None)
    # Only a struct holding an unknown or a secret reads otherwise than the captured inputs.
    return resource.inputs if struct is None or not holds_unknown_or_secret(struct) else wire_values(struct)


def estimate(rendering: Rendering) -> StackCost:
    """The cost model's estimate for a rendering: in the stack's configured region, each resource in its explicit
    provider's, templates found through the dependencies (``gpulease.core.cost``)."""
    providers = {r.urn: r.inputs.get("region") for r in rendering.resources if r.type.startswith("pulumi:providers:")}

    def region_of(r: Any) -> Any:
        if r.provider:
            return providers.get(r.provider.rsplit("::", 1)[0])
        # The package's default provider reads its own config key: aws-native:region for pulumi_aws_native, as
        # the pack reads it from the default provider's properties.
        return rendering.config.get(f"{r.type.split(':', 1)[0]}:region")

    resources = [
        (r.type, cost_inputs(r), {"name": r.name, "retainOnDelete": r.retain_on_delete, "urn": r.urn,
                            "dependencies": r.property_dependencies, "region": region_of(r),
                            "explicitProvider": bool(r.provider)})
        for r in rendering.resources if r.custom
    ]
    return estimate_resources(resources, region=configured_regions(rendering.config))


def review(
    targets: list[str],
    *,
    policy_config: Mapping[str, Any] | None = None,
    policies: bool = True,
    now: datetime | None = None,
    project_dir: Path = PROJECT_ROOT,
    stack: str | None = None,
    overrides: Mapping[str, Any] | None = None,
    timeout: float = isolation.DEFAULT_TIMEOUT_S,
    organization: Callable[[Path], str | None] | None = None,
) -> list[StackReview]:
    """Review every stack the targets name (stack names, stack files or project directories), in order.

    Each stack is rendered and judged (the pack and the cost) in a child process of its own
    (``gpulease.review.isolation``): the pack is loaded here first, so every child inherits it, and the SDK
    modules a child imported are imported here before the next child starts, so that it inherits them too. When
    a child could not judge (it crashed or ran out of time), the resources it streamed are judged here.
    ``stack`` selects (or, without a stack file, names) the stack of a project directory; ``overrides`` are
    ``--config`` values laid over every stack's config; ``organization`` gives each project folder's Pulumi
    organization (``gpulease.review.organization``), what the stack's physical names hash."""
    items = [item for target in targets for item in stacks.resolve_targets(target, project_dir, stack=stack)]
    moment = now or clock.utcnow()
    runner = PolicyRunner(config=policy_config) if policies else None
    out = []
    for index, (proj, stack_file, name) in enumerate(items):
        pending = start_render(proj, stack_file, stack=name, overrides=overrides, now=now, timeout=timeout,
                               runner=runner, judged=True,
                               organization=organization(proj) if organization is not None else None)
        rendering = pending.result()
        verdict, cost = pending.judgement or judge(rendering, runner, now)
        if (bound := too_many(rendering_secrets(rendering))) is not None:  # a report could not hide them all
            rendering, verdict, cost = replace(rendering, resources=[], error=bound), None, None
        if index + 1 < len(items):
            isolation.warm(pending.sdk_modules)
        out.append(StackReview(project_dir=proj, stack_file=stack_file, rendering=rendering, policy=verdict, cost=cost,
                               reviewed_at=moment))
    return out


def exit_code(reviews: list[StackReview]) -> int:
    """2 when any stack could not be reviewed at all, else 3 when any was reviewed only in part, else 1 when any
    has a mandatory violation, else 0."""
    codes = {r.exit_code for r in reviews}
    return next((code for code in _EXIT_SEVERITY if code in codes), EXIT_OK)
