"""Run a Pulumi Python program in-process under mocks and capture what it would register.

This is the engine-free path behind ``gpulease plan`` and the tests: every ``RegisterResource`` request is
recorded with its type, name, URN, inputs (exactly what the engine would send to the provider), options
(protect, retain-on-delete, ignore-changes, dependencies, provider) and parent; the stack's exports are
resolved at the end. No Pulumi CLI, no plugins, no credentials.
"""

from __future__ import annotations

import importlib
import logging
import os
import runpy
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pulumi
from google.protobuf import struct_pb2
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import rpc, settings
from pulumi.runtime.proto import resource_pb2
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from gpulease.core import clock
from gpulease.review import remote_components
from gpulease.review.captured_values import InputRecorder, copy_path, plain
from gpulease.review.engine_config import engine_config, secure_config
from gpulease.review.invoke_sites import at_program_site, export_problem, recording_sites
from gpulease.review.lifted_sites import noting_lifted_sites
from gpulease.review.mock_hooks import HookRecorder, bound_hooks, recording_hooks
from gpulease.review.mocks import CloudMocks
from gpulease.review.non_finite import non_finite_paths, refusal
from gpulease.review.preview_reads import watching_preview_reads
from gpulease.review.program_exit import ProcessExit, exit_raises
from gpulease.review.program_secrets import recording_secrets, redacting_streams
from gpulease.review.resource_refs import downgrade, plain_value
from gpulease.review.sdk_rpcs import discard_pending_outputs, finish_registrations
from gpulease.review.sdk_speed import fast_registration
from gpulease.review.skipped_applies import recording_skipped_applies
from gpulease.review.stacks import PROJECT_ROOT, load_stack_config
from gpulease.review.static_rule import checking_helper_state
from gpulease.review.thread_errors import thread_errors
from gpulease.review.unknown_compute import absent_template, unknown_stack_outputs
from gpulease.review.unknown_compute import problem as unknown_compute


@dataclass
class CapturedResource:
    urn: str
    type: str
    name: str
    custom: bool
    inputs: dict[str, Any]
    outputs: dict[str, Any]
    id: str | None
    parent: str | None
    provider: str | None
    protect: bool
    retain_on_delete: bool
    ignore_changes: list[str]
    dependencies: list[str]
    property_dependencies: dict[str, list[str]]
    delete_before_replace: bool
    replace_on_changes: list[str]
    # The wire form (protobuf Struct) of the inputs and of the mock's outputs, unknowns kept as the engine's
    # sentinels: what an analyzer receives in Analyze / AnalyzeStack (see gpulease/review/policy_runner.py).
    input_struct: Any = None
    output_struct: Any = None
    custom_timeouts: dict[str, str] = field(default_factory=dict)
    """``customTimeouts`` as registered: create/update/delete -> a Go duration (``"90m"``), only those set."""
    hooks: dict[str, list[str]] = field(default_factory=dict)
    """The resource hooks bound to it, by kind (``before_delete`` -> names), as registered (``mock_hooks``)."""


@dataclass
class Rendering:
    """What one stack would register, in registration order, and its resolved exports."""

    project: str
    stack: str
    config: dict[str, Any]
    resources: list[CapturedResource] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    hooks: list[str] = field(default_factory=list)
    """The names of the resource hooks the program registered (bound to a resource or not)."""
    unseen: bool = False  # an apply skipped at preview may register what the review did not see
    secrets: set[str] = field(default_factory=set)
    """Each text of each secret value the program made (``program_secrets``): hidden in every report."""

    @property
    def partial(self) -> bool:
        """The program stopped before it finished (an error, a lookup without an answer, an exit, a crash, a
        time-out, a component without a model) after it registered anything: what it registered is reviewed, the
        rest of the program is not. Nothing registered: an error (exit 2); anything (or ``unseen``): partial (exit 3)."""
        return self.error is not None and (bool(self.resources) or self.unseen)

    def of_type(self, type_: str) -> list[CapturedResource]:
        return [r for r in self.resources if r.type == type_]

    def one(self, type_: str) -> CapturedResource:
        found = self.of_type(type_)
        if len(found) != 1:
            raise AssertionError(f"expected one {type_}, found {len(found)}")
        return found[0]

    def by_name(self, name: str) -> CapturedResource:
        for r in self.resources:
            if r.name == name:
                return r
        raise KeyError(name)

    def by_urn(self, urn: str) -> CapturedResource:
        for r in self.resources:
            if r.urn == urn:
                return r
        raise KeyError(urn)

    @property
    def custom_resources(self) -> list[CapturedResource]:
        return [r for r in self.resources if r.custom]


