"""When is this instance idle? The idle rule, alone (standard library only).

Idle means: the GPU utilisation of every GPU (the CPU's on a preparation instance, ``idle_source = cpu``) below
the threshold for ``idle_minutes``, with no busy marker and no live SSH/SSM session, counted only **after the
bootstrap (and the verification) finished on this boot**: the driver install and a long stage keep the GPU at 0 %
on purpose. Where the settings say a bootstrap reports (``idle_after_setup``), the count starts when
``boot-progress.json`` says so for this boot; when the bootstrap that recorded its start there (its pid) is no
longer running without having reported (it died early); or at the latest at the bound, counted from the bootstrap
unit's own start: ``bounds.idle_setup_wait`` after ``bootstrap_started`` (``bounds.run_unit`` after the bootstrap's
end while the verification runs); when no bootstrap recorded its start on this boot, at the bootstrap's own bound
counted from the boot (``bounds.bootstrap_unit``: systemd has ended the bootstrap by then, whatever it did), else
after the watchdog started (a bootstrap that never reports does not keep an instance alive). A GPU that cannot be read is reported, and counts as idle after ``gpu_grace_minutes``.

The threshold: ``idle_gpu_percent`` of ``utilization.gpu``, which nvidia-smi's manual page defines as the "percent
of time over the past sample period during which one or more kernels was executing on the GPU"
(https://manpages.ubuntu.com/manpages/plucky/man1/nvidia-smi.1.html): a GPU is idle when every GPU reads below it.
Under MIG, ``utilization.gpu`` is not reported (``[N/A]``) and a GPU may be split into slices used separately
(https://docs.nvidia.com/datacenter/tesla/mig-user-guide/). A GPU whose ``mig.mode.current`` reads Enabled is
judged slice by slice (``gpu_query.mig_busy``): busy while any of its slices (``nvidia-smi mig -lgi``) has a process
(``nvidia-smi``'s Processes table, with each process's GPU instance); when the processes cannot be read, it counts as
busy, never as idle. A GPU that reports no utilisation and no MIG mode (an older driver, ``[Not Supported]``) is
judged by its memory: busy while more than ``gpu_query.MIG_BUSY_MEMORY_PERCENT`` (5 %) of it is in use, the kit's
own threshold (no NVIDIA document gives one).

``IdleRule.observe`` takes what was measured and the monotonic time, and answers what it concluded; the watchdog
measures and acts. Everything it reads is passed in, so a test drives it with numbers."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

try:
    from instance import bounds, gpu_query
    from instance.instance_state import number as _number
except ImportError:  # on the instance: the other tools are installed next to this file
    import bounds  # type: ignore[no-redef]
    import gpu_query  # type: ignore[no-redef]
    from instance_state import number as _number  # type: ignore[no-redef]

SSH_SESSION = re.compile(r"^(sshd|sshd-session): \S+@")


@dataclass(frozen=True)
class Verdict:
    event: str
    """``not-idle``, ``idle``, ``gpu-unreadable``, ``setup-running`` or ``idle-shutdown``."""
    reason: str

    @property
    def shutdown(self) -> bool:
        return self.event == "idle-shutdown"


# --- the rule -------------------------------------------------------------------------------------------------


class IdleRule:
    def __init__(self, settings: dict[str, Any], started: float, setup_done: Callable[[], bool] | None = None,
                 progress: Callable[[], dict[str, Any]] | None = None, wall: Callable[[], float] | None = None,
                 running: Callable[[int], bool] | None = None, boot: float | None = None):
        """``setup_done``: whether the setup reported its end; ``progress``: this boot's progress record (its
        ``bootstrap_started`` time and ``bootstrap_pid``, and the ``bootstrap`` end), with ``wall`` the clock its
        times are on and ``running(pid)`` whether that bootstrap still runs; ``boot``: when this boot began, on
        ``wall``."""
        self.s = settings
        self.boot = boot
        self.progress, self.wall, self.running = progress, wall, running
        self.cpu = settings.get("idle_source") == "cpu"
        self.what = "CPU" if self.cpu else "GPU"
        self.threshold = float(settings["idle_cpu_percent" if self.cpu else "idle_gpu_percent"])
        self.limit = 60 * float(settings["idle_minutes"])
        self.grace = bounds.value("gpu_grace", settings)
        self.setup_done = setup_done
        self.setup_deadline = started + bounds.value("idle_setup_wait", settings)
        self.active = setup_done is None
        self.idle_since: float | None = None
        self.unreadable_since: float | None = None
        self.last_busy = float("-inf")

    def _bootstrap_seen(self, mono: float) -> Verdict | None:
        """What this boot's progress record says beyond "finished": the bootstrap died early, or the bound counted
        from the bootstrap unit's own start (or its end, while the verification runs) has passed."""
        if self.progress is None or self.wall is None:
            return None
        seen = self.progress()
        started, ended = _number(seen.get("bootstrap_started")), _number(seen.get("bootstrap"))
        pid = seen.get("bootstrap_pid")
        if ended is None and started is not None and isinstance(pid, int) and not isinstance(pid, bool) \
                and self.running is not None and not self.running(pid):
            return Verdict("setup-ended", f"the bootstrap (pid {pid}) ended without reporting: idle time counts "
                           "from now")
        if started is None and ended is None and self.boot is not None \
                and self.wall() >= self.boot + bounds.value("bootstrap_unit", self.s):
            return Verdict("setup-overdue", "no bootstrap recorded its start within the bootstrap's own bound "
                           f"({bounds.value('bootstrap_unit', self.s) / 60:.0f} min after the boot): idle time counts "
                           "from now")
        due = self.setup_deadline_wall(started, ended)
        if due is not None and self.wall() >= due:
            return Verdict("setup-overdue", "the bootstrap or the verification has not reported within its bound "
                           "from the bootstrap unit's start: idle time counts from now")
        return None

    def setup_deadline_wall(self, started: float | None, ended: float | None) -> float | None:
        """When waiting for the setup ends, on the wall clock: the bootstrap unit's own start plus
        ``idle_setup_wait``; after the bootstrap's end, that end plus the run unit's bound."""
        found = []
        if started is not None:
            found.append(started + bounds.value("idle_setup_wait", self.s))
        if ended is not None:
            found.append(ended + bounds.value("run_unit", self.s))
        return min(found) if found else None

    def _setup_over(self, mono: float) -> Verdict | None:
        if self.active:
            return None
        assert self.setup_done is not None
        if self.setup_done():
            self.active = True
            return None
        seen = self._bootstrap_seen(mono)
        if seen is not None:
            self.active = True
            return seen
        if mono >= self.setup_deadline:
            self.active = True
            return Verdict("setup-overdue", "the bootstrap or the verification has not reported within "
                           f"{bounds.value('idle_setup_wait', self.s) / 60:.0f} min: idle time counts from now")
        return Verdict("setup-running", "the bootstrap or the verification is still running: idle time not counted")

    def observe(self, mono: float, utilization: list[float] | None, error: str | None, busy: str | None,
                memory: str = "") -> list[Verdict]:
        """What was measured at ``mono`` (utilisation per GPU, or why it could not be read; why the instance is
        busy anyway) -> the verdicts, the last one deciding (``idle-shutdown`` ends the instance)."""
        waiting = self._setup_over(mono)
        if waiting is not None and waiting.event == "setup-running":
            self.idle_since = self.unreadable_since = None
            return [waiting]
        found = self._observe(mono, utilization, error, busy, memory)
        return [waiting, *found] if waiting is not None else found

    def _observe(self, mono: float, utilization: list[float] | None, error: str | None, busy: str | None,
                 memory: str) -> list[Verdict]:
        if error is not None:
            if self.unreadable_since is None:
                self.unreadable_since = mono
                self.idle_since = None
            unreadable_for = mono - self.unreadable_since
            if unreadable_for < self.grace:
                return [Verdict("gpu-unreadable", f"{error}; not counted as idle for the first {self.grace / 60:g} "
                                f"min ({unreadable_for / 60:.1f} min so far)")]
            top, since = 0.0, max(self.unreadable_since, self.last_busy)
            notes = [Verdict("gpu-unreadable", f"{error} for {unreadable_for / 60:.1f} min: counted as idle")]
            memory = "unknown"
        else:
            self.unreadable_since = None
            top, since, notes = max(utilization or [0.0]), mono, []
        if top >= self.threshold:
            self.idle_since = None
            return [*notes, Verdict("not-idle", f"{self.what} utilization {top:g}% >= {self.threshold:g}%"
                                    + (f" (memory used {memory})" if memory else ""))]
        if busy:
            self.idle_since, self.last_busy = None, mono
            return [*notes, Verdict("not-idle", f"{self.what} utilization {top:g}% < {self.threshold:g}% but {busy}")]
        if self.idle_since is None:
            self.idle_since = since
        idle_for = mono - self.idle_since
        if idle_for >= self.limit:
            return [*notes, Verdict("idle-shutdown", f"{self.what} utilization below {self.threshold:g}% (or unreadable) for "
                           f"{idle_for / 60:.1f} min (limit {self.s['idle_minutes']} min), no busy marker, no live "
                           "SSH session")]
        return [*notes, Verdict("idle", f"{self.what} utilization {top:g}% < {self.threshold:g}% for "
                                f"{idle_for / 60:.1f} of {self.s['idle_minutes']} min")]


