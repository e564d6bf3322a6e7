"""Every time bound on the instance, in one table (standard library only).

Each row is a bound in seconds: a fixed one, or one read from the settings (with the default the tools use when
the setting is absent). A bound that contains others (a systemd unit's start timeout, the bootstrap's own work) is
written as the value systemd is given at the defaults and lists what runs inside it, each as often as it can run
(``counts``: the bootstrap's nvidia-smi calls, its commands without a bound of their own); ``outer_covers_inner``
checks that the written value covers their sum plus the row's margin, and tests/instance/test_bounds.py counts the
calls in the bootstrap's code against the rows. A setting that lengthens (or shortens) an inner bound lengthens
(or shortens) the outer one by as much: the systemd unit texts take their timeouts from here
(``components/userdata``), so a longer stage lengthens the unit that runs it instead of being killed.

The tools read the same rows (``value(name, settings)``) where they wait, so the table is what runs."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Bound:
    seconds: float
    """The bound, or its default when ``setting`` is absent from the settings."""
    what: str
    setting: str | None = None
    scale: float = 1.0
    """Seconds per unit of the setting (60 for a setting in minutes)."""
    inner: tuple[str, ...] = ()
    """The bounds this one must cover (their sum, each times its count, plus ``margin``)."""
    margin: float = 0.0
    counts: tuple[tuple[str, int], ...] = ()
    """How often an inner bound runs inside this one, when more than once."""

    def parts(self) -> list[tuple[str, int]]:
        """Each inner bound with how often it runs inside this one."""
        times = dict(self.counts)
        return [(name, times.get(name, 1)) for name in self.inner]


HOUR = 3600.0
STAGE_SOURCE_DEFAULT = 6 * HOUR
"""A staging source's own deadline when the settings give none (the bucket CLI's bound before deadlines existed)."""
STAGE_DEFAULT = 8 * HOUR
"""The whole stage's deadline when the settings give none (``staging_deadline_seconds``)."""
NOTICE_ATTEMPTS = 3
"""How often a spot notice is tried to each peer (a count; each try is bounded by ``notice_connect``)."""
MAX_PAGES = 10_000
"""The most pages one listing may take (a hub's file tree while staging, a bucket prefix in ``gpulease pull``)."""

