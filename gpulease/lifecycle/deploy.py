"""``gpulease up STACK``: the offline review first, then ``pulumi up`` with the policy pack through the Automation
API (``gpulease.ephemeral.backend``, the seam the ephemeral stacks use), streaming its progress; a capacity error
at first creation tries the next zone or type the spec allows (``capacity``); then it waits, bounded, for the
instance's ready and verify records in the bucket (``gpulease.ephemeral.channel``) and says how to connect."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from components.aws_credentials import ProviderCredentials, provider_credentials
from components.spec import prompted
from components.spec.load import CONFIG_NAMESPACE, EXPERIMENT_KEY, StackSpec, load_stack_spec
from gpulease.core import inputfile
from gpulease.core.errors import UserError
from gpulease.core.shown import shown_path
from gpulease.ephemeral.backend import AutomationBackend, ResourceEvent, StackBackend, StackMissingError
from gpulease.ephemeral.channel import ChannelError, InstanceChannel, open_channel
from gpulease.ephemeral.progress import Progress
from gpulease.lifecycle import advice, capacity, spot_requests, verdict
from gpulease.review import stacks
from gpulease.review.stack_commands import command, stack_last, stack_word

READY_MINUTES = 30
"""How long ``up`` waits for the ready record by default (the bootstrap stages data first; ``--wait``)."""
VERIFY_SLACK_MINUTES = 10


class ReviewRefusedError(RuntimeError):
    """The offline review did not pass: nothing was deployed."""


class DeployError(RuntimeError):
    """``pulumi up`` failed (after any capacity tries): one line saying what and what was tried."""


@dataclass
class Stack:
    name: str
    path: Path
    document: dict[str, Any]
    spec: StackSpec
    region: str
    config_file: str | None = None
    credentials: ProviderCredentials = field(default_factory=ProviderCredentials)
    """The AWS provider's credentials (``aws:profile``, keys, roles), for the kit's own calls beside the engine."""
    work_dir: Path | None = None
    """The project ``pulumi up``/``destroy`` run in: None for the kit's folder, else a project made from the kit's
    ``pulumi new`` template (its program is the kit's; its stacks belong to that project)."""


def load(stack: str) -> Stack:
    """A stack named in ``stacks/`` or given as its file (the stack's name is then the file's), of this project:
    ``pulumi up``/``destroy`` run in this project's folder, so a stack file of another project is refused rather
    than reviewed there and deployed here. A stack of the project the command runs in, when that project runs the
    kit's program (``pulumi new`` from the kit's template), is deployed in that project's folder."""
    path = stacks.resolve_one(stack)
    work_dir = stacks.deployed_in(path)
    if work_dir is not None:
        return _stack(path, work_dir)
    kit = path.resolve().parent == (stacks.PROJECT_ROOT / "stacks").resolve()
    return _stack(path, None, config_file=None if kit else str(path.resolve()))


def _stack(path: Path, work_dir: Path | None, config_file: str | None = None) -> Stack:
    stack = stacks.stack_name(path)
    config = stacks.load_stack_config(path)
    spec = load_stack_spec(stack, prompted.stack_config(config), source=shown_path(path))
    region = spec.base.region or config.get(f"{spec.cloud}:region")
    if not isinstance(region, str):
        raise UserError(f"{path}: no region; accepted: {spec.cloud}:region in the stack file")
    doc = inputfile.load_yaml_document(path, what="stack file").data
    # A stack of the user's folder: pulumi runs in the kit's folder and reads this file's config
    # (`pulumi up --config-file`), so the file stays where the user keeps it.
    creds = provider_credentials(config, str(path)) if spec.cloud == "aws" else ProviderCredentials()
    return Stack(stack, path, dict(doc), spec, region, config_file=config_file, credentials=creds, work_dir=work_dir)


def default_backend(work_dir: Path | None = None) -> StackBackend:
    return AutomationBackend(work_dir=work_dir or stacks.PROJECT_ROOT, policy_packs=[str(stacks.PROJECT_ROOT / "policies")])


BACKEND: Callable[..., StackBackend] = default_backend
CHANNEL: Callable[[str, str], InstanceChannel] = open_channel
"""The seams a test replaces: the Automation API and the bucket the instance reports to."""


def backend_for(st: Stack) -> StackBackend:
    """The backend of ``st``'s project: the kit's, or (``work_dir``) the `pulumi new` project it belongs to."""
    return BACKEND() if st.work_dir is None else BACKEND(work_dir=st.work_dir)


@dataclass
class UpResult:
    stack: str
    tries: list[dict[str, Any]] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)
    ready: dict[str, Any] | None = None
    verify: dict[str, Any] | None = None
    waited: str | None = None
    connect: str | None = None
    path: Path | None = None
    """The stack file deployed: the commands printed after ``up`` name it (``commands.stack_word``)."""

    def as_dict(self) -> dict[str, Any]:
        return {"stack": self.stack, "tries": self.tries, "ready": self.ready, "verify": self.verify,
                "waited": self.waited, "connect": self.connect,
                "instanceId": self.outputs.get("instanceId"), "instanceType": self.outputs.get("instanceType")}


