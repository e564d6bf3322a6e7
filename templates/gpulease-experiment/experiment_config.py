"""The experiment a `pulumi new` stack describes, from the values its prompts saved (strings, as the Pulumi CLI
saves them). The spec checks the result exactly as it checks a stack file: a bad value is one line naming it."""

from collections.abc import Callable
from typing import Any

CONFIG_KEY = "gpulease:experiment"
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