TABLE: dict[str, Bound] = {
    # -- reads and calls every tool makes --
    "metadata_read": Bound(3, "one metadata read (token and value), total", "metadata_timeout_seconds"),
    "gpu_query": Bound(30, "one nvidia-smi query of the watchdog's heartbeat"),
    "gpu_query_verify": Bound(15, "one nvidia-smi query of the verification"),
    "nvidia_smi_setup": Bound(60, "one nvidia-smi call of the bootstrap (-L, the query, the header)"),
    "hook": Bound(120, "a checkpoint or warn hook", "hook_timeout_seconds"),
    "shutdown_command": Bound(60, "the shutdown command"),
    "ecs_call": Bound(15, "one ECS API call that acts (release, stop)"),
    "ecs_read": Bound(10, "one ECS API read (DescribeInstances: the deadline tag, the spend estimate's tags)"),
    "bucket_copy": Bound(120, "one copy to the bucket with the cloud CLI (a record, a marker)"),
    "cluster_notice_copy": Bound(60, "a cluster node's copy of a spot notice to its peers"),
    "kill_reap": Bound(5, "waiting for a killed process group's leader to be reaped"),
    "setup_command": Bound(120, "a bootstrap command without a bound of its own"),
    "as_user": Bound(30, "a tmux command run as the login user"),
    "manifest_probe": Bound(15, "one probe of the run manifest (git, pip, nvidia-smi)"),
    "rebalance_join": Bound(15, "the wait for a rebalance checkpoint cut short by the final sequence"),
    "fstab_device_timeout": Bound(30, "x-systemd.device-timeout of the data disk's fstab line (nofail)"),
    # -- fetch_tools.py, which runs before this table is on the instance, keeps these values as literals --
    "tools_read": Bound(10, "fetch_tools: one metadata or credentials read"),
    "tools_download": Bound(60, "fetch_tools: downloading the tools object"),
    "watchdog_fetch": Bound(60, "the watchdog unit's wait for the tools object (ExecStartPre)"),
    # -- the bootstrap's steps --
    "device_wait": Bound(900, "the wait for the data disk to be attached", "device_wait_seconds"),
    "mkfs": Bound(1800, "formatting a blank data disk"),
    "udev_settle": Bound(60, "udevadm settle after formatting"),
    "mount": Bound(300, "mounting the data disk"),
    "apt_update": Bound(600, "apt-get update for the driver", "apt_update_timeout_seconds"),
    "apt_install": Bound(1500, "apt-get install of the driver packages", "apt_install_timeout_seconds"),
    "modprobe": Bound(120, "modprobe nvidia and nvidia-smi after the install"),
    "cli_install": Bound(900, "installing the bucket CLI where the image has none (ossutil), before staging"),
    "secret_read": Bound(120, "reading the hub token's secret (Secrets Manager through the CLI, or KMS)"),
    "staging_read": Bound(60, "one read of a staging download", "staging_read_timeout_seconds"),
    "stage": Bound(STAGE_DEFAULT, "staging the data sources (the whole stage's deadline)",
                   "staging_deadline_seconds"),
    "torch_probe": Bound(300, "torch.cuda.is_available() in one Python"),
    "torch_probes": Bound(900, "the torch probe in each Python of torch_pythons (3 by default)",
                          inner=("torch_probe",), counts=(("torch_probe", 3),)),
    "bucket_check": Bound(120, "listing the checkpoint bucket with the role"),
    "peer_wait": Bound(300, "a cluster node's wait for its peers", "peer_wait_seconds"),
    "publish": Bound(240, "copying ready.json and the ready record to the bucket (two copies of 120 s)",
                     inner=("bucket_copy",), counts=(("bucket_copy", 2),)),
    "fetch_tools": Bound(900, "the bootstrap unit's wait for the tools object (ExecStartPre)"),
    "bootstrap_unit": Bound(
        40260, "gpulease-bootstrap.service TimeoutStartSec (11 h 11 min at the defaults)",
        inner=("fetch_tools", "device_wait", "mkfs", "udev_settle", "mount", "apt_update", "apt_install", "modprobe",
               "nvidia_smi_setup", "cli_install", "secret_read", "stage", "torch_probes", "bucket_check", "peer_wait",
               "publish", "setup_command"),
        margin=600,
        # nvidia-smi: -L before and after a driver install, the query, the header; commands without a bound of
        # their own: findmnt (the root's disk), blkid, file and lsblk (the evidence), findmnt, blkid and lsblk (the
        # filesystem's device), blkid (the UUID); the bucket CLI's install before staging, and again before the
        # bucket check when the first one failed.
        counts=(("nvidia_smi_setup", 4), ("setup_command", 8), ("cli_install", 2)),
    ),
    # -- the run unit --
    "verify": Bound(30 * 60, "the verification, both runs", "verify_max_minutes", scale=60),
    "tmux_install": Bound(600, "installing tmux", "tmux_install_timeout_seconds"),
    "job_start": Bound(120, "writing the manifest and starting the tmux session"),
    "run_unit": Bound(3960, "gpulease-run.service TimeoutStartSec (66 min at the defaults)",
                      inner=("fetch_tools", "verify", "tmux_install", "job_start", "publish"), margin=300),
    # -- the watchdog --
    "gpu_grace": Bound(600, "an unreadable GPU is not idle for this long", "gpu_grace_minutes", scale=60),
    "idle_setup_wait": Bound(44220, "idle time counts from the end of the bootstrap and the verification, or from "
                             "this long after the bootstrap unit started when they never report",
                             inner=("bootstrap_unit", "run_unit")),
    "idle_sync_window": Bound(1800, "an idle shutdown's final sync"),
    "sync_min": Bound(600, "a periodic sync is killed after max(this, 2 x the interval)"),
    "heartbeat_copy": Bound(600, "a heartbeat copy (two beats)"),
    "log_copy": Bound(120, "one log file's copy to the bucket (log_upload.py)", "log_upload_timeout_seconds"),
    "log_flush": Bound(60, "the final sequence's last copy of the log files, every file together (log_upload.py "
                       "flush), after the final sync and before the shutdown", "log_flush_seconds"),
    "watchdog_stop": Bound(90, "gpulease-watchdog.service TimeoutStopSec: on SIGTERM, the power-off check and the "
                           "own spot request's cancel (spot recovery, AWS), then the last sync",
                           inner=("final_sync_on_stop", "system_jobs_query", "spot_cancel_on_stop"),
                           margin=10),
    "final_sync_on_stop": Bound(60, "the final sync when the service is stopped"),
    "job_agent_stop": Bound(90, "gpulease-job-agent.service TimeoutStopSec: the job stopped and reported"),
    "notice_minimum_aws": Bound(120, "an AWS spot notice whose time cannot be read"),
    "notice_minimum_alicloud": Bound(300, "an Alibaba Cloud spot notice whose time cannot be read"),
    # -- spot recovery (spot_recover) --
    "aws_call": Bound(30, "one AWS CLI call of the watchdog (describe-instances, cancel-spot-instance-requests)"),
    "spot_cancel": Bound(90, "finding and cancelling this instance's own spot request before its own end, retries "
                         "included", "spot_cancel_seconds"),
    "manifest_update": Bound(30, "copying the run manifest to the bucket after recording the spot request's end"),
    "spot_cancel_retry": Bound(300, "the pause before the own spot request's cancel is tried again after an end "
                               "before the deadline (idle, budget) that could not cancel it (no shutdown meanwhile)"),
    "spot_schedule_precision": Bound(60, "EventBridge Scheduler calls a one-time schedule's target within this long "
                                     "after its time: at the deadline, after an own cancel that failed, the watchdog "
                                     "waits this long past the stack's cancelling schedule before reading the request"),
    "spot_schedule_lead": Bound(120, "the stack's schedule cancels the persistent request this long before the "
                                "deadline (components/aws/lifetime.py CANCEL_LEAD): the wait for it to have fired and "
                                "the one read of the request's state fit before the terminating schedule's time",
                                inner=("spot_schedule_precision", "aws_call"), margin=10),
    "system_jobs_query": Bound(5, "systemctl list-jobs on SIGTERM: is the system powering off or rebooting?",
                               "system_jobs_seconds"),
    "spot_cancel_on_stop": Bound(15, "cancelling the own spot request on a power-off from inside, retries included "
                                 "(recorded in the watchdog's state; the run manifest's copy is left out for time)"),
    "spot_stop_wait": Bound(600, "after a spot notice's window closes, the wait for the cloud's stop before the "
                            "watchdog carries on as on a normal boot"),
    # -- pauses, intervals and slack of the tools' own loops --
    "job_stop_wait": Bound(10, "the job agent's wait for its job after SIGTERM when the agent itself is stopping "
                           "(at most kill_grace_seconds), before SIGKILL"),
    "notice_connect": Bound(2, "one connection of a cluster notice or hello (connect, send, the answer)"),
    "notice_pause": Bound(0.5, "the pause between two tries of a spot notice to one peer"),
    "thread_join_slack": Bound(1, "added to a worker thread's join past its own deadline (it ends by then)"),
    "apt_lock": Bound(300, "apt's own wait for the dpkg lock (DPkg::Lock::Timeout) before the bootstrap tries again"),
    "device_poll": Bound(2, "the pause between two looks for the data disk"),
    "metadata_token_ttl": Bound(21600, "the metadata token's lifetime asked for (the longest either cloud issues)"),
    "credentials_refresh_lead": Bound(300, "role credentials are read again this long before they expire"),
    "launch_monitor": Bound(5, "how often gpulease-launch looks at the job it started"),
    "process_poll": Bound(0.02, "the pause between two looks for a command's processes while ending them"),
    "spot_cancel_pause": Bound(5, "the pause between two tries of the own spot request's cancel"),
    "staging_progress": Bound(30, "how often a download's progress is logged"),
    "staging_poll": Bound(1, "the longest a staging wait sleeps before it looks at its deadline again"),
    "staging_worker_poll": Bound(0.05, "the pause of a download worker waiting for a piece whose retry is due"),
    "shutdown_reserve": Bound(10, "kept free at the end of a spot notice's window for the shutdown itself"),
    "alive_every": Bound(60, "how often this boot's running time is written (the spend estimate)"),
    "log_flush_poll": Bound(0.02, "the pause between two looks at the final sequence's log copy (log_upload.py flush)"),
    "instance_id_reclaim": Bound(60, "how often the watchdog asks again for an instance id it could not read at start"),
    "signal_poll": Bound(0.05, "the pause between two looks for a signalled checkpoint process's exit"),
    # -- the operator side, bounded the same way --
    "pull": Bound(STAGE_DEFAULT, "gpulease pull, the whole pull (--deadline-seconds), as long as a stage"),
}
DEFAULT_TORCH_PYTHONS = 3
"""How many Pythons the bootstrap probes for torch when the settings do not list them (``torch_pythons``)."""


