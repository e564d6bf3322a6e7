"""The experiment a `pulumi new` stack describes (``templates/gpulease-experiment``): the values its prompts saved as
``gpulease-new:*`` keys (text, as the Pulumi CLI saves them) become ``gpulease:experiment``. The template's program,
the kit's program and the CLI (``check``, ``up``, ``down``) all read such a stack through ``stack_config``; the spec
then checks the result exactly as it checks a stack file: a bad value is one line naming it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from gpulease.core.flag_numbers import read_number, shown

if TYPE_CHECKING:
    from components.spec.load import SpecError

CONFIG_KEY = "gpulease:experiment"
SWEEP_KEY = "gpulease:sweep"
PROMPT_NAMESPACE = "gpulease-new"
NO_PORT = ("", "none", "no")


PROMPTED_FIELDS = {"name": "name", "project": "name", "owner": "owner", "budgetUsd": "budgetUsd",
                   "maxRuntimeHours": "maxRuntimeHours", "gpu.fit.params": "params", "gpu.fit.method": "method",
                   "ssh.allowedCidrs": "sshFrom", "ssh.publicKey": "publicKey"}
"""The experiment's fields a prompted value becomes, and the prompt (``gpulease-new:<key>``) it came from."""


class PromptedExperiment(dict):
    """``gpulease:experiment`` as made from prompted values: the spec's refusals name the keys the user wrote."""

    bad_numbers: dict[str, str]


def _number(text: str | None, default: float, key: str, bad: dict[str, str]) -> float | str:
    """The number a prompted value writes in ASCII digits (the rule of every number the kit reads from text: ``'٦٠'``
    and ``inf`` are no numbers), else the text, which the spec then refuses."""
    if text in (None, ""):
        return default
    number = read_number(text.strip())
    if number is None:
        bad[key] = text
        return text
    return number


def experiment(get: Callable[[str], str | None]) -> dict[str, Any]:
    """``gpulease:experiment`` from the prompted values (``get(key)``: the value of ``gpulease-new:<key>``). The
    name has no default: Pulumi's prompt requires one, and an empty one is refused, naming its key."""
    name = get("name") or ""
    bad: dict[str, str] = {}
    source = (get("sshFrom") or "").strip()
    ssh: dict[str, Any] = {"mode": "ssm"}
    if source.lower() not in NO_PORT:
        ssh = {"mode": "ssh", "allowedCidrs": [source], "publicKey": get("publicKey") or None}
    spec = PromptedExperiment({
        "name": name,
        "owner": get("owner") or "",
        "project": name,
        "costCenter": "unassigned",
        "budgetUsd": _number(get("budgetUsd"), 60, "budgetUsd", bad),
        "gpu": {"fit": {"params": get("params") or "8B", "method": get("method") or "lora"}},
        "market": "spot",
        "maxRuntimeHours": _number(get("maxRuntimeHours"), 8, "maxRuntimeHours", bad),
        "ssh": ssh,
        "dataDisk": {"sizeGb": 200},
        "checkpoints": {"prefix": "checkpoints/", "intervalMinutes": 15},
    })
    spec.bad_numbers = bad
    return spec


def _prompt_of(path: str) -> str | None:
    for field, key in PROMPTED_FIELDS.items():
        head = f"{CONFIG_KEY}.{field}"
        if path == head or path.startswith((f"{head}.", f"{head}[")):
            return key
    return None


def as_written(exc: SpecError, raw: Any) -> SpecError:
    """``exc`` about an experiment made from prompted values (``raw``), naming the ``gpulease-new:*`` key each
    problem came from (the user's file holds no ``gpulease:experiment``); one line a key."""
    if not isinstance(raw, PromptedExperiment):
        return exc
    problems: dict[str, str] = {}
    for path, msg in exc.problems:
        key = _prompt_of(path)
        if key in raw.bad_numbers:
            msg = f"{shown(raw.bad_numbers[key])} is not a number; accepted: a finite number in ASCII digits, e.g. 60"
        problems.setdefault(f"{PROMPT_NAMESPACE}:{key}" if key else path, msg)
    return type(exc)(exc.stack, list(problems.items()), exc.source if exc.located else None)


def _text(value: Any) -> str | None:
    """A value as the Pulumi CLI hands it to a program: text (``true``, ``60``), None when unset."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else str(value)


def prompted(config: Mapping[str, Any]) -> bool:
    """Whether a stack's config is a `pulumi new` stack's: prompted values and no spec of its own."""
    return (config.get(CONFIG_KEY) is None and config.get(SWEEP_KEY) is None
            and any(str(k).startswith(f"{PROMPT_NAMESPACE}:") for k in config))


def translated(config: Mapping[str, Any]) -> dict[str, Any]:
    """A stack's config with a `pulumi new` stack's prompted values replaced by the experiment they describe."""
    rest = {k: v for k, v in config.items() if not str(k).startswith(f"{PROMPT_NAMESPACE}:")}
    if not prompted(config):
        return rest
    return {**rest, CONFIG_KEY: experiment(lambda key: _text(config.get(f"{PROMPT_NAMESPACE}:{key}")))}


def stack_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """The ``gpulease:*`` keys of a stack's config; a `pulumi new` stack's prompted values as its experiment."""
    return {k: v for k, v in translated(config).items() if str(k).startswith("gpulease:")}
