"""What runs on the instance, rendered into user-data from the spec.

``BootstrapSettings`` is the contract between the components and the instance: the components fill it from
the spec and the created resources, ``render_user_data`` turns it into cloud-init user-data, and the
instance-side tools (``instance_setup.py``: data disk, NVIDIA driver where the image has none, readiness;
``watchdog.py``: deadline, idle, spot notice, checkpoint sync; on CI stacks only, ``job_agent.py``: the job sent
through the bucket) read the same settings back from ``SETTINGS_PATH`` (one source of truth).

The tools are standard-library files (``cloud_access.py`` is what they share), run by systemd, so they work on
any image with python3 (the Deep Learning AMIs and Ubuntu 22.04 on both clouds). They do not fit in user-data
with room to spare (AWS takes 16 KB, Alibaba Cloud 32 KB), so they travel as one object, a JSON bundle of the
files (``tools_bundle``), under each experiment's checkpoint prefix in the bucket the stack creates (or in a
small bootstrap bucket of the stack's own when it has none); user-data carries the settings and
``fetch_tools.py``, which each service runs first: it reads the object with the instance role's credentials
(signed request, token-protected metadata) and installs it only when its SHA-256 is the one in the settings.

Every rendered user-data stays at least ``USER_DATA_MARGIN`` under its cloud's limit; ``pack_user_data`` refuses
one that would not (``components.userdata.check_user_data`` runs it before anything is registered).
"""

from __future__ import annotations

import ast
import base64
import gzip
import hashlib
import json
from functools import lru_cache
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict

from components import vocabulary as v
from components.errors import UserError
from components.spec import ExperimentSpec

SETTINGS_PATH = "/etc/gpulease/settings.json"
MOUNT_POINT = "/data"
INSTALL_DIR = "/opt/gpulease"
SETUP_UNIT = "gpulease-bootstrap.service"
WATCHDOG_UNIT = "gpulease-watchdog.service"
JOB_AGENT_UNIT = "gpulease-job-agent.service"

USER_DATA_LIMITS = {"aws": 16 * 1024, "alicloud": 32 * 1024}
"""Largest raw user-data each cloud accepts, in bytes (before base64): AWS RunInstances "user data is limited to
16 KB" (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/user-data.html); Alibaba Cloud RunInstances UserData
"cannot exceed 32 KB before encoding" (https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-runinstances)."""
USER_DATA_MARGIN = 0.25
"""Every rendered user-data stays this fraction under its cloud's limit, so that a longer hook never breaks a stack."""

METADATA_URLS = {"aws": "http://169.254.169.254", "alicloud": "http://100.100.100.200"}

_HERE = Path(__file__).resolve().parent
SETUP_SCRIPT = _HERE / "instance_setup.py"
WATCHDOG_SCRIPT = _HERE / "watchdog.py"
JOB_AGENT_SCRIPT = _HERE / "job_agent.py"
CLOUD_ACCESS_SCRIPT = _HERE / "cloud_access.py"
FETCH_SCRIPT = _HERE / "fetch_tools.py"
TOOL_SCRIPTS = (CLOUD_ACCESS_SCRIPT, SETUP_SCRIPT, WATCHDOG_SCRIPT, JOB_AGENT_SCRIPT)
TOOLS_FOLDER = "_gpulease/tools/"