def inside(name: str, settings: Mapping[str, Any] | None = None) -> float:
    """The sum of what runs inside a composed bound (each inner bound times its count), without its margin."""
    return sum(count * value(inner, settings) for inner, count in TABLE[name].parts())


def value(name: str, settings: Mapping[str, Any] | None = None) -> float:
    """The bound in seconds: the setting when given (a finite number above 0), else the default; a composed bound
    is its written value, lengthened (or shortened) by as much as the settings lengthen (shorten) what runs inside
    it."""
    row = TABLE[name]
    if name == "torch_probes":
        pythons = (settings or {}).get("torch_pythons")
        count = len(pythons) if isinstance(pythons, list) else DEFAULT_TORCH_PYTHONS
        return count * value("torch_probe", settings)
    if row.inner:
        return row.seconds + (inside(name, settings) - inside(name) if settings else 0.0)
    given = (settings or {}).get(row.setting) if row.setting else None
    if name == "verify" and settings is not None and isinstance(settings.get("verify"), Mapping):
        given = settings["verify"].get("max_minutes")
    if isinstance(given, (int, float)) and not isinstance(given, bool) and 0 < given < 1e9:
        return float(given) * row.scale
    return row.seconds


def outer_covers_inner(settings: Mapping[str, Any] | None = None) -> list[str]:
    """Every bound that does not cover what runs inside it, each inner bound times its count, plus its margin (an
    empty list when the table holds)."""
    wrong = []
    for name, row in TABLE.items():
        if not row.inner:
            continue
        need = inside(name, settings) + row.margin
        have = value(name, settings)
        if have < need:
            terms = " + ".join(f"{count} x {inner}" if count > 1 else inner for inner, count in row.parts())
            wrong.append(f"{name} ({have:.0f} s) < {terms} + {row.margin:g} margin ({need:.0f} s)")
    return wrong


