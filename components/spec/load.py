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
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from components.spec.experiment import ExperimentSpec, MultiFieldError
from components.spec.sweep import SWEEP_SHARED_FIELDS, SweepSpec, deep_merge
from gpulease.core.errors import UserError
from gpulease.core.model import SpecModel

CONFIG_NAMESPACE = "gpulease"
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
        self.source = source
        where = f" ({source})" if source else ""
        lines = [f"invalid gpulease config in stack '{stack}'{where}:"]
        lines += [f"  - {path}: {msg}" for path, msg in problems]
        lines.append("Nothing was created. The fields are documented in docs/config.md.")
        super().__init__("\n".join(lines))


def _path(prefix: str, loc: tuple[Any, ...]) -> str:
    out = prefix
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in ("function-after", "function-before", "function-wrap") or str(part).startswith("function-"):
            continue
        else:
            out += f".{part}"
    return out


def _model_at(model: type[BaseModel], loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The model class a location points into, to list the accepted fields of an unknown key."""
    current: Any = model
    for part in loc:
        if isinstance(part, int) or current is None:
            continue
        fields = {(f.alias or n): f for n, f in current.model_fields.items()}
        field = fields.get(part) or current.model_fields.get(part)
        if field is None:
            return current
        ann = field.annotation
        current = _first_model(ann)
    return current


def _first_model(ann: Any) -> type[BaseModel] | None:
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return ann
    for arg in getattr(ann, "__args__", ()) or ():
        found = _first_model(arg)
        if found is not None:
            return found
    return None


def _format_errors(prefix: str, exc: ValidationError, model: type[BaseModel]) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    for err in exc.errors():
        loc = tuple(err["loc"])
        ctx_error = (err.get("ctx") or {}).get("error")
        if isinstance(ctx_error, MultiFieldError):
            base = _path(prefix, loc)
            problems += [(f"{base}.{path}", msg) for path, msg in ctx_error.problems]
            continue
        kind = err["type"]
        if kind == "extra_forbidden":
            parent = _model_at(model, loc[:-1])
            accepted = sorted((f.alias or n) for n, f in parent.model_fields.items()) if parent else []
            problems.append((_path(prefix, loc), f"unknown field; accepted fields here: {', '.join(accepted)}"))
        elif kind == "missing":
            problems.append((_path(prefix, loc), "is required"))
        elif kind == "value_error":
            msg = str(ctx_error) if ctx_error is not None else err["msg"]
            problems.append((_path(prefix, loc), msg))
        else:
            shown = err.get("input")
            shown_text = f" (got {json.dumps(shown, default=str)})" if shown is not None and not isinstance(shown, dict) else ""
            problems.append((_path(prefix, loc), f"{err['msg']}{shown_text}"))
    return problems


def _validate_experiment(stack: str, prefix: str, raw: Any, source: str | None) -> ExperimentSpec:
    if not isinstance(raw, Mapping):
        raise SpecError(stack, [(prefix, f"must be a mapping of experiment fields, got {type(raw).__name__}")], source)
    try:
        return ExperimentSpec.model_validate(dict(raw))
    except ValidationError as exc:
        raise SpecError(stack, _format_errors(prefix, exc, ExperimentSpec), source) from None


def load_stack_spec(stack: str, config: Mapping[str, Any], source: str | None = None) -> StackSpec:
    """Validate the ``gpulease:*`` keys of a stack's config (values already parsed from YAML/JSON)."""
    exp_key = f"{CONFIG_NAMESPACE}:{EXPERIMENT_KEY}"
    sweep_key = f"{CONFIG_NAMESPACE}:{SWEEP_KEY}"
    raw_exp, raw_sweep = config.get(exp_key), config.get(sweep_key)
    known = {exp_key, sweep_key}
    unknown = sorted(k for k in config if k.startswith(f"{CONFIG_NAMESPACE}:") and k not in known)
    if unknown:
        raise SpecError(stack, [(k, f"unknown key; accepted: {exp_key} or {sweep_key}") for k in unknown], source)
    if (raw_exp is None) == (raw_sweep is None):
        raise SpecError(
            stack,
            [(f"{exp_key} / {sweep_key}", "declare exactly one of them; accepted: an experiment, or a sweep {base, runs}")],
            source,
        )
    if raw_exp is not None:
        return StackSpec(stack=stack, kind="experiment", experiments=[_validate_experiment(stack, exp_key, raw_exp, source)])

    try:
        sweep = SweepSpec.model_validate(raw_sweep if isinstance(raw_sweep, Mapping) else {"_": raw_sweep})
    except ValidationError as exc:
        raise SpecError(stack, _format_errors(sweep_key, exc, SweepSpec), source) from None
    base = _validate_experiment(stack, f"{sweep_key}.base", sweep.base, source)
    experiments = []
    problems: list[tuple[str, str]] = []
    for i, run in enumerate(sweep.runs):
        shared = sorted(set(run.overrides) & set(SWEEP_SHARED_FIELDS))
        if shared:
            problems.append((f"{sweep_key}.runs[{i}].overrides", f"{', '.join(shared)} are shared by every run; set them in base"))
            continue
        if "name" in run.overrides:
            problems.append((f"{sweep_key}.runs[{i}].overrides.name", "the run's name comes from runs[].name"))
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
        raise SpecError(stack, [(f"{sweep_key}.runs", "all runs share one bucket; set checkpoints.bucket in base only")], source)
    return StackSpec(stack=stack, kind="sweep", experiments=experiments, sweep_name=base.name)