def _instance_outputs(outputs: dict[str, Any]) -> dict[str, Any]:
    """Rank 0's (the only experiment's) outputs: ``experiments.<name>`` when the stack lists them."""
    per = outputs.get("experiments")
    if isinstance(per, dict) and len(per) == 1:
        only = next(iter(per.values()))
        return only if isinstance(only, dict) else {}
    return outputs


def _first_creation(backend: StackBackend, stack: str) -> bool:
    """Whether no instance exists yet; a stack the backend does not know is created (empty: its config is its
    stack file's)."""
    try:
        return not _instance_outputs(backend.outputs(stack)).get("instanceId")
    except StackMissingError:
        backend.ensure(stack)
        return True


def deploy(st: Stack, backend: StackBackend, progress: Progress, result: UpResult, *, refresh: bool = False) -> None:
    """``pulumi up``, trying what the spec allows on a capacity error at first creation; ``refresh`` reads what
    exists first (``pulumi up --refresh``: an instance a reclaim released is then created again)."""
    exp = st.spec.base
    first = _first_creation(backend, st.name)
    single = st.spec.kind == "experiment"
    options: list[capacity.Choice] | None = None
    tried: list[capacity.Choice] = []
    config_file: str | None = st.config_file
    data_zone: str | None = None  # once a try made a data disk, its zone for good: a disk does not move
    with tempfile.TemporaryDirectory(prefix="gpulease-up-") as folder:
        while True:
            events: list[ResourceEvent] = []

            def seen(event: ResourceEvent, events: list[ResourceEvent] = events) -> None:
                events.append(event)
                progress.resource(event)

            label = tried[-1].label() if tried else "as the stack file says"
            with progress.step(f"pulumi up ({label})") as record:
                try:
                    changes = backend.up(st.name, lambda line: progress.line("pulumi", line), seen,
                                         config_file=config_file, stack_file=shown_path(st.path),
                                         **({"refresh": True} if refresh else {}))
                    result.tries.append({"choice": label, "outcome": "ok", "changes": changes.resource_changes})
                    return
                except Exception as exc:
                    text = " ".join(str(exc).split())
                    code = capacity.capacity_code(st.spec.cloud, text)
                    result.tries.append({"choice": label, "outcome": code or "failed", "error": text[:500]})
                    record.status = "failed"
                    record.detail = code or text[:200]
                    if code is None:
                        raise DeployError(f"stack {st.name!r}: pulumi up failed: {text[:500]}") from None
                    if not first or not single:
                        why = "the stack had an instance before this update" if not first else "a sweep's runs share it"
                        raise DeployError(f"stack {st.name!r}: {code}: no other zone or type is tried ({why}); "
                                          "run gpulease up again later, or change gpu / network in the stack "
                                          "file") from None
            if options is None:
                options = capacity.choices(exp, st.spec.cloud, st.region, capacity.ZONES[st.spec.cloud](st.region))
                if options:
                    tried.append(options[0])  # what the program chose: the first choice
            if data_zone is None and capacity.holds_data(events):
                data_zone = tried[-1].zone or "" if tried else ""
            key = f"{CONFIG_NAMESPACE}:{EXPERIMENT_KEY}"
            nxt = capacity.next_choice(options, tried, data_zone)
            while nxt is not None and len(tried) < capacity.MAX_TRIES and (
                    skip := capacity.refused(st.path, st.name, st.document, key, nxt, st.spec.cloud)):
                progress.note(skip)  # e.g. its worst case exceeds budgetUsd: never tried
                options.remove(nxt)
                nxt = capacity.next_choice(options, tried, data_zone)
            if nxt is None or len(tried) >= capacity.MAX_TRIES:
                if data_zone is not None:
                    why = (f"a data disk was created in {data_zone or 'the zone the program chose'}, and no other "
                           "type the spec allows is offered there")
                elif nxt is None:
                    why = capacity.why_none(exp)
                else:
                    why = f"{len(tried)} tries made, the most gpulease up makes"
                raise DeployError(f"stack {st.name!r}: {code} for {', '.join(c.label() for c in tried) or label}; "
                                  f"{why}")
            progress.note(f"{code}: trying {nxt.label()}, the next the spec allows (pinned for this update only)")
            tried.append(nxt)
            config_file = str(capacity.write_pinned(st.document, key, nxt, Path(folder), st.spec.cloud))