# Cloud CLI commands; {src} {dst} {region} {endpoint} {oss_config} are filled in on the instance
# (cloud_access.storage_command). The instance role is the only credential: the AWS CLI reads it from IMDSv2 itself
# (told the endpoint, the tokenless fallback disabled); ossutil gets the role's STS credentials, read through the
# metadata token, in a 0600 config file (-c) and the https:// internal endpoint (-e). ossutil's own EcsRamRole
# mode is never used: it reads the credentials without a token, which hardened metadata refuses.
# --sign-version v4 --region: OSS refuses V1 signatures on buckets created since 2025-09-01 ("Guidelines for
# upgrading V1 signatures to V4 signatures"); ossutil 1.x signs V1 unless told (lib/option.go, --sign-version).
_OSS_AUTH = ["-e", "{endpoint}", "-c", "{oss_config}", "--sign-version", "v4", "--region", "{region}"]
SYNC_COMMANDS: dict[str, list[str]] = {
    "aws": ["aws", "s3", "sync", "{src}", "{dst}", "--region", "{region}", "--no-progress", "--only-show-errors"],
    "alicloud": ["ossutil", "cp", "-r", "-u", "-f", "{src}", "{dst}", *_OSS_AUTH],
}
BUCKET_CHECK_COMMANDS: dict[str, list[str]] = {
    "aws": ["aws", "s3", "ls", "{dst}", "--region", "{region}"],
    "alicloud": ["ossutil", "ls", "{dst}", *_OSS_AUTH],
}
# The ready marker, copied next to the checkpoints for runners that cannot SSH in (the CI channel reads it).
READY_UPLOAD_COMMANDS: dict[str, list[str]] = {
    "aws": ["aws", "s3", "cp", "{file}", "{dst}_gpulease/ready.json", "--region", "{region}", "--only-show-errors"],
    "alicloud": ["ossutil", "cp", "-f", "{file}", "{dst}_gpulease/ready.json", *_OSS_AUTH],
}
# The job agent's bucket access (CI stacks only): one level of listing, one object either way, a directory up.
JOB_COMMANDS: dict[str, dict[str, list[str]]] = {
    "aws": {
        "list_command": ["aws", "s3", "ls", "{dst}", "--region", "{region}"],
        "copy_command": ["aws", "s3", "cp", "{src}", "{dst}", "--region", "{region}", "--only-show-errors"],
        "copy_dir_command": [
            "aws", "s3", "cp", "{src}", "{dst}", "--recursive", "--region", "{region}", "--only-show-errors"
        ],
    },
    "alicloud": {
        "list_command": ["ossutil", "ls", "-d", "{dst}", *_OSS_AUTH],
        "copy_command": ["ossutil", "cp", "-f", "{src}", "{dst}", *_OSS_AUTH],
        "copy_dir_command": ["ossutil", "cp", "-r", "-f", "{src}", "{dst}", *_OSS_AUTH],
    },
}
# The NVIDIA driver the bootstrap installs from the Ubuntu archive when the image family has none (``nvidia_driver``
# "absent": Canonical's Ubuntu 22.04 on AWS, Alibaba Cloud's public Ubuntu 22.04). Pinned to NVIDIA's R580 data
# center branch, a Long Term Support Branch (end of life June 2028; runs CUDA 12.x and 13.x applications:
# https://docs.nvidia.com/datacenter/tesla/drivers/supported-drivers-and-cuda-toolkit-versions.html, CUDA minor
# version compatibility: https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html), which
# supports Turing (T4), Ampere (A10, A100), Ada (L4) and Hopper (H100) (the architecture matrix:
# https://docs.nvidia.com/datacenter/tesla/drivers/cuda-toolkit-driver-and-architecture-matrix.html). Ubuntu 22.04
# ships it in jammy-updates (restricted) as the "-server" packages built from nvidia-graphics-drivers-580-server
# (https://packages.ubuntu.com/jammy-updates/nvidia-utils, .../jammy-updates/nvidia-headless): the headless
# metapackage is the compute driver (kernel module through DKMS, libcuda) without the X server stack, the utils
# package brings nvidia-smi. The CUDA runtime is not installed: PyTorch's wheels and conda packages bring their
# own, and only need a driver at least as new as their CUDA major version requires (12.x: >= 525, 13.x: >= 580).
NVIDIA_DRIVER_BRANCH = "580"
NVIDIA_DRIVER_PACKAGES = [f"nvidia-headless-{NVIDIA_DRIVER_BRANCH}-server", f"nvidia-utils-{NVIDIA_DRIVER_BRANCH}-server"]
# Run only when the CLI is missing (the Deep Learning AMIs ship the AWS CLI; plain Ubuntu images do not).
CLI_INSTALL_COMMANDS: dict[str, list[str]] = {
    "aws": ["snap", "install", "aws-cli", "--classic"],
    "alicloud": ["/bin/sh", "-c", "curl -fsSL https://gosspublic.alicdn.com/ossutil/install.sh | bash"],
}


class JobAgentSettings(BaseModel):
    """What ``job_agent.py`` needs beyond the shared settings; present only on CI stacks (``ciRun``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    poll_seconds: int = 5
    log_chunk_seconds: int = 5
    kill_grace_seconds: int = 30
    list_command: list[str]
    copy_command: list[str]
    copy_dir_command: list[str]


class ToolsObject(BaseModel):
    """Where ``fetch_tools.py`` finds the tools (AWS): the bundle's object and its SHA-256."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    bucket: str
    key: str
    region: str
    sha256: str


class BootstrapSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    cloud: Literal["aws", "alicloud"]
    region: str
    stack: str
    experiment: str
    market: Literal["spot", "on-demand"] = "spot"
    max_runtime_hours: float
    """With the first boot time, the deadline the watchdog keeps until it has read the deadline tag once."""
    deadline_tag: str = v.TAG_EXPIRES_AT
    """The instance tag holding the deadline (RFC 3339 UTC), read through the metadata service on every poll: a
    renewal changes the tag, never the user-data."""
    idle_minutes: int
    idle_gpu_percent: int
    warn_minutes: int
    warn_hook: str | None = None
    final_sync_minutes: int = 5
    checkpoint_uri: str | None = None
    """s3://bucket/prefix/ or oss://bucket/prefix/; None when the experiment keeps no checkpoints."""
    checkpoint_interval_minutes: int
    checkpoint_hook: str | None = None
    checkpoint_signal: str | None = None
    checkpoint_process: str | None = None
    hook_timeout_seconds: int = 120
    busy_marker: str = "/data/busy"
    busy_marker_max_age_minutes: int = 0
    on_rebalance: Literal["checkpoint", "shutdown", "ignore"] = "checkpoint"
    poll_seconds: int = 5
    data_disk_id: str
    """vol-... on AWS, d-... on Alibaba Cloud: the bootstrap finds the device by this id."""
    data_owner: str = "ubuntu"
    """The login user; it owns the data directories so that jobs run without sudo."""
    mount_point: str = MOUNT_POINT
    metadata_url: str = METADATA_URLS["aws"]
    sync_command: list[str] = SYNC_COMMANDS["aws"]
    bucket_check_command: list[str] = BUCKET_CHECK_COMMANDS["aws"]
    ready_upload_command: list[str] | None = None
    cli_install_command: list[str] | None = None
    self_release: bool = False
    """Alibaba Cloud: release the instance through the ECS API after the final sync (a stop keeps billing)."""
    shutdown_command: list[str] = ["shutdown", "-h", "now"]
    nvidia_smi: str = "nvidia-smi"
    nvidia_driver: Literal["preinstalled", "absent", "unknown"] = "unknown"
    """Whether the image brings the NVIDIA driver (its family's fact; ``unknown`` for a pinned ``image.id``). On
    ``absent`` the bootstrap installs ``driver_packages`` when nvidia-smi cannot see the GPU; otherwise it never
    installs a driver, and readiness reports a GPU it cannot see."""
    driver_packages: list[str] = NVIDIA_DRIVER_PACKAGES
    """The pinned driver packages (Ubuntu archive) installed on ``nvidia_driver = absent``."""
    deadline_api: bool = False
    """Alibaba Cloud: when the deadline tag cannot be read through the metadata service, read it (or the release
    time) through the ECS API (``DescribeInstances`` on this instance, with the role's STS credentials)."""
    job_agent: JobAgentSettings | None = None
    """Set on CI stacks with a bucket: the job agent is installed and takes its jobs from the bucket."""
    tools: ToolsObject
    """Where the tools come from: the bundle's object in the stack's bootstrap bucket."""


def settings_json(settings: BootstrapSettings) -> str:
    data = settings.model_dump()
    if data["job_agent"] is None:
        del data["job_agent"]  # an experiment that is not a CI run gets the same user-data as before the agent
    return json.dumps(data, indent=2, sort_keys=True)


@lru_cache(maxsize=16)
def shipped_source(path: Path) -> str:
    """An instance-side tool as shipped (in the tools bundle, or the loader in user-data): the same syntax tree
    without docstrings and comments. The readable source lives in this package, and the tests check that the
    shipped tree equals the source tree less its docstrings."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and _has_docstring(node):
            node.body = node.body[1:] or [ast.Pass()]
    header = f"#!/usr/bin/env python3\n# gpulease {path.name}: readable source in components/bootstrap/{path.name}\n"
    return header + ast.unparse(tree) + "\n"


@lru_cache(maxsize=1)
def tools_bundle() -> str:
    """The tools as AWS instances fetch them: one JSON object ``{"files": {name: shipped source}}``."""
    files = {path.name: shipped_source(path) for path in TOOL_SCRIPTS}
    return json.dumps({"files": files}, sort_keys=True, separators=(",", ":"))


def tools_sha256() -> str:
    return hashlib.sha256(tools_bundle().encode()).hexdigest()


def tools_key(prefix: str) -> str:
    """The bundle's object key under an experiment's checkpoint prefix (which its role may already read), named by
    its hash, so that new tools are a new object and a running instance keeps the one it was started with."""
    return f"{prefix}{TOOLS_FOLDER}{tools_sha256()}.json"


def _has_docstring(node: ast.AST) -> bool:
    body = getattr(node, "body", None)
    return bool(body) and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and isinstance(
        body[0].value.value, str
    )


SETUP_UNIT_TEXT = f"""[Unit]
Description=gpulease bootstrap: mount the data disk, install the NVIDIA driver where the image has none, check the instance is ready
Wants=network-online.target
After=network-online.target

