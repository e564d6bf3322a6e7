"""A spec that sets every setting the user-data carries, and the user-data read back (decoded, parsed)."""

from __future__ import annotations

import base64
import gzip
from typing import Any

import yaml

INSTANCE = "aws:ec2/instance:Instance"

SPEC_OVERRIDES: dict[str, Any] = {
    "idleMinutes": 45,
    "watchdog": {
        "idleGpuPercent": 7,
        "warnMinutes": 20,
        "warnHook": "wall 'deadline in 20 minutes'",
        "finalSyncMinutes": 4,
        "busyMarker": "/data/.busy",
        "busyMarkerMaxAgeMinutes": 120,
        "onRebalance": "shutdown",
        "pollSeconds": 10,
    },
    "checkpoints": {
        "prefix": "ckpt/",
        "intervalMinutes": 10,
        "hook": "python /data/save.py",
        "signal": "usr1",
        "process": "train.py",
        "hookTimeoutSeconds": 90,
    },
}


def decode(encoded: str) -> str:
    raw = base64.b64decode(encoded)
    return (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode()


def cloud_config(text: str) -> dict[str, Any]:
    assert text.startswith("#cloud-config\n")
    return yaml.safe_load(text)


def files(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["path"]: f for f in config["write_files"]}
