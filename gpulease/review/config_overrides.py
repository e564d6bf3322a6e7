"""``gpulease plan --config`` values laid over a stack file's config, a dotted key as a path into it (as
``pulumi config set --path`` reads one, and as ``gpulease ephemeral --set`` does for an experiment's fields).

- ``key=value`` and ``ns:key=value``: the whole config key, as before;
- ``ns:key.a.b=value``: field ``a.b`` inside config key ``ns:key`` (``gpulease:experiment.gpu.count=2``);
- ``key=value`` without a namespace, in a gpulease stack whose project has no key ``key``, when ``key`` is a
  field of the experiment (``budgetUsd=1``, ``maxRuntimeHours=2``): that field, as ``ephemeral --set`` reads it;
- ``key.a.b=value`` without a namespace: field ``a.b`` of the project's config key ``key`` when the stack has that
  key; in a gpulease stack (one with ``gpulease:experiment``) otherwise the experiment's field ``key.a.b``
  (``gpu.count=2``, ``dataDisk.sizeGb=300``), exactly as ``ephemeral --set`` reads it.

The stack file's own config is never changed: the result is a copy."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from gpulease.core.errors import UserError

NAMESPACE = "gpulease"
EXPERIMENT = f"{NAMESPACE}:experiment"


class ConfigPathError(UserError):
    """A dotted ``--config`` key that goes through a value that is not a mapping."""


def split_key(key: str) -> tuple[str, list[str]]:
    """``("gpulease:experiment", ["gpu", "count"])`` for ``gpulease:experiment.gpu.count``; no path for a plain key."""
    namespace, colon, name = key.rpartition(":")
    head, *path = name.split(".")
    return (f"{namespace}:{head}" if colon else head), path


def experiment_field(name: str, config: Mapping[str, Any], project: str) -> bool:
    """A bare key (``budgetUsd``) that names a field of the stack's experiment, in a gpulease stack where the
    project has no key of that name: set there, as ``ephemeral --set budgetUsd=1`` does (in the gpulease project
    itself every bare key but the experiment and the sweep is one: ``gpulease:<key>`` is never valid)."""
    if EXPERIMENT not in config or f"{project}:{name}" in config or name in config:
        return False
    if project == NAMESPACE:  # gpulease:<name> other than the experiment is never valid: a misspelt field, named so
        return name not in ("experiment", "sweep")
    from components.spec.experiment import ExperimentSpec

    return any(name == (info.alias or field) for field, info in ExperimentSpec.model_fields.items())


def lay_over(config: Mapping[str, Any], overrides: Mapping[str, Any] | None, project: str) -> dict[str, Any]:
    """``config`` with ``overrides`` laid over it (a copy)."""
    out = copy.deepcopy(dict(config))
    for key, value in (overrides or {}).items():
        head, path = split_key(key)
        if not path and not (":" not in head and experiment_field(head, out, project)):
            out[key] = value
            continue
        if ":" not in head:
            if f"{project}:{head}" in out:
                head = f"{project}:{head}"
            elif head not in out and EXPERIMENT in out:
                head, path = EXPERIMENT, [head, *path]
        _assign(out, head, path, copy.deepcopy(value), key)
    return out


def _assign(config: dict[str, Any], head: str, path: list[str], value: Any, original: str) -> None:
    if config.get(head) is None:
        config[head] = {}
    node = config[head]
    for depth in range(len(path)):
        if not isinstance(node, dict):
            where = ".".join([head, *path[:depth]])
            raise ConfigPathError(f"--config {original}: {where} is not a mapping (it is {node!r}), so it has no "
                                  f"field {path[depth]!r}; accepted: a path through mappings, or the whole value "
                                  f"(--config {where}=...)")
        if depth == len(path) - 1:
            node[path[depth]] = value
            return
        if node.get(path[depth]) is None:
            node[path[depth]] = {}
        node = node[path[depth]]
