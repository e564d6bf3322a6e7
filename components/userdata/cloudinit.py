"""cloud-init user-data from the settings: the settings file, the tools' loader, their systemd units, packed and
checked against each cloud's limit."""

from __future__ import annotations

import base64
import gzip
from functools import lru_cache

import yaml

from components.userdata.run_settings import RUN_UNIT, RUN_UNIT_TEXT
from components.userdata.settings import (
    INSTALL_DIR,
    JOB_AGENT_UNIT,
    SETTINGS_PATH,
    SETUP_UNIT,
    WATCHDOG_UNIT,
    BootstrapSettings,
    settings_json,
)
from components.userdata.tools import FETCH_SCRIPT, shipped_source
from gpulease.core.errors import UserError
from instance import bounds

USER_DATA_LIMITS = {"aws": 16 * 1024, "alicloud": 32 * 1024}
"""Largest raw user-data each cloud accepts, in bytes (before base64): AWS RunInstances "user data is limited to
16 KB" (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/user-data.html); Alibaba Cloud RunInstances UserData
"cannot exceed 32 KB before encoding" (https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-runinstances)."""
USER_DATA_MARGIN = 0.25
"""Every rendered user-data stays this fraction under its cloud's limit, so that a longer hook never breaks a stack."""


SETUP_UNIT_TEXT = f"""[Unit]
Description=gpulease bootstrap: mount the data disk, install the NVIDIA driver where the image has none, check the instance is ready
Wants=network-online.target
After=network-online.target

[Service]
Type=oneshot
RemainAfterExit=yes
{{fetch}}ExecStart=/usr/bin/python3 {INSTALL_DIR}/instance_setup.py
StandardOutput=journal+console
# The wait for the data disk, the driver install (apt, a DKMS build) and the stage are each bounded inside; this
# covers their sum (instance/bounds.py: bootstrap_unit), so a long stage is never killed by systemd.
TimeoutStartSec={{timeout}}

[Install]
WantedBy=multi-user.target
"""

WATCHDOG_UNIT_TEXT = f"""[Unit]
Description=gpulease watchdog: deadline, idle shutdown, spot notice, checkpoint sync
Wants=network-online.target
After=network-online.target
# Never give up restarting: this service is what ends billing when nobody is watching.
StartLimitIntervalSec=0

[Service]
{{fetch}}ExecStart=/usr/bin/python3 {INSTALL_DIR}/watchdog.py
Restart=always
RestartSec=5
TimeoutStopSec={bounds.systemd_seconds('watchdog_stop')}

[Install]
WantedBy=multi-user.target
"""

# KillMode=mixed: SIGTERM reaches the agent alone, which stops the job and reports it; SIGKILL then ends the rest.
JOB_AGENT_UNIT_TEXT = f"""[Unit]
Description=gpulease job agent: CI jobs sent through the bucket
Wants=network-online.target {SETUP_UNIT}
After=network-online.target {SETUP_UNIT}
StartLimitIntervalSec=0

[Service]
{{fetch}}ExecStart=/usr/bin/python3 {INSTALL_DIR}/job_agent.py
Restart=always
RestartSec=5
KillMode=mixed
TimeoutStopSec={bounds.systemd_seconds('job_agent_stop')}

[Install]
WantedBy=multi-user.target
"""


class _Literal(str):
    """A string dumped as a YAML literal block, so the shipped files stay readable in the user-data."""


def _literal(dumper: yaml.SafeDumper, value: _Literal) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", str(value), style="|")


# libyaml's emitter when PyYAML was built with it (the pinned wheels are): the same YAML as the pure-Python
# SafeDumper (pinned by tests/components/test_userdata_dumper.py), about twenty times faster, which a sweep of a
# hundred runs (each rendering its user-data twice) notices.
class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    pass


_Dumper.add_representer(_Literal, _literal)


def _fetch_line(wait: int) -> str:
    return f"ExecStartPre=/usr/bin/python3 {INSTALL_DIR}/fetch_tools.py --wait {wait}\n"


def unit_bound_settings(settings: BootstrapSettings) -> dict:
    """What the units' timeouts depend on: the stage's own deadline (``staging_deadline_seconds``, set with the
    staging settings; the per-source default when absent) and the verification's ``max_minutes``."""
    found: dict = {}
    stage = getattr(settings, "staging_deadline_seconds", None)
    if stage is not None:
        found["staging_deadline_seconds"] = stage
    if settings.verify is not None:
        found["verify"] = {"max_minutes": settings.verify.max_minutes}
    return found


