"""Which instance a command is about: the stack's outputs (the one seam tests replace) and its spec.

The outputs come from the Pulumi CLI (``pulumi stack output --json``), or from a JSON file given with
``--outputs`` (what that command prints); ``OUTPUTS_READER`` is the seam a test sets. The spec (region, budget,
the job's tmux session, ``ssh.forward``) comes from ``stacks/Pulumi.<stack>.yaml`` when the stack file is here; a
stack made elsewhere (an ephemeral CI stack) is described by its outputs and ``--region``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.spec import prompted
from components.spec.experiment import ExperimentSpec
from components.spec.load import load_stack_spec
from gpulease.core import inputfile
from gpulease.core import vocabulary as v
from gpulease.core.child_process import run_bounded
from gpulease.core.errors import UserError
from gpulease.core.shown import echo, shown_path
from gpulease.review import stacks

PULUMI_TIMEOUT_SECONDS = 120


class LiveError(UserError):
    """The stack or its instance cannot be reached or described: one line, naming the stack."""


def pulumi_outputs(stack: str, project_dir: Path) -> dict[str, Any]:
    """``pulumi stack output --json`` of ``stack`` in ``project_dir`` (the stack's backend must be logged in)."""
    exe = shutil.which("pulumi")
    if exe is None:
        try:
            stacks.resolve_one(stack, project_dir)
        except UserError as exc:  # no stack file either: say so first (with the nearest name), then what is missing
            raise LiveError(f"{exc}; and the Pulumi CLI, which would read the outputs of a stack made elsewhere, is "
                            "not installed") from None
        raise LiveError(f"stack {stack!r}: the Pulumi CLI is not installed; it reads the stack's outputs (or give "
                        "them with --outputs FILE, the output of `pulumi stack output --json`)")
    try:
        done = run_bounded([exe, "stack", "output", "--json", "--stack", stack, "--cwd", str(project_dir)],
                           timeout=PULUMI_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        raise LiveError(f"stack {stack!r}: `pulumi stack output` gave no answer within {PULUMI_TIMEOUT_SECONDS} s") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise LiveError(f"stack {stack!r}: `pulumi stack output` failed: {last}")
    try:
        found = json.loads(done.stdout or "{}")
    except json.JSONDecodeError as exc:
        raise LiveError(f"stack {stack!r}: `pulumi stack output --json` printed no JSON ({exc})") from None
    return found if isinstance(found, dict) else {}


OUTPUTS_READER: Callable[[str, Path], dict[str, Any]] = pulumi_outputs
"""How outputs are read when no ``--outputs`` file is given (tests replace it)."""


@dataclass(frozen=True)
class Target:
    """One experiment's instance and what the commands need to know of it."""

    stack: str
    experiment: str
    outputs: Mapping[str, Any]
    spec: ExperimentSpec | None
    region: str | None
    cloud: str
    path: Path | None = None
    """The stack file, when there is one here: the commands a message prints name it (``commands.stack_word``)."""

    @property
    def instance_id(self) -> str | None:
        return _text(self.outputs.get("instanceId"))

    @property
    def checkpoint_uri(self) -> str | None:
        uri = _text(self.outputs.get("checkpointUri"))
        return None if uri in (None, v.NO_CHECKPOINTS) else uri

    @property
    def mode(self) -> str:
        if self.spec is not None:
            return self.spec.ssh.mode
        command = _text(self.outputs.get("sshCommand")) or ""
        return "ssm" if command.startswith("aws ssm") else "cloud-assistant" if "ali-instance-cli" in command else "ssh"

    @property
    def user(self) -> str:
        if self.spec is not None:
            return self.spec.ssh.user
        command = _text(self.outputs.get("sshCommand")) or ""
        return command.split()[-1].split("@")[0] if "@" in command else "ubuntu"

    @property
    def session(self) -> str | None:
        """The job's tmux session, when the spec declares a job."""
        return self.spec.job.session if self.spec is not None and self.spec.job is not None else None

    @property
    def forward(self) -> list[int | str]:
        return list(self.spec.ssh.forward) if self.spec is not None else []


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


@dataclass(frozen=True)
class _Found:
    stack: str
    """The stack's name (a stack given as its file is the stack the file names, as for ``up``)."""
    path: Path | None
    specs: dict[str, ExperimentSpec]
    region: str | None


def _a_path(stack: str) -> bool:
    """Whether ``stack`` names a file or folder (never a stack of the Pulumi CLI's): it exists, and is not a bare
    name that happens to be a plain folder here (``ci-123``, a folder beside a stack made elsewhere)."""
    if not os.path.lexists(stack):
        return False
    return "/" in stack or not os.path.isdir(stack) or stacks.project_file(Path(stack)) is not None


def _a_file_name(stack: str) -> bool:
    """Whether ``stack`` is written as a file's path (``./Pulumi.zz.yaml``, ``/x/Pulumi.zz.yaml``, ``zz.yml``), never
    a stack name of the Pulumi CLI, whose names are ``stack``, ``project/stack`` or ``org/project/stack``."""
    return (stack.endswith((".yaml", ".yml")) or stack.startswith(("/", "./", "../", "~"))
            or stack.count("/") > 2 or "//" in stack)


def _spec(stack: str) -> _Found:
    try:
        path = stacks.resolve_one(stack)
    except stacks.StackNotFoundError:
        if stacks.nearest_name(stack) is not None:
            raise  # a mistyped name: the nearest one, rather than asking the backend about a stack nobody made
        if _a_path(stack):
            raise  # a stack file outside every project (refused as `up` refuses it), a project of several stacks
        if _a_file_name(stack):  # a stack file that is not there: never a stack to ask the Pulumi CLI about
            raise stacks.StackNotFoundError(f"{echo(stack)}: no such stack file; accepted: a stack name or the "
                                            "path of a stack file") from None
        return _Found(stack, None, {}, None)  # a stack without a file here (a CI stack, one made elsewhere)
    name = stacks.stack_name(path)
    config = stacks.load_stack_config(path)
    spec = load_stack_spec(name, prompted.stack_config(config), source=shown_path(path))
    region = spec.base.region or config.get(f"{spec.cloud}:region")
    return _Found(name, path, {e.name: e for e in spec.experiments}, region if isinstance(region, str) else None)


def project_of(path: Path | None) -> Path:
    """The folder the stack's outputs are read in: the project ``up`` deployed the stack file ``path`` in
    (``stacks.deployed_in``: a ``pulumi new`` project running the kit's program, else the kit's), the kit's for a
    stack without a file here."""
    return (stacks.deployed_in(path) if path is not None else None) or stacks.PROJECT_ROOT


def find(stack: str, *, outputs_file: str | None = None, experiment: str | None = None,
         region: str | None = None) -> Target:
    """The target of ``gpulease status`` / ``ssh``: the stack's (only, or named) experiment."""
    found = _spec(stack)
    stack, specs = found.stack, found.specs
    if outputs_file:
        outputs = inputfile.load_json(outputs_file, what="stack outputs file")
        if not isinstance(outputs, dict):
            raise LiveError(f"{outputs_file}: expected the JSON object `pulumi stack output --json` prints")
    else:
        outputs = OUTPUTS_READER(stack, project_of(found.path))
    per_experiment = outputs.get("experiments") if isinstance(outputs.get("experiments"), dict) else {}
    if not per_experiment and outputs.get("instanceId"):
        per_experiment = {next(iter(specs), stack): outputs}
    if not per_experiment and outputs.get("phase") == "parked":
        raise LiveError(f"stack {stack!r} is parked: no instance runs (its data disk and bucket stay); accepted: "
                        "phase: train (or prep) and `pulumi up` to start one")
    if not per_experiment:
        raise LiveError(f"stack {stack!r} has no instance outputs (not deployed yet, or destroyed)")
    if experiment is None:
        if len(per_experiment) > 1:
            raise LiveError(f"stack {stack!r} runs {len(per_experiment)} experiments; name one with --experiment: "
                            f"{', '.join(sorted(per_experiment))}")
        experiment = next(iter(per_experiment))
    if experiment not in per_experiment:
        raise LiveError(f"stack {stack!r} has no experiment {experiment!r}; accepted: {', '.join(sorted(per_experiment))}")
    chosen = per_experiment[experiment]
    if not isinstance(chosen, dict):
        raise LiveError(f"stack {stack!r}: the outputs of {experiment!r} are not an object")
    spec = specs.get(experiment)
    uri = _text(chosen.get("checkpointUri")) or ""
    cloud = spec.cloud if spec else ("alicloud" if uri.startswith("oss://") or "ali-instance-cli" in str(
        chosen.get("sshCommand")) else "aws")
    return Target(stack=stack, experiment=experiment, outputs=chosen, spec=spec, region=region or found.region,
                  cloud=cloud, path=found.path)
