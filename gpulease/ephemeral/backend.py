"""The one interface the ephemeral orchestration uses to drive Pulumi, and its Automation API implementation.

The orchestration never imports ``pulumi.automation``: it talks to a ``StackBackend``. ``AutomationBackend``
runs the local Pulumi CLI over this project directory (``LocalWorkspace`` with ``work_dir`` = the project root,
so ``Pulumi.yaml``, ``stackConfigDir: stacks`` and the ``.venv`` toolchain apply exactly as for ``pulumi up``).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from pulumi import automation as auto
from pulumi.automation import errors as auto_errors

from components.spec.load import STACK_FILE_ENV
from gpulease.core.errors import UserError
from gpulease.review.stacks import PROJECT_ROOT

MIN_PULUMI_CLI = (3, 182, 0)
"""Oldest Pulumi CLI accepted: ``pulumi config set-all --json`` (structured config, set in one call) and resource
hooks (engine 3.182.0, "Implement ResourceHooks in the engine", pulumi/pulumi#19874: a spot instance's delete hook)
are needed."""

LineSink = Callable[[str], None]


@dataclass(frozen=True)
class ResourceEvent:
    """One resource step as the engine reports it: ``op`` is create/update/delete/same/replace..., ``done`` is
    False when the step starts and True when it finishes (``failed`` when it did not)."""

    op: str
    type: str
    urn: str
    done: bool
    failed: bool = False


ResourceSink = Callable[[ResourceEvent], None]


@dataclass(frozen=True)
class StackInfo:
    name: str
    last_update: datetime | None = None
    resource_count: int | None = None
    update_in_progress: bool = False


@dataclass(frozen=True)
class OperationResult:
    """What an up or destroy changed, e.g. ``{"create": 12}`` or ``{"delete": 12}``."""

    resource_changes: dict[str, int] = field(default_factory=dict)


class PulumiCliError(UserError):
    """The Pulumi CLI is missing or too old; nothing was created."""


class StackExistsError(UserError):
    """A stack of that name exists already: it belongs to another run and is left alone."""


class StackMissingError(RuntimeError):
    """The stack does not exist (any more)."""


class OutputsUnreadableError(RuntimeError):
    """``pulumi stack output --json`` answered with no JSON object (nothing printed, a cut answer): the stack's
    outputs are not known, so nothing that needs them is done; the command fails (exit 1), one line."""


class StackBackend(Protocol):
    """The operations the ephemeral orchestration needs from Pulumi, and nothing else."""

    def cli_version(self) -> str:
        """The installed CLI's version; raises ``PulumiCliError`` when it is missing or older than supported."""
        ...

    def list_stacks(self) -> list[StackInfo]: ...

    def create(self, stack: str, config: Mapping[str, Any]) -> None:
        """Create a new stack (fail if it exists) and set its whole config (structured values kept)."""
        ...

    def up(self, stack: str, on_output: LineSink, on_resource: ResourceSink, *,
           config_file: str | None = None, refresh: bool = False, stack_file: str | None = None) -> OperationResult:
        """``pulumi up``; ``stack_file`` (the file the review read, as the user named it) reaches the program as
        ``GPULEASE_STACK_FILE``; ``config_file`` reads the stack's config from that file instead of its stack file;
        ``refresh``: ``pulumi up --refresh`` (read what exists before the update)."""
        ...

    def outputs(self, stack: str) -> dict[str, Any]: ...

    def destroy(self, stack: str, on_output: LineSink, on_resource: ResourceSink, *,
                keep_buckets: tuple[str, ...] = ()) -> OperationResult:
        """``pulumi destroy``; ``keep_buckets``: every resource but those buckets (and what they need: their
        parents, what they depend on, the providers) is destroyed, so what they hold outlives the stack's instance;
        when nothing else is left, nothing is destroyed."""
        ...

    def remove(self, stack: str) -> None:
        """Remove the stack and its config file (only ever called once its resources are destroyed)."""
        ...

    def ensure(self, stack: str) -> None:
        """Select the stack, creating it without touching its config when the backend does not know it
        (``gpulease up`` of a stack whose stack file is written already)."""
        ...


def _version_tuple(text: str) -> tuple[int, int, int] | None:
    core = text.strip().removeprefix("v").split("-")[0].split("+")[0]
    parts = core.split(".")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        return None
    return int(parts[0]), int(parts[1]), int(parts[2])


def _dotted(version: tuple[int, int, int]) -> str:
    return ".".join(str(p) for p in version)


def config_json(config: Mapping[str, Any]) -> str:
    """Stack config in the form ``pulumi config --json`` prints and ``config set-all --json`` reads."""
    out: dict[str, dict[str, Any]] = {}
    for key, value in config.items():
        if isinstance(value, Mapping) and set(value) == {"secure"}:
            raise UserError(f"config key {key!r} is a secret encrypted for another stack; it cannot be copied")
        if isinstance(value, (Mapping, list)):
            out[key] = {"value": json.dumps(value), "objectValue": value, "secret": False}
        elif isinstance(value, bool):
            out[key] = {"value": "true" if value else "false", "secret": False}
        else:
            out[key] = {"value": str(value), "secret": False}
    return json.dumps(out)


class AutomationBackend:
    """``StackBackend`` over ``pulumi.automation`` with the project directory as the workspace."""

    def __init__(
        self,
        work_dir: Path = PROJECT_ROOT,
        *,
        secrets_provider: str | None = None,
        env_vars: Mapping[str, str] | None = None,
        policy_packs: list[str] | None = None,
    ):
        self.work_dir = Path(work_dir)
        self.policy_packs = list(policy_packs or [])
        self.secrets_provider = secrets_provider
        self.env_vars = dict(env_vars or {})
        self._command: Any = None

    # -- the CLI ---------------------------------------------------------------------------------------------
    def _pulumi_command(self) -> Any:
        if self._command is not None:
            return self._command
        if shutil.which("pulumi", path=os.environ.get("PATH")) is None:
            raise PulumiCliError(
                "the Pulumi CLI is not installed (no 'pulumi' on PATH); gpulease runs it through the Automation API "
                f"(up, down, ephemeral). Install Pulumi {_dotted(MIN_PULUMI_CLI)} or newer "
                "(https://www.pulumi.com/docs/install/, or pulumi/actions in GitHub Actions). Nothing was changed."
            )
        try:
            # Our own floor is checked below, with a message that names it.
            command = auto.PulumiCommand(skip_version_check=True)
        except (OSError, auto_errors.InvalidVersionError) as exc:
            raise PulumiCliError(f"the Pulumi CLI could not report its version ({exc}). Nothing was changed.") from None
        found = _version_tuple(str(command.version or ""))
        if found is None or found < MIN_PULUMI_CLI:
            shown = str(command.version) if command.version else "an unreadable version"
            raise PulumiCliError(
                f"the Pulumi CLI is too old: found {shown}, gpulease needs {_dotted(MIN_PULUMI_CLI)} or newer "
                "(config set-all --json, resource hooks). Upgrade the CLI. Nothing was changed."
            )
        self._command = command
        return command

    def cli_version(self) -> str:
        return str(self._pulumi_command().version)

    # -- workspace and stacks ---------------------------------------------------------------------------------
    def _options(self) -> Any:
        return auto.LocalWorkspaceOptions(
            work_dir=str(self.work_dir),
            secrets_provider=self.secrets_provider,
            env_vars=self.env_vars or None,
            pulumi_command=self._pulumi_command(),
        )

    def _workspace(self) -> Any:
        return auto.LocalWorkspace(**self._options().__dict__)

    def _select(self, stack: str) -> Any:
        try:
            return auto.select_stack(stack_name=stack, work_dir=str(self.work_dir), opts=self._options())
        except auto_errors.StackNotFoundError:
            raise StackMissingError(f"stack {stack!r} does not exist") from None

    def list_stacks(self) -> list[StackInfo]:
        found = []
        for summary in self._workspace().list_stacks():
            last = summary.last_update
            if last is not None and last.tzinfo is None:
                last = last.replace(tzinfo=UTC)
            found.append(
                StackInfo(
                    name=summary.name,
                    last_update=last,
                    resource_count=summary.resource_count,
                    update_in_progress=bool(summary.update_in_progress),
                )
            )
        return found

    def create(self, stack: str, config: Mapping[str, Any]) -> None:
        payload = config_json(config)
        # create_stack, not create_or_select: an existing stack of the same name belongs to another run.
        try:
            created = auto.create_stack(stack_name=stack, work_dir=str(self.work_dir), opts=self._options())
        except auto_errors.StackAlreadyExistsError:
            raise StackExistsError(f"stack {stack!r} exists already; it is left alone") from None
        try:
            created.set_all_config_json(payload)
        except BaseException:
            # A stack without its config is of no use and holds no resources yet: do not leave it behind.
            self._workspace().remove_stack(stack)
            raise

    def up(self, stack: str, on_output: LineSink, on_resource: ResourceSink, *,
           config_file: str | None = None, refresh: bool = False, stack_file: str | None = None) -> OperationResult:
        # stack_file: the program names the file gpulease reviewed (components/program.py reads STACK_FILE_ENV);
        # the workspace's env_vars are merged into every pulumi command's environment, which the program
        # inherits (pulumi/automation/_local_workspace.py, LocalWorkspaceOptions.env_vars).
        if stack_file is not None:
            self.env_vars[STACK_FILE_ENV] = stack_file
        # policy_packs: the pack judges the update as `pulumi up --policy-pack` does; config_file:
        # `pulumi up --config-file` (the Automation API's up() takes both).
        result = self._select(stack).up(
            on_output=on_output, on_event=_event_adapter(on_resource), color="never", suppress_progress=True,
            policy_packs=self.policy_packs or None, config_file=config_file, refresh=refresh or None,
        )
        return OperationResult(dict(result.summary.resource_changes or {}))

    def outputs(self, stack: str) -> dict[str, Any]:
        # Read with --stack, without selecting: ls and gc must not change the user's current stack.
        try:
            found = self._workspace().stack_outputs(stack)
        except auto_errors.StackNotFoundError:
            raise StackMissingError(f"stack {stack!r} does not exist") from None
        except (ValueError, TypeError, LookupError, AttributeError) as exc:
            # The Automation API parses the CLI's answer itself (json.loads, then indexes it): an empty or
            # foreign answer surfaces here as a decode or lookup error.
            detail = " ".join(str(exc).split())[:120] or type(exc).__name__
            raise OutputsUnreadableError(f"cannot read the outputs of stack {stack!r}: `pulumi stack output --json` did "
                                         f"not answer with a JSON object ({detail})") from None
        return {key: out.value for key, out in found.items()}

    def destroy(self, stack: str, on_output: LineSink, on_resource: ResourceSink, *,
                keep_buckets: tuple[str, ...] = ()) -> OperationResult:
        # run_program: `pulumi destroy --run-program`, which delete hooks need (a spot instance's cancels its
        # request, components/aws/spot_hook.py); the engine refuses a destroy without it once one is in the state.
        selected = self._select(stack)
        target = None
        if keep_buckets:
            target = all_but_buckets(selected.export_stack().deployment.get("resources") or [], keep_buckets)
            if not target:
                # The Automation API passes ``--target`` only for a non-empty list (``_stack.py``: ``if target:``):
                # an empty one would destroy everything, the buckets included.
                return OperationResult({})
        result = selected.destroy(
            on_output=on_output, on_event=_event_adapter(on_resource), color="never", suppress_progress=True,
            run_program=True, target=target,
        )
        return OperationResult(dict(result.summary.resource_changes or {}))

    def ensure(self, stack: str) -> None:
        auto.create_or_select_stack(stack_name=stack, work_dir=str(self.work_dir), opts=self._options())

    def remove(self, stack: str) -> None:
        try:
            self._workspace().remove_stack(stack)
        except auto_errors.StackNotFoundError:
            raise StackMissingError(f"stack {stack!r} does not exist") from None


BUCKET_TYPES = ("aws:s3/bucket:Bucket", "aws:s3/bucketV2:BucketV2", "alicloud:oss/bucket:Bucket")
BUCKET_MODULES = tuple(sorted({t.partition("/")[0] + "/" for t in BUCKET_TYPES}))
"""The modules of the bucket types (``aws:s3/``, ``alicloud:oss/``): their other resources configure a bucket."""


def _named(resource: dict[str, Any], buckets: tuple[str, ...]) -> bool:
    outputs = resource.get("outputs") or {}
    return outputs.get("bucket") in buckets or outputs.get("id") in buckets


def _needs(resource: dict[str, Any]) -> list[str]:
    """What a resource needs in the state: its parent, what it depends on, its provider."""
    return [resource.get("parent") or "", *(resource.get("dependencies") or []),
            *(d for deps in (resource.get("propertyDependencies") or {}).values() for d in deps),
            str(resource.get("provider") or "").rsplit("::", 1)[0]]


def all_but_buckets(resources: list[dict[str, Any]], buckets: tuple[str, ...]) -> list[str]:
    """The URNs of a stack's state to destroy so that ``buckets`` stay as the stack made them: all but the buckets,
    the resources of their own module that depend on them or are their children (ownership, public-access block,
    encryption, versioning, lifecycle, policy, ACL: the bucket's hardening), what all those need (parents, what they
    depend on, transitively), the providers and the stack itself. A bucket the state does not hold (an existing
    ``checkpoints.bucket`` the program only refers to) cannot be deleted by a destroy and needs no keeping; one the
    state holds under a type not known here (a resource of a bucket module names it, no known bucket type does):
    fail closed."""
    by_urn = {r.get("urn"): r for r in resources}
    wanted = [r["urn"] for r in resources if r.get("type") in BUCKET_TYPES and _named(r, buckets)]
    found = {b for u in wanted for b in buckets if _named(by_urn[u], (b,))}
    unknown = [b for b in buckets if b not in found and any(
        str(r.get("type", "")).startswith(BUCKET_MODULES) and _named(r, (b,)) for r in resources)]
    if unknown:
        raise RuntimeError(f"bucket {unknown[0]!r} is in the stack's state under a resource type not known as a bucket; "
                           "refusing a destroy that might delete it")
    wanted += _configuring(resources, set(wanted))
    keep: set[str] = set()
    while wanted:
        urn = wanted.pop()
        if urn in keep or urn not in by_urn:
            continue
        keep.add(urn)
        wanted += _needs(by_urn[urn])
    return [str(r["urn"]) for r in resources if r.get("urn") not in keep and not r.get("type", "").startswith(
        ("pulumi:providers:", "pulumi:pulumi:Stack"))]


def _configuring(resources: list[dict[str, Any]], kept: set[str]) -> list[str]:
    """The resources of a kept bucket's module (never another bucket) that depend on it or are its children, or
    depend on or are children of one of those (a policy applied after the public-access block)."""
    modules = {str(r.get("urn")): str(r.get("type", "")).partition("/")[0] + "/" for r in resources
               if r.get("urn") in kept}
    attached: set[str] = set()
    grown = True
    while grown:
        grown = False
        for r in resources:
            urn, kind = str(r.get("urn")), str(r.get("type", ""))
            if urn in kept or urn in attached or kind in BUCKET_TYPES:
                continue
            owners = [u for u in _needs(r) if u in modules and kind.startswith(modules[u])]
            if owners:
                attached.add(urn)
                modules[urn] = modules[owners[0]]
                grown = True
    return sorted(attached)


def _event_adapter(on_resource: ResourceSink) -> Callable[[Any], None]:
    """Translate the engine's event stream into ``ResourceEvent``s (start, done, failed per resource)."""

    def handle(event: Any) -> None:
        pre = getattr(event, "resource_pre_event", None)
        done = getattr(event, "res_outputs_event", None)
        failed = getattr(event, "res_op_failed_event", None)
        for item, finished, broke in ((pre, False, False), (done, True, False), (failed, True, True)):
            meta = getattr(item, "metadata", None) if item is not None else None
            if meta is None:
                continue
            op = getattr(meta.op, "value", meta.op)
            if meta.type == "pulumi:pulumi:Stack":
                continue
            on_resource(ResourceEvent(op=str(op), type=meta.type, urn=meta.urn, done=finished, failed=broke))

    return handle
