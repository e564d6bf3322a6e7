"""The experiment spec: the one source of truth for a stack (pydantic v2, camelCase keys in YAML).

A stack declares either ``gpulease:experiment`` (one experiment) or ``gpulease:sweep`` (a base experiment
plus a list of runs). ``load_stack_spec`` validates either form and returns a ``StackSpec`` whose
``experiments`` list always holds fully merged, validated experiments, so components never branch on the form.

Invalid input raises ``SpecError``: one message naming the stack, each field path, what was wrong and what is
accepted. Nothing is registered before the spec validates.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ValidationError

from components.spec.experiment import ExperimentSpec, MultiFieldError
from components.spec.messages import format_errors, kind_of
from components.spec.prompted import as_written
from components.spec.regions import region_problems
from components.spec.suggest import nearest_hint
from components.spec.sweep import SWEEP_SHARED_FIELDS, SweepSpec, deep_merge
from gpulease.core.errors import UserError
from gpulease.core.model import SpecModel
from gpulease.core.shown import capped, capped_quotes
from gpulease.core.yaml_scalars import as_program_sees

CONFIG_NAMESPACE = "gpulease"
STACK_FILE_ENV = "GPULEASE_STACK_FILE"
"""The stack file as the user named it (``gpulease plan``, ``up`` set it for the program they run), so that an error
the program finds names that file; without it, the Pulumi CLI's own ``stacks/Pulumi.<stack>.yaml``."""
PROJECT_KEY = "pulumi:project"
"""Where a caller may pass the project's name (the config never holds it; ``load_stack_spec`` reads it if given)."""
ModelT = TypeVar("ModelT", bound=BaseModel)
EXPERIMENT_KEY = "experiment"
SWEEP_KEY = "sweep"


class StackSpec(SpecModel):
    """What a stack declares, normalised: ``experiments`` always holds the merged, validated runs."""

    stack: str
    kind: Literal["experiment", "sweep"]
    experiments: list[ExperimentSpec]
    sweep_name: str | None = None

    @property
    def cloud(self) -> str:
        return self.experiments[0].cloud

    @property
    def base(self) -> ExperimentSpec:
        return self.experiments[0]


class SpecError(UserError):
    """A user mistake in stack config: one readable message, no traceback."""

    def __init__(self, stack: str, problems: list[tuple[str, str]], source: str | None = None):
        self.stack = stack
        self.problems = problems
        self.located = source is not None
        # A problem found after loading (a lookup, the catalog) names the stack's file too.
        source = source or f"stacks/Pulumi.{stack}.yaml"
        self.source = source
        # The user's own values come back capped and with their control characters written out.
        lines = [f"invalid gpulease config in stack {capped(stack)!r} ({capped(source, 160)}):"]
        lines += [f"  - {capped(path)}: {capped_quotes(msg)}" for path, msg in problems]
        lines.append("Nothing was created. The fields are documented in docs/config.md.")
        super().__init__("\n".join(lines))

    def at(self, source: str) -> SpecError:
        """This error naming ``source`` as the stack's file, unless it names one already."""
        return self if self.located else SpecError(self.stack, self.problems, source)


def _as_delivered(raw: Any) -> Any:
    """``raw`` with each float as the program reads it from the Pulumi CLI's JSON (``as_program_sees``: ``30.0`` is
    ``30``), so that a dict or JSON input judges a whole-number float as a stack file's does, and as the JSON Schema
    does (its ``integer`` is any number without a fractional part)."""
    if isinstance(raw, float):
        return as_program_sees(raw)
    if isinstance(raw, Mapping):
        return {k: _as_delivered(v) for k, v in raw.items()}
    if isinstance(raw, list | tuple):
        return [_as_delivered(v) for v in raw]
    return raw


def _strict(model: type[ModelT], raw: Any) -> ModelT:
    """``raw`` validated as the program receives it: as JSON (the Pulumi CLI hands structured config to the program
    as JSON), strictly (``"8"`` is not a number, ``true`` is not 1, ``'yes'`` is not true), by the camelCase
    names only (``idle_minutes`` is an unknown field): what the JSON Schema says, the loader does."""
    return model.model_validate_json(json.dumps(_as_delivered(raw), allow_nan=True), strict=True, by_alias=True, by_name=False)


def _validate_experiment(stack: str, prefix: str, raw: Any, source: str | None) -> ExperimentSpec:
    if not isinstance(raw, Mapping):
        raise SpecError(stack, [(prefix, f"is {kind_of(raw)}; accepted: a mapping of experiment fields (name, owner, "
                                 "gpu, maxRuntimeHours, ...)")], source)
    try:
        return _strict(ExperimentSpec, dict(raw))
    except ValidationError as exc:
        raise SpecError(stack, format_errors(prefix, exc, ExperimentSpec, MultiFieldError), source) from None


