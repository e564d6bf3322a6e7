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

MIG. The watchdog's query (``IDLE_QUERY``) adds ``mig.mode.current`` ("Enabled" / "Disabled", the manual page's
query field) and ``index``. A GPU in MIG mode has no utilisation of its own; its slices (GPU instances) run the jobs.
The MIG user guide lists them with ``nvidia-smi mig -lgi`` (one row per GPU instance: GPU, name, profile id,
instance id, placement) and shows each process in ``nvidia-smi``'s own Processes table with its ``GI ID`` and
``CI ID`` (https://docs.nvidia.com/datacenter/tesla/mig-user-guide/; NVML's process record carries the same
"If MIG is enabled, stores a valid GPU instance ID",
https://docs.nvidia.com/deploy/nvml-api/structnvmlProcessInfo__t.html). ``slices`` and ``processes`` read those two
tables (rows in the documented layout, read word by word; every other line skipped), and ``mig_busy`` judges a MIG GPU slice by slice:
busy while any slice has a process. The samples in tests/instance/test_gpu_query_mig.py are written from the
guide's layout; no real MIG GPU was available to record one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

QUERY = ["--query-gpu=utilization.gpu,memory.used,memory.total", "--format=csv,noheader,nounits"]
IDLE_QUERY = ["--query-gpu=utilization.gpu,memory.used,memory.total,mig.mode.current,index",
              "--format=csv,noheader,nounits"]
"""The watchdog's: ``QUERY`` and whether each GPU is in MIG mode, with its index (what ``mig -lgi`` and the
Processes table name it by). A driver that does not know a field refuses the whole query (exit 2, ``Field
"mig.mode.current" is not a valid field to query.``, as reported in https://github.com/huggingface/candle/issues/733):
the watchdog then asks ``QUERY`` (``idle_rule.query_gpus``)."""
INVALID_FIELD = re.compile(r'Field "[^"\n]{1,80}" is not a valid field to query')
MIG_SLICES = ["mig", "-lgi"]
PROCESSES: list[str] = []
"""``nvidia-smi`` alone: its Processes table (GPU, GI ID, CI ID, PID, type, name, memory)."""
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
    mig: bool = False
    """``mig.mode.current`` reads Enabled (only in ``IDLE_QUERY``'s answer)."""
    index: int | None = None

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
        mig = len(parts) > 3 and parts[3].strip().lower() == "enabled"
        if values[0] is None and values[1] is None and not mig:
            continue  # nothing readable on this GPU's line (a MIG GPU is judged by its slices whatever it reads)
        index = int(parts[4]) if len(parts) > 4 and parts[4].strip().isascii() and parts[4].strip().isdigit() else None
        gpus.append(Gpu(values[0], values[1], values[2], mig, index))
    return gpus


# --- MIG: the slices and their processes --------------------------------------------------------------------

MAX_TABLE_LINE = 400
"""Longer lines are no table row (nvidia-smi's rows are under 100 characters)."""
PROCESS_TYPES = ("C", "G", "C+G", "M", "M+C")
"""The Type column as nvidia-smi(1) describes it: C compute, G graphics, M an MPS compute process, C+G and M+C both
(https://manpages.ubuntu.com/manpages/plucky/man1/nvidia-smi.1.html)."""


@dataclass(frozen=True)
class Slice:
    """One GPU instance of a MIG GPU (a row of ``nvidia-smi mig -lgi``)."""

    gpu: int
    gi: int
    profile: str


@dataclass(frozen=True)
class Process:
    """One row of ``nvidia-smi``'s Processes table: the GPU, its GPU instance (None without MIG), pid, name."""

    gpu: int
    gi: int | None
    pid: int
    name: str


def _cells(line: str) -> list[str] | None:
    """The words of a table row ``| a b c |``; None for any other line (or one longer than a row can be)."""
    line = line.strip()
    if len(line) > MAX_TABLE_LINE or len(line) < 3 or line[0] != "|" or line[-1] != "|":
        return None
    return line[1:-1].split()


def _count(word: str, digits: int) -> int | None:
    return int(word) if word.isascii() and word.isdigit() and len(word) <= digits else None


def slices(output: str) -> list[Slice]:
    """The GPU instances ``nvidia-smi mig -lgi`` lists, in order: rows ``| GPU MIG <name> <profile id> <instance id>
    <start>:<size> |``."""
    found = []
    for line in output.splitlines():
        cells = _cells(line)
        if not cells or len(cells) != 6 or cells[1] != "MIG" or ":" not in cells[5]:
            continue
        gpu, profile, gi = _count(cells[0], 3), _count(cells[3], 4), _count(cells[4], 4)
        if gpu is not None and profile is not None and gi is not None and len(cells[2]) <= 40:
            found.append(Slice(gpu, gi, cells[2]))
    return found


def processes(output: str) -> list[Process] | None:
    """The Processes table of ``nvidia-smi``'s own output; None when the output has no such table (it cannot be
    said that nothing runs), an empty list when it says "No running processes found"."""
    lines = output.splitlines()
    start = next((i for i, line in enumerate(lines) if re.match(r"^\|\s*Processes:", line)), None)
    if start is None:
        return None
    found = []
    for line in lines[start + 1:]:
        cells = _cells(line)  # | GPU GI CI PID Type Process-name... Memory |
        if not cells or len(cells) < 7:
            continue
        gpu, pid = _count(cells[0], 3), _count(cells[3], 10)
        gi = None if cells[1] == "N/A" else _count(cells[1], 4)
        ci_ok = cells[2] == "N/A" or _count(cells[2], 4) is not None
        memory_ok = cells[-1] == "N/A" or (cells[-1].endswith("MiB") and _count(cells[-1][:-3], 9) is not None)
        if gpu is None or pid is None or (gi is None and cells[1] != "N/A") or not ci_ok or not memory_ok \
                or cells[4] not in PROCESS_TYPES:
            continue
        found.append(Process(gpu, gi, pid, " ".join(cells[5:-1])[:60]))
    return found


def mig_busy(gpu: int, found_slices: list[Slice], found: list[Process]) -> tuple[bool, str]:
    """(is MIG GPU ``gpu`` in use, what each of its slices runs): busy when any slice has a process (a process
    whose GPU instance is not listed counts too: something runs on this GPU)."""
    own = [p for p in found if p.gpu == gpu]
    parts = []
    for sl in (s for s in found_slices if s.gpu == gpu):
        on = [p for p in own if p.gi == sl.gi]
        parts.append(f"GI {sl.gi} ({sl.profile}): " + (", ".join(f"pid {p.pid} {p.name}" for p in on) if on
                                                        else "no process"))
    known = {s.gi for s in found_slices if s.gpu == gpu}
    stray = [p for p in own if p.gi not in known]
    if stray:
        parts.append("outside a listed slice: " + ", ".join(f"pid {p.pid} {p.name}" for p in stray))
    if not parts:
        parts.append("no slice")
    return bool(own), f"MIG GPU {gpu}: " + "; ".join(parts)


def problem(output: str, gpus: list[Gpu]) -> str | None:
    """Why the output gives no GPU, or None when it gives one."""
    if gpus:
        return None
    last = [line.strip() for line in output.splitlines() if line.strip()]
    return f"nvidia-smi printed no readable GPU line: {last[-1][:200]!r}" if last else "nvidia-smi listed no GPU"