def systemd_seconds(name: str, settings: Mapping[str, Any] | None = None) -> int:
    """A unit's timeout as whole seconds, for ``TimeoutStartSec=``."""
    return int(-(-value(name, settings) // 1))


class PageGuard:
    """One listing's pages: a page already read (its URL or continuation token) means the pagination loops, and more
    than ``max_pages`` pages is refused. ``problem(token)`` before each page read: None, or why not to read it;
    ``key``: what makes two pages the same when it is not the token's text (a URL's request as sent)."""

    def __init__(self, what: str, max_pages: int = MAX_PAGES) -> None:
        self.what, self.max_pages = what, max_pages
        self.seen: set[str] = set()

    @property
    def pages(self) -> int:
        return len(self.seen)

    def problem(self, token: str, key: str | None = None) -> str | None:
        key = token if key is None else key
        if key in self.seen:
            return f"{self.what}: the listing's next page {token} was already read (the pagination loops)"
        if len(self.seen) >= self.max_pages:
            return f"{self.what}: the listing has more than {self.max_pages} pages; refusing to read on"
        self.seen.add(key)
        return None


class ShutAtDeadline:
    """Ends any read on a connection at a point in time: a per-read socket timeout alone never fires while a server
    trickles its answer (headers or body) a byte at a time, so a timer shuts the socket down at ``seconds`` from
    now, which ends the read in progress with an error. ``expired`` says whether it fired; ``with`` cancels it.
    The one mechanism for every instance-side request (the metadata service, the ECS API, staging's hubs)."""

    def __init__(self, conn: Any, seconds: float) -> None:
        self.conn = conn
        self.expired = threading.Event()
        self.timer = threading.Timer(max(0.01, seconds), self._shut)
        self.timer.daemon = True

    def _shut(self) -> None:
        self.expired.set()
        sock = getattr(self.conn, "sock", None)
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def __enter__(self) -> ShutAtDeadline:
        self.timer.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.timer.cancel()