def cloud_config(settings: BootstrapSettings) -> dict:
    """The cloud-config document: the settings, the tools (or their loader), their units, and the commands that
    start them."""

    def file(path: str, content: str, mode: str) -> dict:
        return {"path": path, "permissions": mode, "owner": "root:root", "content": _Literal(content)}

    # The watchdog retries the fetch through Restart=always; the bootstrap waits for it within its own timeout.
    watchdog_fetch, setup_fetch = _fetch_line(bounds.systemd_seconds("watchdog_fetch")), _fetch_line(
        bounds.systemd_seconds("fetch_tools"))
    bound_settings = unit_bound_settings(settings)
    tools = [file(f"{INSTALL_DIR}/fetch_tools.py", shipped_source(FETCH_SCRIPT), "0755")]
    config = {
        "write_files": [
            file(SETTINGS_PATH, settings_json(settings) + "\n", "0644"),
            *tools,
            file(f"/etc/systemd/system/{SETUP_UNIT}",
                 SETUP_UNIT_TEXT.format(fetch=setup_fetch, timeout=bounds.systemd_seconds("bootstrap_unit", bound_settings)),
                 "0644"),
            file(f"/etc/systemd/system/{WATCHDOG_UNIT}", WATCHDOG_UNIT_TEXT.format(fetch=watchdog_fetch), "0644"),
        ],
        # --no-block: the bootstrap may wait minutes for the data disk to be attached, and cloud-init must not
        # wait with it. The watchdog starts at once and independently: the deadline holds even without a disk.
        "runcmd": [
            ["systemctl", "daemon-reload"],
            ["systemctl", "enable", "--now", "--no-block", WATCHDOG_UNIT],
            ["systemctl", "enable", "--now", "--no-block", SETUP_UNIT],
        ],
    }
    if settings.job_agent is None:
        # An image baked from a CI stack's instance carries the agent's unit, enabled, with Restart=always: on an
        # instance without a job agent it would start, find no settings for it and exit, every 5 s, for good.
        config["runcmd"].insert(0, ["sh", "-c", f"systemctl disable --now {JOB_AGENT_UNIT} 2>/dev/null; "
                                                f"rm -f /etc/systemd/system/{JOB_AGENT_UNIT}; true"])
    else:
        config["write_files"].append(
            file(f"/etc/systemd/system/{JOB_AGENT_UNIT}", JOB_AGENT_UNIT_TEXT.format(fetch=watchdog_fetch), "0644")
        )
        config["runcmd"].append(["systemctl", "enable", "--now", "--no-block", JOB_AGENT_UNIT])
    if settings.verify is not None or settings.job is not None:  # the run unit: verify, then the job in tmux
        run_unit = RUN_UNIT_TEXT.format(setup_unit=SETUP_UNIT, fetch=watchdog_fetch, install_dir=INSTALL_DIR,
                                        timeout=bounds.systemd_seconds("run_unit", bound_settings))
        config["write_files"].append(file(f"/etc/systemd/system/{RUN_UNIT}", run_unit, "0644"))
        config["runcmd"].append(["systemctl", "enable", "--now", "--no-block", RUN_UNIT])
    return config


def _dump(value: object) -> str:
    return yaml.dump(value, Dumper=_Dumper, sort_keys=False, width=1000, allow_unicode=False)


@lru_cache(maxsize=64)
def _dump_file_entry(path: str, permissions: str, owner: str, content: str) -> str:
    # The tools and units are the same for every experiment; emitting their YAML once keeps a 100-run sweep fast.
    return _dump([{"path": path, "permissions": permissions, "owner": owner, "content": _Literal(content)}])


def render_user_data(settings: BootstrapSettings) -> str:
    """cloud-init user-data (``#cloud-config``) as text: the document ``cloud_config`` describes, emitted one
    ``write_files`` entry at a time (the same YAML as dumping it whole)."""
    config = cloud_config(settings)
    entries = "".join(
        _dump_file_entry(f["path"], f["permissions"], f["owner"], str(f["content"])) for f in config["write_files"]
    )
    rest = {k: val for k, val in config.items() if k != "write_files"}
    return "#cloud-config\n" + "write_files:\n" + entries + _dump(rest)


class UserDataTooLargeError(UserError):
    """The rendered user-data would not stay ``USER_DATA_MARGIN`` under the cloud's limit."""


def pack_user_data(settings: BootstrapSettings) -> bytes:
    """The user-data as the cloud receives it (before base64): gzipped, refused with ``UserDataTooLargeError`` when it does not stay ``USER_DATA_MARGIN`` under that limit."""
    # cloud-init unpacks gzipped user-data itself; no timestamp in the header, so the bytes are reproducible.
    raw = gzip.compress(render_user_data(settings).encode(), compresslevel=9, mtime=0)
    limit = USER_DATA_LIMITS[settings.cloud]
    budget = int(limit * (1 - USER_DATA_MARGIN))
    if len(raw) > budget:
        raise UserDataTooLargeError(
            f"stack {settings.stack!r}, experiment {settings.experiment!r}: the instance's user-data would be "
            f"{len(raw)} bytes, over the {budget} bytes gpulease allows on {settings.cloud} ({limit} accepted, "
            f"{USER_DATA_MARGIN:.0%} kept free); shorten watchdog.warnHook, checkpoints.hook or checkpoints.process"
        )
    return raw


def render_user_data_base64(settings: BootstrapSettings) -> str:
    """The user-data base64-encoded (see ``pack_user_data``).

    The gzip header carries no timestamp, so the same settings always give the same value and an unchanged
    experiment never replaces its instance."""
    return base64.b64encode(pack_user_data(settings)).decode()


def decode_user_data(encoded: str) -> str:
    """The user-data text from its base64 form, gzipped or not (the inverse of ``render_user_data_base64``)."""
    raw = base64.b64decode(encoded)
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return raw.decode()