ROOT_STACK_TYPE = "pulumi:pulumi:Stack"


class CapturingMonitor(pulumi_mocks.MockMonitor):
    """The SDK's mock monitor, recording each registration request in full."""

    def __init__(self, mocks: pulumi.runtime.Mocks, prior: Rendering | None = None,
                 sink: Callable[[CapturedResource], None] | None = None):
        # The mocks behind a recorder: the inputs the SDK's monitor deserialized for them are the ones captured.
        self.recorder = InputRecorder(mocks)
        super().__init__(self.recorder)
        self.captured: list[CapturedResource] = []
        self.prior = {r.urn: r for r in prior.resources} if prior else {}
        # Called with each resource as it is registered: an isolated render streams them to the reviewer, so that
        # what a program registered before it crashed or hung is still reviewed.
        self.sink = sink
        self.gaps: list[remote_components.Gap] = []  # remote components without a model
        self.late: list[Callable[[], str | None]] = []  # checks that need every resource (after the program)
        # What the engine or the pack refuses: a second resource of one URN (a failed update), NaN inputs.
        self.duplicates: list[str] = []
        self._urns: set[str] = set()
        self.hook_recorder = HookRecorder()  # the program's resource hooks, by name

    def make_urn(self, parent: str, type_: str, name: str) -> str:
        """The URN the engine gives: a child's type follows its parent's whole type chain (``my:C$aws:...``), a
        top-level resource's none, the root stack being left out
        (https://www.pulumi.com/docs/iac/concepts/resources/names/#urns; the SDK's ``create_urn`` builds the same
        chain). The SDK's mock monitor keeps only the parent's last type and names the root stack; a URN copied
        from the plan's output must name the resource ``pulumi up`` judges."""
        qualified = parent.split("::")[2] if parent.count("::") >= 3 else ""
        if qualified and qualified != ROOT_STACK_TYPE:
            type_ = f"{qualified}${type_}"
        return "urn:pulumi:" + "::".join([settings.get_stack(), settings.get_project(), type_, name])

    def _apply_ignore_changes(self, request) -> bool:
        """What the engine does on an update: an ignored property keeps its value from the previous state; whether
        the inputs were rewritten."""
        if not self.prior or not request.ignoreChanges:
            return False
        old = self.prior.get(self.make_urn(request.parent, request.type, request.name))
        if old is None:
            return False
        inputs = rpc.deserialize_properties(request.object)
        for path in request.ignoreChanges:
            copy_path(old.inputs, inputs, path.split("."))
        request.object.CopyFrom(_sync_await(rpc.serialize_properties(inputs, {})))
        return True

    def RegisterResource(self, request):  # noqa: N802 - gRPC method name
        if request.remote:
            return self._register_remote(request)
        # A resource as an input: its id (a component: its URN), as the engine sends it; NaN found in the same walk.
        finite = downgrade(request.object)
        if request.type != "pulumi:pulumi:Stack":
            rewritten = self._apply_ignore_changes(request)
            if (rewritten or not finite) and (bad := non_finite_paths(request.object)):
                self.duplicates.append(refusal(request.type, request.name, bad,
                                               remote_components.registration_site(request)))
                return resource_pb2.RegisterResourceResponse(urn=self.make_urn(request.parent, request.type,
                                                                               request.name))
        self.recorder.forget()
        response = super().RegisterResource(request)
        if request.type == "pulumi:pulumi:Stack":
            return response
        outputs = self.resources[response.urn].state if response.urn in self.resources else {}
        self._capture(request, response, outputs, self.recorder.take())
        site_of = remote_components.registration_site
        if unknown := unknown_compute(request, site_of):
            self.duplicates.append(unknown)  # a compute form whose instance type cannot be seen: partial
        elif check := absent_template(request, response.urn, site_of, self.captured):
            self.late.append(check)
        return response

    def _register_remote(self, request):
        """A multi-language component: its model registers its children (``remote_components``), or it is a gap."""
        urn = self.make_urn(request.parent, request.type, request.name)
        downgrade(request.object)
        captured = self._capture(request, resource_pb2.RegisterResourceResponse(urn=urn), {})
        outputs, gap = remote_components.expand(self, request, urn, str(getattr(self.mocks, "region", "")))
        if gap is not None:
            self.gaps.append(gap)
        struct = struct_pb2.Struct()
        struct.update(outputs)
        shown = struct_pb2.Struct()
        shown.CopyFrom(struct)
        downgrade(shown)
        captured.outputs, captured.output_struct = plain(rpc.deserialize_properties(shown)), shown
        # The engine knows the component: a reference to it (an input of another component) reads it back.
        self.resources[urn] = pulumi_mocks.MockMonitor.ResourceRegistration(urn, "", dict(outputs))
        return resource_pb2.RegisterResourceResponse(urn=urn, object=struct)

    def _capture(self, request, response, outputs: Mapping[str, Any],
                 inputs: dict[str, Any] | None = None) -> CapturedResource:
        """Record one registration; ``inputs`` is the plain form of its deserialized inputs when already made."""
        if response.urn in self._urns:
            site = remote_components.registration_site(request)
            self.duplicates.append(f"duplicate resource URN {response.urn!r}{f' at {site}' if site else ''}: the "
                                   "engine refuses a second resource of one type and name under one parent; "
                                   "accepted: a unique name")
        self._urns.add(response.urn)
        deps = request.propertyDependencies  # read by key, an empty list made without copying: most have no URN
        captured = CapturedResource(
                urn=response.urn,
                type=request.type,
                name=request.name,
                custom=bool(request.custom),
                inputs=plain(rpc.deserialize_properties(request.object)) if inputs is None else inputs,
                outputs=plain(outputs),
                id=response.id or None,
                parent=request.parent or None,
                provider=request.provider or None,
                protect=bool(request.protect) if request.HasField("protect") else False,
                retain_on_delete=bool(request.retainOnDelete) if request.HasField("retainOnDelete") else False,
                ignore_changes=list(request.ignoreChanges),
                dependencies=list(request.dependencies),
                property_dependencies={k: list(u) if (u := deps[k].urns) else [] for k in deps},
                delete_before_replace=bool(request.deleteBeforeReplace),
                replace_on_changes=list(request.replaceOnChanges),
                input_struct=request.object,
                output_struct=response.object,
                custom_timeouts={k: t for k in ("create", "update", "delete") if (t := getattr(request.customTimeouts, k))},
                hooks=bound_hooks(request.hooks) if request.HasField("hooks") else {},
            )
        self.captured.append(captured)
        if self.sink is not None:
            self.sink(captured)
        return captured

    def RegisterResourceOutputs(self, request):  # noqa: N802 - gRPC method name
        downgrade(request.outputs)
        return super().RegisterResourceOutputs(request)

    def Invoke(self, request):  # noqa: N802 - gRPC method name
        downgrade(request.args)
        return super().Invoke(request)


