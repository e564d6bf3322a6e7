"""The experiment a `pulumi new` stack describes (``templates/gpulease-experiment``): the values its prompts saved as
``gpulease-new:*`` keys (text, as the Pulumi CLI saves them) become ``gpulease:experiment``. The template's program,
the kit's program and the CLI (``check``, ``up``, ``down``) all read such a stack through ``stack_config``; the spec
then checks the result exactly as it checks a stack file: a bad value is one line naming it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

CONFIG_KEY = "gpulease:experiment"
SWEEP_KEY = "gpulease:sweep"
PROMPT_NAMESPACE = "gpulease-new"
NO_PORT = ("", "none", "no")


def _number(text: str | None, default: float) -> float | str:
    try:
        return float(text) if text not in (None, "") else default
    except ValueError:
        return text  # the spec names it: "budgetUsd: 'x' is not a number"


def experiment(get: Callable[[str], str | None]) -> dict[str, Any]:
    """``gpulease:experiment`` from the prompted values (``get(key)``: the value of ``gpulease-new:<key>``)."""
    name = get("name") or "experiment"
    source = (get("sshFrom") or "").strip()
    ssh: dict[str, Any] = {"mode": "ssm"}
    if source.lower() not in NO_PORT:
        ssh = {"mode": "ssh", "allowedCidrs": [source], "publicKey": get("publicKey") or None}
    return {
        "name": name,
        "owner": get("owner") or "",
        "project": name,
        "costCenter": "unassigned",
        "budgetUsd": _number(get("budgetUsd"), 60),
        "gpu": {"fit": {"params": get("params") or "8B", "method": get("method") or "lora"}},
        "market": "spot",
        "maxRuntimeHours": _number(get("maxRuntimeHours"), 8),
        "ssh": ssh,
        "dataDisk": {"sizeGb": 200},
        "checkpoints": {"prefix": "checkpoints/", "intervalMinutes": 15},
    }


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