def wait_for_instance(st: Stack, outputs: dict[str, Any], channel: InstanceChannel, progress: Progress,
                      minutes: float, result: UpResult) -> None:
    """The ready record, then the verify record when the spec verifies, each bounded."""
    started = time.monotonic()
    with progress.step("wait for the ready record") as record:
        try:
            result.ready = channel.wait_ready(outputs, minutes * 60, progress.note)
        except ChannelError as exc:
            record.status, record.detail = "failed", str(exc)
            raise DeployError(f"stack {st.name!r} is up but {exc}; `{command('logs', st.name, st.path)}` shows "
                              "what the instance wrote") from None
    exp = st.spec.base
    if exp.verify is None:
        result.waited = f"{(time.monotonic() - started) / 60:.1f} min"
        return
    with progress.step("wait for the verify record") as record:
        try:
            result.verify = channel.wait_verify(outputs, (exp.verify.max_minutes + VERIFY_SLACK_MINUTES) * 60,
                                                progress.note)
        except ChannelError as exc:
            record.status, record.detail = "failed", str(exc)
            raise DeployError(f"stack {st.name!r} is up but {exc}") from None
    result.waited = f"{(time.monotonic() - started) / 60:.1f} min"


def up(stack: str, progress: Progress, *, wait_minutes: float = READY_MINUTES, wait: bool = True,
       refresh: bool = False) -> UpResult:
    st = load(stack)
    stack = st.name
    found = verdict.REVIEW(st.path, stack)
    target = " ".join(stack_last(stack_word(stack, st.path)))
    for line in [*found.lines(target), *advice.lines(advice.spec_advisories(st.spec))]:
        progress.note(line)
    if found.blocks:
        raise ReviewRefusedError(f"stack {stack!r}: the review says {found.status.upper()}; nothing was deployed "
                                 f"(`{command('plan', stack, st.path)}` shows why)")
    backend = backend_for(st)
    result = UpResult(stack, path=st.path)
    parking = spot_requests.parked_spot_experiments(st.spec.cloud, st.spec.experiments)
    if parking:
        # Parking removes the instance: its request is cancelled first (the instance's delete hook does the same);
        # only the parked experiments' requests, the other runs keep theirs.
        with progress.step("cancel the parked experiments' spot requests") as record:
            try:
                record.detail = ", ".join(spot_requests.cancel_before_parking(
                    stack, st.region, st.credentials, parking)) or "none open"
            except spot_requests.SpotRequestError as exc:
                raise DeployError(str(exc)) from None
    deploy(st, backend, progress, result, refresh=refresh)
    if parking:
        try:
            spot_requests.check_none_open(stack, st.region, "parked", st.credentials, parking)
        except spot_requests.SpotRequestError as exc:
            raise DeployError(str(exc)) from None
    result.outputs = _instance_outputs(backend.outputs(stack))
    result.connect = command("ssh", stack, st.path)
    if wait and result.outputs.get("instanceId") and result.outputs.get("checkpointUri") not in (None, "none"):
        wait_for_instance(st, result.outputs, CHANNEL(st.spec.cloud, st.region), progress, wait_minutes, result)
    return result
