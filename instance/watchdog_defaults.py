"""The watchdog's settings as defaulted, and the time bounds its parts share (standard library only)."""

from __future__ import annotations

import logging
from typing import Any

try:
    from instance import bounds, spot_rule
    from instance import cloud_access as ca
except ImportError:  # on the instance: the other tools are installed next to this file
    import bounds  # type: ignore[no-redef]
    import cloud_access as ca  # type: ignore[no-redef]
    import spot_rule  # type: ignore[no-redef]

SETTINGS_PATH = "/etc/gpulease/settings.json"

DEFAULTS: dict[str, Any] = {
    "cloud": "aws",
    "region": "",
    "market": "spot",
    "mount_point": "/data",
    "max_runtime_hours": 8,
    "deadline_tag": "gpulease:expires-at",
    "boot_time": None,
    "state_dir": "/var/lib/gpulease",
    "idle_minutes": 30,
    "idle_gpu_percent": 5,
    "idle_source": "gpu",
    "idle_cpu_percent": 10,
    "idle_check_seconds": 60,
    "gpu_grace_minutes": 10,
    "warn_minutes": 15,
    "warn_hook": None,
    "final_sync_minutes": 5,
    "checkpoint_uri": None,
    "checkpoint_interval_minutes": 15,
    "sync_timeout_minutes": None,
    "checkpoint_hook": None,
    "checkpoint_signal": None,
    "checkpoint_process": None,
    "hook_timeout_seconds": 120,
    "busy_marker": "/data/busy",
    "busy_marker_max_age_minutes": 0,
    "on_rebalance": "checkpoint",
    "poll_seconds": 5,
    "metadata_url": None,
    "metadata_timeout_seconds": 2,
    "sync_command": None,
    "self_release": False,
    "deadline_api": False,
    "deadline_api_seconds": 60,
    "ecs_endpoint": None,
    "shutdown_command": ["shutdown", "-h", "now"],
    "nvidia_smi": "nvidia-smi",
    "proc_root": "/proc",
    "log_file": None,
    "exit_after_shutdown": False,
    # Spot recovery (a persistent request that stops on a reclaim): a notice saves and syncs but never shuts down;
    # the watchdog's own end cancels its own request first (AWS). Only a JSON true turns it on.
    "spot_recover": False,
    "aws_command": "aws",
    # Asked on SIGTERM with spot recovery on AWS: is the system powering off (not rebooting)? (spot_request)
    "system_jobs_command": ["systemctl", "list-jobs", "--no-legend"],
}

# A notice whose time cannot be read still leaves the documented minimum: two minutes on AWS, five on Alibaba.
NOTICE_WINDOW_SECONDS = spot_rule.NOTICE_WINDOW_SECONDS
# Kept free at the end of a window for the shutdown itself.
SHUTDOWN_RESERVE_SECONDS = bounds.value("shutdown_reserve")
# An idle shutdown has no window of its own: its final sync may retry this long (and never past the deadline).
IDLE_SYNC_WINDOW_SECONDS = bounds.value("idle_sync_window")
# How often this boot's "still running" time is written (the spend counts running time only, boot by boot).
ALIVE_EVERY_SECONDS = bounds.value("alive_every")

log = logging.getLogger("gpulease-watchdog")
stamp = ca.utc_stamp
