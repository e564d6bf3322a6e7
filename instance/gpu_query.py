"""Reading ``nvidia-smi --query-gpu`` output (standard library only): one parser for the watchdog, the heartbeat
and the verification.

``nvidia-smi --query-gpu=utilization.gpu,memory.used,memory.total --format=csv,noheader,nounits`` prints one line
per GPU. Its manual page says unsupported data "is indicated by a 'N/A' in the output"; in the CSV the field reads
``[N/A]``, ``[Not Supported]`` (``[Insufficient Permissions]``, ``[Unknown Error]`` likewise), and with MIG mode
enabled ``utilization.gpu`` is not reported per GPU (https://manpages.ubuntu.com/manpages/plucky/man1/nvidia-smi.1.html;
https://docs.nvidia.com/datacenter/tesla/mig-user-guide/). A warning on stderr may be mixed into the output when the
two streams share a file. So: a field in brackets or ``N/A`` is "not reported" (None), a number may carry its unit
(``87 %``, ``18000 MiB``, when ``nounits`` was not given), and a line whose fields are neither is not a GPU line
(skipped, not fatal). A GPU is listed when its memory, or its utilisation, reads as a number.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

QUERY = ["--query-gpu=utilization.gpu,memory.used,memory.total", "--format=csv,noheader,nounits"]
_NUMBER = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(?:%|MiB|MB|W)?\s*\Z")
_NOT_REPORTED = re.compile(r"^\s*(?:\[[^\]]{1,40}\]|N/A)\s*\Z", re.I)
MIG_BUSY_MEMORY_PERCENT = 5.0
"""A GPU that reports no utilisation (MIG mode) counts as busy when more than this share of its memory is used."""
MIG_BUSY_MEMORY_MIB = 1024.0
"""... or, when its capacity is not reported either, more than this much memory."""


@dataclass(frozen=True)
class Gpu:
    utilization: float | None
    """Percent; None when not reported (MIG mode, [N/A], [Not Supported])."""
    memory_used: float | None
    memory_total: float | None

    def effective_utilization(self) -> float:
        """The utilisation the idle rule compares: the reported one; for a GPU that reports none, 100 when its
        memory is in use (a job holds it) and 0 otherwise."""
        if self.utilization is not None:
            return self.utilization
        used = self.memory_used or 0.0
        if self.memory_total:
            return 100.0 if 100 * used / self.memory_total > MIG_BUSY_MEMORY_PERCENT else 0.0
        return 100.0 if used > MIG_BUSY_MEMORY_MIB else 0.0


def _field(text: str) -> tuple[bool, float | None]:
    """(is it a field nvidia-smi prints, its number)."""
    found = _NUMBER.match(text)
    if found:
        value = float(found.group(1))
        return True, value if value == value and value != float("inf") else None
    return bool(_NOT_REPORTED.match(text)), None


def parse(output: str) -> list[Gpu]:
    """Every GPU line of the output, in order; noise lines skipped."""
    gpus = []
    for line in output.splitlines():
        parts = line.split(",")
        if len(parts) < 2 or len(parts) > 8:
            continue
        fields = [_field(p) for p in parts[:3]]
        if not all(ok for ok, _ in fields):
            continue
        values = [value for _, value in fields] + [None] * (3 - len(fields))
        if values[0] is None and values[1] is None:
            continue  # nothing readable on this GPU's line
        gpus.append(Gpu(values[0], values[1], values[2]))
    return gpus


def problem(output: str, gpus: list[Gpu]) -> str | None:
    """Why the output gives no GPU, or None when it gives one."""
    if gpus:
        return None
    last = [line.strip() for line in output.splitlines() if line.strip()]
    return f"nvidia-smi printed no readable GPU line: {last[-1][:200]!r}" if last else "nvidia-smi listed no GPU"