def load_stack_file(path: Path) -> dict[str, Any]:
    """The ``config:`` map of a ``Pulumi.<stack>.yaml`` file (``gpulease.review.stacks.load_stack_config``: read
    through the input-file boundary; a bad file raises ``InputFileError``, a ``UserError``)."""
    return load_stack_config(path)


@contextmanager
def _program_cwd(directory: Path) -> Iterator[None]:
    previous = os.getcwd()
    added = str(directory) not in sys.path
    if added:
        sys.path.insert(0, str(directory))
    os.chdir(directory)
    try:
        yield
    finally:
        os.chdir(previous)
        if added:
            sys.path.remove(str(directory))


def render(
    config: Mapping[str, Any],
    *,
    stack: str = "dev",
    project: str = "gpulease",
    program: Callable[[], None] | None = None,
    program_path: Path | None = None,
    mocks: pulumi.runtime.Mocks | None = None,
    region: str | None = None,
    now: datetime | None = None,
    preview: bool = True,
    prior: Rendering | None = None,
    sink: Callable[[CapturedResource], None] | None = None,
    organization: str | None = None,
) -> Rendering:
    """Run ``program`` (default: this project's program) under mocks with ``config``; capture everything.

    A program error (a user mistake reported through ``pulumi.RunError``, or any exception) is returned in
    ``Rendering.error`` with whatever was registered before it. ``now`` fixes the program's clock;
    ``prior`` is the previous run's rendering, so that ``ignore_changes`` keeps recorded values as the engine
    does on an update; ``sink`` receives each resource as it is registered. ``organization`` is what
    ``pulumi.get_organization()`` answers (the stack's physical names hash it); the review leaves it unset.

    A lookup the mocks cannot answer stops the program there (``UnansweredLookup``); the rendering then carries
    that lookup and the program's ``file:line`` as its error, even when the program caught the exception."""
    given = region or config.get("aws:region") or config.get("alicloud:region")
    mocks = mocks or CloudMocks(region=str(given) if given else None, now=now)
    monitor = CapturingMonitor(mocks, prior, sink)
    flat, secret_keys = engine_config(config, project)

    # Outputs a failed program left pending must not fail this render (the SDK's own test decorator clears
    # the same set).
    discard_pending_outputs()
    # The outputs of a failed program are dropped on purpose; asyncio would otherwise log each one at exit.
    logging.getLogger("asyncio").setLevel(logging.CRITICAL)
    settings.set_root_resource(None)  # type: ignore[arg-type]
    pulumi.runtime.set_all_config(flat, secret_keys)
    pulumi_mocks.set_mocks(mocks, project=project, stack=stack, preview=preview, monitor=monitor,
                           organization=organization)
    rendering = Rendering(project=project, stack=stack, config=dict(config))

    if program is None and program_path is None:
        program = importlib.import_module("components.program").main
    directory = program_path.parent if program_path is not None else PROJECT_ROOT

    def run() -> None:
        if program is not None:
            program()
        else:
            runpy.run_path(str(program_path), run_name="__main__")

    try:
        with _program_cwd(directory), clock.frozen(now), recording_sites(), fast_registration(), exit_raises(), \
                unknown_stack_outputs(), recording_skipped_applies(monitor.duplicates, rendering), thread_errors(monitor.duplicates, str(directory)), \
                recording_hooks(getattr(monitor, "hook_recorder", HookRecorder())), recording_secrets(rendering.secrets, sink), \
                redacting_streams(rendering.secrets), secure_config(secret_keys), \
                watching_preview_reads(monitor.duplicates, rendering), checking_helper_state(monitor.duplicates, rendering), \
                noting_lifted_sites():
            _sync_await(_run_program(run))
        root = settings.get_root_resource()
        exports = getattr(root, "outputs", {}) or {}
        # Each export on its own: one not known during preview must not hide the others.
        rendering.outputs = {key: plain(_sync_await(plain_value(value))) for key, value in exports.items()}
        # Under mocks the stack's outputs are never sent; the engine refuses what cannot be serialized.
        refused = [line for key, value in rendering.outputs.items() if (line := export_problem(key, value))]
        if refused:
            raise pulumi.RunError("; ".join(refused))
    except pulumi.RunError as exc:
        rendering.error = at_program_site(str(exc), exc, directory)
    except SystemExit as exc:
        # sys.exit() or os._exit() in a program ends it before it registered everything: a failed render, never a
        # clean one; what it registered before is finished and reviewed (partial).
        call = "os._exit" if isinstance(exc, ProcessExit) else "sys.exit"
        rendering.error = at_program_site(f"the program called {call}({exc.code!r}) before it finished; nothing it would "
                                   "have registered after that was reviewed", exc, directory)
    except Exception as exc:
        rendering.error = at_program_site(f"{type(exc).__name__}: {exc}", exc, directory)
    finally:
        if rendering.error is not None:
            finish_registrations()
        discard_pending_outputs()
    unanswered = getattr(mocks, "unanswered", None)
    if unanswered is not None:
        rendering.error = str(unanswered)
    found = getattr(monitor, "gaps", [])  # a bare monitor (bench/sweep_speed.py's floor) has none
    problems = [*getattr(monitor, "duplicates", []), *(gap.describe() for gap in found),
                *(line for check in getattr(monitor, "late", []) if (line := check()))]
    if problems:
        gaps = "; ".join(problems)
        rendering.error = f"{rendering.error}; and {gaps}" if rendering.error else gaps
    rendering.resources = list(monitor.captured)
    rendering.hooks = sorted(getattr(monitor, "hook_recorder", HookRecorder()).hooks)
    return rendering


async def _run_program(run: Callable[[], None]) -> None:
    await run_pulumi_func(run)


def render_stack_file(path: Path, **kwargs: Any) -> Rendering:
    """Render ``stacks/Pulumi.<stack>.yaml`` (or any project's stack file) under mocks."""
    stack = path.name.removeprefix("Pulumi.").removesuffix(".yaml").removesuffix(".yml")
    return render(load_stack_file(path), stack=stack, **kwargs)
