"""The ephemeral stack's config: the base stack's config, the user's ``--set`` overrides, and what makes it
ephemeral (a capped deadline, the CI-run tag, nothing retained). Validated before anything is created."""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from components.spec.experiment import ExperimentSpec
from components.spec.load import CONFIG_NAMESPACE, EXPERIMENT_KEY, SWEEP_KEY, StackSpec, load_stack_spec
from gpulease.core.errors import UserError
from gpulease.core.inputfile import StrictLoader
from gpulease.core.shown import echo, shown_path
from gpulease.review import stacks
from gpulease.review.render import load_stack_file
from gpulease.review.stacks import PROJECT_ROOT

EXPERIMENT = f"{CONFIG_NAMESPACE}:{EXPERIMENT_KEY}"
SWEEP = f"{CONFIG_NAMESPACE}:{SWEEP_KEY}"
DEFAULT_MAX_HOURS = 2.0
"""Default cap on an ephemeral stack's runtime: CI jobs are short, and a forgotten GPU must stop soon."""

_PATH_PART = re.compile(r"^[A-Za-z][A-Za-z0-9]*\Z")


class EphemeralConfigError(UserError):
    """A bad base stack name, ``--set`` override or flag; nothing was created."""


@dataclass(frozen=True)
class EphemeralConfig:
    stack: str
    base_stack: str
    base_file: Path
    config: dict[str, Any]
    """The full stack config to set on the new stack (structured values, as in a stack file)."""
    spec: StackSpec

    @property
    def experiment(self) -> ExperimentSpec:
        return self.spec.base

    @property
    def region(self) -> str:
        region = self.experiment.region or self.config.get(f"{self.spec.cloud}:region")
        if not region:
            raise EphemeralConfigError(
                f"stack '{self.base_stack}': no region; set gpulease:experiment.region or {self.spec.cloud}:region"
            )
        return str(region)


def parse_override(text: str) -> tuple[list[str], Any]:
    """``maxRuntimeHours=2`` / ``gpu.instanceType=g5.xlarge`` / ``aws:region=us-west-2`` into (path, value).

    Values are read as YAML scalars or flow collections, so ``2`` is a number, ``false`` a boolean and
    ``[203.0.113.7/32]`` a list."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise EphemeralConfigError(f"--set {text!r}: accepted: key=value, e.g. maxRuntimeHours=2 or gpu.instanceType=g5.xlarge")
    try:
        # As a stack file says it (YAML 1.2, as the Pulumi CLI reads it): `1:00` is text, never 60.
        value = yaml.load(raw, Loader=StrictLoader) if raw.strip() else ""
    except yaml.YAMLError as exc:
        raise EphemeralConfigError(f"--set {key}: the value is not valid YAML ({exc.__class__.__name__})") from None
    except Exception as exc:  # the strict loader's refusals (an alias, a tag, a number out of range)
        raise EphemeralConfigError(f"--set {key}: {exc}") from None
    if ":" in key:
        # A whole config key of another namespace (provider config such as aws:region).
        if key.startswith(f"{CONFIG_NAMESPACE}:"):
            raise EphemeralConfigError(
                f"--set {key}: give the experiment field's path without the namespace, e.g. maxRuntimeHours=2"
            )
        return [key], value
    parts = key.split(".")
    bad = [p for p in parts if not _PATH_PART.match(p)]
    if bad:
        raise EphemeralConfigError(
            f"--set {key}: {bad[0]!r} is not a field name; accepted: dotted camelCase fields of the experiment "
            "spec, e.g. dataDisk.sizeGb=200"
        )
    return [EXPERIMENT, *parts], value


def _assign(config: dict[str, Any], path: list[str], value: Any, original: str) -> None:
    node: Any = config
    for i, part in enumerate(path[:-1]):
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        if not isinstance(child, dict):
            shown = ".".join(path[1 : i + 1])
            raise EphemeralConfigError(f"--set {original}: {shown} is not a mapping, so it has no field {path[i + 1]!r}")
        node = child
    node[path[-1]] = value


def build_config(
    base_stack: str,
    stack: str,
    *,
    overrides: Sequence[str] = (),
    max_hours: float = DEFAULT_MAX_HOURS,
    keep_data: bool = False,
    ci_run: str,
    project_dir: Path = PROJECT_ROOT,
) -> EphemeralConfig:
    """Derive and validate the ephemeral stack's config. Raises a ``UserError`` naming the stack and field."""
    if not max_hours > 0:
        raise EphemeralConfigError(f"--max-hours {max_hours:g}: accepted: a number of hours above 0, e.g. 2")
    found = stacks.resolve(base_stack, project_dir)
    if len(found) != 1:  # a project folder of several stacks: one of them is the base
        names = ", ".join(stacks.stack_name(f) for _, f in found[:8])
        raise EphemeralConfigError(f"--base-stack {echo(base_stack)} names {len(found)} stacks, not one; accepted: "
                                   f"one stack name or stack file ({names})")
    [(_, base_file)] = found
    base_name = stacks.stack_name(base_file)
    try:
        base = load_stack_file(base_file)
    except (ValueError, yaml.YAMLError) as exc:
        raise EphemeralConfigError(f"stack '{base_name}' ({base_file}): not a readable stack file: {exc}") from None
    # The base itself must be valid, reported against its own file, before any override is considered.
    load_stack_spec(base_name, base, source=shown_path(base_file))
    if SWEEP in base:
        raise EphemeralConfigError(
            f"stack '{base_name}' declares a sweep; ephemeral run takes an experiment stack "
            f"({EXPERIMENT}), one instance per CI job"
        )

    config = copy.deepcopy(base)
    for text in overrides:
        path, value = parse_override(text)
        _assign(config, path, value, text)

    exp = config[EXPERIMENT]
    if not isinstance(exp, dict):
        raise EphemeralConfigError(f"stack '{base_name}': {EXPERIMENT} is not a mapping")
    hours = exp.get("maxRuntimeHours")
    if isinstance(hours, (int, float)) and not isinstance(hours, bool):
        exp["maxRuntimeHours"] = min(float(hours), float(max_hours))
    # An explicit deadline from the base would outlive the cap; the ephemeral deadline is creation + the cap.
    exp.pop("expiresAt", None)
    exp.pop("deadlineRenewal", None)
    exp["ciRun"] = ci_run
    if not keep_data:
        exp.setdefault("dataDisk", {})
        exp.setdefault("checkpoints", {})
        if isinstance(exp["dataDisk"], dict):
            exp["dataDisk"]["retain"] = False
        if isinstance(exp["checkpoints"], dict):
            exp["checkpoints"]["retain"] = False

    spec = load_stack_spec(stack, config, source=f"{shown_path(base_file)} (ephemeral copy with --set overrides)")
    experiment = spec.base
    if not experiment.checkpoints.enabled:
        raise EphemeralConfigError(
            f"stack '{base_name}': checkpoints.enabled is false; ephemeral runs talk to the instance and collect "
            "artifacts through the checkpoint bucket; accepted: checkpoints.enabled: true"
        )
    return EphemeralConfig(stack=stack, base_stack=base_name, base_file=base_file, config=config, spec=spec)


def deadline_hours(config: Mapping[str, Any]) -> float | None:
    exp = config.get(EXPERIMENT)
    if isinstance(exp, Mapping):
        hours = exp.get("maxRuntimeHours")
        if isinstance(hours, (int, float)):
            return float(hours)
    return None