def process_running(proc_root: str, pid: int, name: str = "instance_setup") -> bool:
    """Whether ``pid`` is a running process whose command line names ``name`` (a reused pid is not the bootstrap)."""
    try:
        with open(os.path.join(proc_root, str(pid), "cmdline"), "rb") as fh:
            return name.encode() in fh.read(64 * 1024)
    except OSError:
        return False


# --- what the rule looks at -----------------------------------------------------------------------------------


class CpuMeter:
    """The busy share of all CPUs since the last look (``/proc/stat``'s first line; idle and iowait count as idle)."""

    def __init__(self, proc_root: str):
        self.proc_root = proc_root
        self.sample: tuple[float, float] | None = None

    def read(self) -> tuple[list[float], str | None]:
        try:
            with open(os.path.join(self.proc_root, "stat"), encoding="utf-8") as fh:
                fields = [float(x) for x in fh.readline().split()[1:]]
        except (OSError, ValueError) as exc:
            return [], f"cannot read the CPU counters: {exc}"
        if len(fields) < 4:
            return [], "cannot read the CPU counters: /proc/stat has too few fields"
        idle, total = fields[3] + (fields[4] if len(fields) > 4 else 0.0), sum(fields[:8])
        last_idle, last_total = self.sample or (0.0, 0.0)
        self.sample = (idle, total)
        spent = total - last_total
        if spent <= 0:
            return [0.0], None
        return [round(100.0 * (1 - (idle - last_idle) / spent), 1)], None