[Service]
Type=oneshot
RemainAfterExit=yes
{{fetch}}ExecStart=/usr/bin/python3 {INSTALL_DIR}/instance_setup.py
StandardOutput=journal+console
# The driver install (apt, a DKMS build) and the wait for the data disk are each bounded inside; this covers both.
TimeoutStartSec=3600

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
TimeoutStopSec=90

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
TimeoutStopSec=90

[Install]
WantedBy=multi-user.target
"""


class _Literal(str):
    """A string dumped as a YAML literal block, so the shipped files stay readable in the user-data."""


def _literal(dumper: yaml.SafeDumper, value: _Literal) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", str(value), style="|")


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(_Literal, _literal)


def _fetch_line(wait: int) -> str:
    return f"ExecStartPre=/usr/bin/python3 {INSTALL_DIR}/fetch_tools.py --wait {wait}\n"


def cloud_config(settings: BootstrapSettings) -> dict:
    """The cloud-config document: the settings, the tools (or their loader), their units, and the commands that
    start them."""

    def file(path: str, content: str, mode: str) -> dict:
        return {"path": path, "permissions": mode, "owner": "root:root", "content": _Literal(content)}

    # The watchdog retries the fetch through Restart=always; the bootstrap waits for it within its own timeout.
    watchdog_fetch, setup_fetch = _fetch_line(60), _fetch_line(900)
    tools = [file(f"{INSTALL_DIR}/fetch_tools.py", shipped_source(FETCH_SCRIPT), "0755")]
    config = {
        "write_files": [
            file(SETTINGS_PATH, settings_json(settings) + "\n", "0644"),
            *tools,
            file(f"/etc/systemd/system/{SETUP_UNIT}", SETUP_UNIT_TEXT.format(fetch=setup_fetch), "0644"),
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
    if settings.job_agent is not None:
        config["write_files"].append(
            file(f"/etc/systemd/system/{JOB_AGENT_UNIT}", JOB_AGENT_UNIT_TEXT.format(fetch=watchdog_fetch), "0644")
        )
        config["runcmd"].append(["systemctl", "enable", "--now", "--no-block", JOB_AGENT_UNIT])
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


def settings_for(
    spec: ExperimentSpec,
    *,
    cloud: str,
    region: str,
    stack: str,
    checkpoint_uri: str | None,
    data_disk_id: str,
    tools_bucket: str,
    tools_prefix: str = "",
    nvidia_driver: Literal["preinstalled", "absent", "unknown"],
) -> BootstrapSettings:
    """The settings for one experiment, taken from its spec, the resources created for it and its image's driver
    fact (``components/<cloud>/instance.py``: ``nvidia_driver``)."""
    wd, ck = spec.watchdog, spec.checkpoints
    return BootstrapSettings(
        cloud=cloud,
        region=region,
        stack=stack,
        experiment=spec.name,
        market=spec.market,
        max_runtime_hours=spec.max_runtime_hours,
        idle_minutes=spec.idle_minutes,
        idle_gpu_percent=wd.idle_gpu_percent,
        warn_minutes=wd.warn_minutes,
        warn_hook=wd.warn_hook,
        final_sync_minutes=wd.final_sync_minutes,
        checkpoint_uri=checkpoint_uri,
        checkpoint_interval_minutes=ck.interval_minutes,
        checkpoint_hook=ck.hook,
        checkpoint_signal=ck.signal,
        checkpoint_process=ck.process,
        hook_timeout_seconds=ck.hook_timeout_seconds,
        busy_marker=wd.busy_marker,
        busy_marker_max_age_minutes=wd.busy_marker_max_age_minutes,
        on_rebalance=wd.on_rebalance,
        poll_seconds=wd.poll_seconds,
        data_disk_id=data_disk_id,
        data_owner=spec.ssh.user,
        metadata_url=METADATA_URLS[cloud],
        sync_command=SYNC_COMMANDS[cloud],
        bucket_check_command=BUCKET_CHECK_COMMANDS[cloud],
        ready_upload_command=READY_UPLOAD_COMMANDS[cloud],
        cli_install_command=CLI_INSTALL_COMMANDS[cloud],
        self_release=cloud == "alicloud",
        deadline_api=cloud == "alicloud",
        nvidia_driver=nvidia_driver,
        job_agent=JobAgentSettings(**JOB_COMMANDS[cloud]) if spec.ci_run and checkpoint_uri else None,
        tools=ToolsObject(bucket=tools_bucket, key=tools_key(tools_prefix), region=region, sha256=tools_sha256()),
    )