def load_stack_spec(stack: str, config: Mapping[str, Any], source: str | None = None) -> StackSpec:
    """Validate the ``gpulease:*`` keys of a stack's config (values already parsed from YAML/JSON)."""
    exp_key = f"{CONFIG_NAMESPACE}:{EXPERIMENT_KEY}"
    sweep_key = f"{CONFIG_NAMESPACE}:{SWEEP_KEY}"
    raw_exp, raw_sweep = config.get(exp_key), config.get(sweep_key)
    known = {exp_key, sweep_key}
    unknown = sorted(k for k in config if k.startswith(f"{CONFIG_NAMESPACE}:") and k not in known)
    if unknown:
        raise SpecError(stack, [(k, f"unknown key{nearest_hint(k, known)}; accepted: {exp_key} or {sweep_key}")
                                for k in unknown], source)
    if (raw_exp is None) == (raw_sweep is None):
        raise SpecError(
            stack,
            [(f"{exp_key} / {sweep_key}", "declare exactly one of them; accepted: an experiment, or a sweep {base, runs}")],
            source,
        )
    if raw_exp is not None:
        try:
            spec = StackSpec(stack=stack, kind="experiment", experiments=[_validate_experiment(stack, exp_key, raw_exp, source)])
            _check_stack(spec, exp_key, config, source)
        except SpecError as exc:
            raise as_written(exc, raw_exp) from None
        return spec

    if not isinstance(raw_sweep, Mapping):
        raise SpecError(stack, [(sweep_key, f"is {kind_of(raw_sweep)}; accepted: a mapping {{base, runs}}")], source)
    try:
        sweep = _strict(SweepSpec, dict(raw_sweep))
    except ValidationError as exc:
        raise SpecError(stack, format_errors(sweep_key, exc, SweepSpec, MultiFieldError), source) from None
    base = _validate_experiment(stack, f"{sweep_key}.base", sweep.base, source)
    experiments = []
    problems: list[tuple[str, str]] = []
    for i, run in enumerate(sweep.runs):
        shared = sorted(set(run.overrides) & set(SWEEP_SHARED_FIELDS))
        if shared:
            problems.append((f"{sweep_key}.runs[{i}].overrides", f"{', '.join(shared)} are shared by every run; accepted: set them in base"))
            continue
        if "name" in run.overrides:
            problems.append((f"{sweep_key}.runs[{i}].overrides.name", "the run's name comes from runs[].name; accepted: runs[].name, no name in overrides"))
            continue
        merged = deep_merge(dict(sweep.base), run.overrides)
        merged["name"] = f"{base.name}-{run.name}"
        try:
            experiments.append(_validate_experiment(stack, f"{sweep_key}.runs[{i}]", merged, source))
        except SpecError as err:
            problems += err.problems
    if problems:
        raise SpecError(stack, problems, source)
    if len({e.checkpoints.bucket for e in experiments}) > 1:
        raise SpecError(stack, [(f"{sweep_key}.runs", "all runs share one bucket; accepted: checkpoints.bucket set in "
                                 "base only")], source)
    spec = StackSpec(stack=stack, kind="sweep", experiments=experiments, sweep_name=base.name)
    _check_stack(spec, f"{sweep_key}.base", config, source)
    return spec


def own_stack(reference: str, stack: str, project: str | None) -> bool:
    """Whether a stack reference (``stack``, ``project/stack``, ``org/project/stack``) names ``stack`` itself."""
    parts = reference.split("/")
    if parts[-1] != stack:
        return False
    return len(parts) == 1 or (project is not None and parts[-2] == project)


def _check_stack(spec: StackSpec, prefix: str, config: Mapping[str, Any], source: str | None) -> None:
    """What only the whole stack shows: its cloud's region (from the spec or the provider's config) and an image
    taken from the stack itself."""
    problems: list[tuple[str, str]] = []
    base = spec.base
    problems += region_problems(base.cloud, base.region, config, prefix)
    project = config.get(PROJECT_KEY)
    for i, exp in enumerate(spec.experiments):
        ref = exp.image.from_stack
        if ref is not None and own_stack(ref, spec.stack, project if isinstance(project, str) else None):
            where = prefix if spec.kind == "experiment" else f"{CONFIG_NAMESPACE}:{SWEEP_KEY}.runs[{i}]"
            problems.append((f"{where}.image.fromStack", f"{ref!r} is this stack ({spec.stack}): its image does not "
                             "exist before this stack creates it; accepted: the stack that baked the image"))
            break
    if problems:
        raise SpecError(spec.stack, problems, source)