Run = Callable[[list[str]], tuple[int | None, str]]
"""``nvidia-smi`` with these arguments, bounded: (exit status or None on timeout, output)."""


def query_gpus(run: Run) -> tuple[int | None, str]:
    """The watchdog's GPU query, bounded by ``run``: ``gpu_query.IDLE_QUERY``; when nvidia-smi refuses it (a
    non-zero exit, or an invalid field named in its output: a driver that does not know ``mig.mode.current``),
    ``gpu_query.QUERY``, judged by utilisation and memory as before MIG was read. A query that timed out is not
    repeated (the GPU is unreadable this time)."""
    code, out = run(gpu_query.IDLE_QUERY)
    if code is None or (code == 0 and not gpu_query.INVALID_FIELD.search(out)):
        return code, out
    return run(gpu_query.QUERY)


def gpu_reading(code: int | None, out: str, run: Run | None = None) -> tuple[list[float], str | None, str]:
    """Per GPU the utilisation the rule compares (``gpu_query``), or why the GPU could not be read; the memory
    used (and, for a MIG GPU, what its slices run), as text for the log. A GPU in MIG mode counts 100 while any
    of its slices has a process and 0 when none has (``mig_reading``), never by its memory."""
    if code is None:
        return [], "nvidia-smi did not answer within 30 s", ""
    if code == 127 and out.startswith("could not run"):
        return [], f"nvidia-smi is missing ({out})", ""
    if code != 0:
        return [], f"nvidia-smi exited {code}: {out[-200:]}", ""
    gpus = gpu_query.parse(out)
    if not gpus:
        return [], gpu_query.problem(out, gpus), ""
    memory = ", ".join("?" if g.memory_used is None else f"{g.memory_used:g} MiB" for g in gpus)
    utilization = [g.effective_utilization() for g in gpus]
    if any(g.mig for g in gpus):
        notes = mig_reading(gpus, utilization, run)
        memory = "; ".join([memory, *notes])
    return utilization, None, memory


def mig_reading(gpus: list[gpu_query.Gpu], utilization: list[float], run: Run | None) -> list[str]:
    """Judge each MIG GPU by its slices, in place in ``utilization``: 100 when a slice has a process, 0 when none
    has. When the processes cannot be read, the MIG GPU counts as busy (never idle on what was not seen; the
    deadline still ends the instance)."""
    table = None
    why = "no way to run nvidia-smi"
    found_slices: list[gpu_query.Slice] = []
    if run is not None:
        code, text = run(gpu_query.PROCESSES)
        table = gpu_query.processes(text) if code == 0 else None
        why = f"nvidia-smi exited {code}" if code not in (0, None) else (
            "nvidia-smi did not answer" if code is None else "no Processes table in nvidia-smi's output")
        code, text = run(gpu_query.MIG_SLICES)
        found_slices = gpu_query.slices(text) if code == 0 else []
    notes = []
    for position, gpu in enumerate(gpus):
        if not gpu.mig:
            continue
        index = gpu.index if gpu.index is not None else position
        if table is None:
            utilization[position] = 100.0
            notes.append(f"MIG GPU {index}: its processes could not be read ({why}): counted as busy")
            continue
        busy, note = gpu_query.mig_busy(index, found_slices, table)
        utilization[position] = 100.0 if busy else 0.0
        notes.append(note)
    return notes


def login_sessions(cmdlines: list[str]) -> list[str]:
    return [c for c in cmdlines if SSH_SESSION.match(c) or "ssm-session-worker" in c]


def busy_marker(marker: str | None, max_age_minutes: float, now: float) -> tuple[str | None, str | None]:
    """(why the marker makes the instance busy, a note that it is stale)."""
    if not marker or not os.path.exists(marker):
        return None, None
    max_age = 60 * float(max_age_minutes)
    try:
        age = max(0.0, now - os.stat(marker).st_mtime)
    except OSError:
        age = 0.0
    if not max_age or age <= max_age:
        return f"busy marker {marker} is present", None
    return None, f"{marker} last touched {age / 60:.0f} min ago (> {max_age / 60:.0f} min): ignored"
