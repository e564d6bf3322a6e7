"""The settings every instance-side tool reads (``SETTINGS_PATH``), filled from the spec and the created resources."""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel, ConfigDict

from components.spec.experiment import ExperimentSpec
from components.userdata.cluster import ClusterSettings
from components.userdata.run_settings import JobSettings, VerifySettings, run_fields
from components.userdata.tools import tools_key, tools_sha256
from components.userdata.workflow import OSS_AUTH, workflow_settings
from gpulease.core import vocabulary as v

SETTINGS_PATH = "/etc/gpulease/settings.json"
MOUNT_POINT = "/data"
INSTALL_DIR = "/opt/gpulease"
SETUP_UNIT = "gpulease-bootstrap.service"
WATCHDOG_UNIT = "gpulease-watchdog.service"
JOB_AGENT_UNIT = "gpulease-job-agent.service"

METADATA_URLS = {"aws": "http://169.254.169.254", "alicloud": "http://100.100.100.200"}


# Cloud CLI commands; {src} {dst} {region} {endpoint} {oss_config} are filled in on the instance
# (cloud_access.storage_command). The instance role is the only credential: the AWS CLI reads it from IMDSv2 itself
# (told the endpoint, the tokenless fallback disabled); ossutil gets the role's STS credentials, read through the
# metadata token, in a 0600 config file (-c) and the https:// internal endpoint (-e). ossutil's own EcsRamRole
# mode is never used: it reads the credentials without a token, which hardened metadata refuses.
# --sign-version v4 --region: OSS refuses V1 signatures on buckets created since 2025-09-01 ("Guidelines for
# upgrading V1 signatures to V4 signatures"); ossutil 1.x signs V1 unless told (lib/option.go, --sign-version).
_OSS_AUTH = OSS_AUTH
SYNC_COMMANDS: dict[str, list[str]] = {
    "aws": ["aws", "s3", "sync", "{src}", "{dst}", "--region", "{region}", "--no-progress", "--only-show-errors"],
    "alicloud": ["ossutil", "cp", "-r", "-u", "-f", "{src}", "{dst}", *_OSS_AUTH],
}
BUCKET_CHECK_COMMANDS: dict[str, list[str]] = {
    "aws": ["aws", "s3", "ls", "{dst}", "--region", "{region}"],
    "alicloud": ["ossutil", "ls", "{dst}", *_OSS_AUTH],
}
# The ready marker, copied to the control area ({dst}: the control_uri setting) for runners that cannot SSH in (the CI channel reads it).
READY_UPLOAD_COMMANDS: dict[str, list[str]] = {
    "aws": ["aws", "s3", "cp", "{file}", "{dst}ready.json", "--region", "{region}", "--only-show-errors"],
    "alicloud": ["ossutil", "cp", "-f", "{file}", "{dst}ready.json", *_OSS_AUTH],
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
    idle_after_setup: bool = True
    """Idle time counts from the end of the bootstrap (and the verification), never from boot: the driver install
    and a long stage keep the GPU at 0 % on purpose (instance/idle_rule.py)."""
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
    spot_recover: bool = False
    """Spot recovery (``spot.recover``): the cloud stops the instance on a reclaim and starts it again, so a spot
    notice runs the hook and the final sync and does not shut down; the watchdog's own end (deadline, idle, budget)
    cancels the instance's own spot request before it shuts down (a shutdown from inside terminates it, and a
    terminated instance re-opens a persistent request). Absent from the JSON when false."""
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
    cluster: ClusterSettings | None = None
    """Set on a cluster node (``components/userdata/cluster.py``): its rank, peers, rendezvous and fabric."""
    # --- the workflow before training (components/userdata/workflow.py); absent from the JSON at their defaults ---
    phase: Literal["prep", "train"] = "train"
    """prep: a CPU instance: no GPU checks in readiness, no driver install, the idle rule on CPU and SSH activity."""
    idle_source: Literal["gpu", "cpu"] = "gpu"
    idle_cpu_percent: int = 10
    data_sources: list[dict] = []
    """``{uri, to, sha256?, revision?, region?}`` staged by ``staging.py`` before readiness."""
    stage_commands: dict[str, list[str]] | None = None
    hub_token_secret: str | None = None
    """The secret's name only: the token is read on the instance with its role, never written here."""
    secret_command: list[str] | None = None
    ready_record_command: list[str] | None = None
    ready_record_uri: str | None = None
    """Where the ready records are (``components.image_bake.record_uri``): outside the expiring checkpoint prefix."""
    control_uri: str | None = None
    """Where the instance reports (``ready.json``, ``verify.json``, ``heartbeat.json``, ``manifest.json``):
    ``record_uri(checkpoint_uri, CONTROL_FOLDER)``, outside the expiring checkpoint prefix."""

    # --- the run sections (components/userdata/run_settings.py) ---
    verify: VerifySettings | None = None
    """Run by ``run_job.py`` after readiness; its result is ``<control_uri>verify.json``."""
    job: JobSettings | None = None
    """Started by ``run_job.py`` in a tmux session after readiness (and a passed verification)."""
    budget_thresholds: list[float] = []
    """Percentages of the budget at which the watchdog's spend estimate warns (the budget is the instance's tag)."""
    image_family: str | None = None
    """The image family the instance was started from (the run manifest records it; None for a pinned id)."""
    control_upload_command: list[str] | None = None
    """Copies one file ({src}) to the bucket ({dst}): the heartbeat, verify.json and the run manifest."""


WORKFLOW_DEFAULTS: dict[str, object] = {"phase": "train", "data_sources": [], "stage_commands": None,
                                         "hub_token_secret": None, "secret_command": None, "ready_record_command": None,
                                         "ready_record_uri": None, "control_uri": None}


def settings_json(settings: BootstrapSettings) -> str:
    data = settings.model_dump()
    if data["job_agent"] is None:
        del data["job_agent"]  # an experiment that is not a CI run gets the same user-data as before the agent
    if data["cluster"] is None:
        del data["cluster"]  # likewise a single node: the same user-data as before clusters
    for key, default in WORKFLOW_DEFAULTS.items():  # nor does one that uses no part of the workflow
        if data.get(key) == default:
            del data[key]
    if not data["spot_recover"]:
        del data["spot_recover"]  # the same user-data as before spot recovery for everything that does not recover
    if data.get("idle_source") == "gpu":
        del data["idle_source"], data["idle_cpu_percent"]
    for key in ("verify", "job"):  # only what the experiment declares travels in its user-data
        if data[key] is None:
            del data[key]
    return json.dumps(data, indent=2, sort_keys=True)



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
    cluster: ClusterSettings | None = None,
) -> BootstrapSettings:
    """The settings for one experiment, taken from its spec, the resources created for it and its image's driver
    fact (the family's ``nvidia_driver`` in ``components/<cloud>/spec.py``: ``ExperimentSpec.nvidia_driver``)."""
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
        # Both clouds keep a reclaimed instance stopped (components/aws/instance.py, components/alicloud/spot_recovery.py):
        # the watchdog then never ends the instance itself on a notice.
        spot_recover=spec.market == "spot" and spec.spot.recover is True,
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
        cluster=cluster,
        **workflow_settings(spec, cloud, checkpoint_uri),
        control_upload_command=JOB_COMMANDS[cloud]["copy_command"] if checkpoint_uri else None,
        **run_fields(spec),
    )
