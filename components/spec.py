"""The experiment spec: the one source of truth for a stack (pydantic v2, camelCase keys in YAML).

A stack declares either ``gpulease:experiment`` (one experiment) or ``gpulease:sweep`` (a base experiment
plus a list of runs). ``load_stack_spec`` validates either form and returns a ``StackSpec`` whose
``experiments`` list always holds fully merged, validated experiments, so components never branch on the form.

Invalid input raises ``SpecError``: one message naming the stack, each field path, what was wrong and what is
accepted. Nothing is registered before the spec validates.
"""

from __future__ import annotations

import copy
import ipaddress
import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from pydantic import (
    BaseModel,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from components import cloud_limits, ssh_keys
from gpulease.core import clock
from gpulease.core import vocabulary as v
from gpulease.core.errors import UserError
from gpulease.core.model import SpecModel
from gpulease.core.sizing.resolve import GpuSpec

CONFIG_NAMESPACE = "gpulease"
EXPERIMENT_KEY = "experiment"
SWEEP_KEY = "sweep"

Cloud = Literal["aws", "alicloud"]

DNS_LABEL = re.compile(r"^[a-z]([a-z0-9-]{0,38}[a-z0-9])?$")
EMAIL = re.compile(r"^[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}$")
AWS_VOLUME_ID = re.compile(r"^vol-[0-9a-f]{8,17}$")
ALICLOUD_DISK_ID = re.compile(r"^d-[0-9a-z]{8,24}$")
AWS_AMI_ID = re.compile(r"^ami-[0-9a-f]{8,17}$")
BUCKET_NAME = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")

AWS_DISK_TYPES = ("gp3", "gp2", "io1", "io2", "st1")
ALICLOUD_DISK_TYPES = ("cloud_essd", "cloud_auto", "cloud_essd_entry", "cloud_ssd", "cloud_efficiency")
DEFAULT_DISK_TYPE = {"aws": "gp3", "alicloud": "cloud_essd"}

IMAGE_FAMILIES: dict[str, tuple[str, ...]] = {
    "aws": ("dlami-base-ubuntu22", "dlami-pytorch-ubuntu22", "ubuntu-22.04"),
    "alicloud": ("ubuntu-22.04",),
}
DEFAULT_IMAGE_FAMILY = {"aws": "dlami-base-ubuntu22", "alicloud": "ubuntu-22.04"}

AWS_STORAGE_CLASSES = ("STANDARD_IA", "ONEZONE_IA", "INTELLIGENT_TIERING", "GLACIER_IR", "GLACIER", "DEEP_ARCHIVE")
ALICLOUD_STORAGE_CLASSES = ("IA", "Archive", "ColdArchive", "DeepColdArchive")
CHECKPOINT_SIGNALS = ("USR1", "USR2", "TERM", "INT", "HUP")
# POSIX user names: the portable filename characters, not starting with a hyphen (POSIX.1-2017, 3.437 User
# Name and 3.282 Portable Filename Character Set), in the lowercase form useradd(8) accepts by default
# (NAME_REGEX ^[a-z][-a-z0-9_]*$), at most 32 characters ("Usernames may only be up to 32 characters long").
POSIX_USER = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")
DEADLINE_YEARS = (2000, 2999)
"""expiresAt years accepted: far outside them the date arithmetic of a deadline overflows (year 9999 + offset)."""


# Hooks and the busy marker travel in the instance's user-data, which every cloud caps (see components/userdata):
# bounded here so that the largest spec accepted still leaves user-data a quarter under the cloud's limit.
HOOK_MAX_LENGTH = 2048
PATH_MAX_LENGTH = 1024


def _tag_safe(value: str, what: str) -> str:
    if not v.TAG_VALUE_PATTERN.match(value) or len(value) > v.TAG_VALUE_MAX_LEN:
        raise ValueError(
            f"{what} becomes a tag value on both clouds; accepted: up to {v.TAG_VALUE_MAX_LEN} letters, digits, "
            "spaces and + - = . _ : / @"
        )
    return value


class SshSpec(SpecModel):
    mode: Literal["ssh", "ssm", "cloud-assistant"] = Field(
        "ssh",
        description="ssh: inbound TCP 22 from allowedCidrs only. ssm (AWS) / cloud-assistant (Alibaba): no inbound rule at all.",
    )
    allowed_cidrs: list[str] = Field(default_factory=list, description="Your addresses, e.g. 203.0.113.7/32.")
    public_key: str | None = Field(None, description="An OpenSSH public key; a key pair is created from it.")
    key_name: str | None = Field(None, description="An existing key pair name.")
    user: str = Field("ubuntu", description="Login user for the SSH command output (a POSIX user name, e.g. ubuntu).")

    @field_validator("user")
    @classmethod
    def _user(cls, user: str) -> str:
        if not POSIX_USER.match(user):
            raise ValueError(
                f"{user!r} is not a user name; accepted: 1-32 lowercase letters, digits, _ and -, starting with a "
                "letter or _ (e.g. ubuntu, ec2-user)"
            )
        return user

    @field_validator("allowed_cidrs")
    @classmethod
    def _cidrs(cls, cidrs: list[str]) -> list[str]:
        out = []
        for i, raw in enumerate(cidrs):
            if "%" in raw:
                raise ValueError(
                    f"[{i}] {raw!r} has a zone (%...): a link-local scope means nothing to a security group; "
                    "accepted: a global address such as 2001:db8::7/128"
                )
            try:
                net = ipaddress.ip_network(raw, strict=True)
            except ValueError as exc:
                raise ValueError(
                    f"[{i}] {raw!r} is not a valid CIDR ({exc}); accepted: a network such as 203.0.113.7/32"
                ) from None
            minimum = v.MIN_SSH_PREFIX_V4 if net.version == 4 else v.MIN_SSH_PREFIX_V6
            if net.prefixlen < minimum:
                raise ValueError(
                    f"[{i}] {raw!r} would open SSH to {'the whole internet' if net.prefixlen == 0 else 'too many addresses'}; "
                    f"accepted: IPv4 prefixes of /{v.MIN_SSH_PREFIX_V4} or longer, IPv6 of /{v.MIN_SSH_PREFIX_V6} or longer, "
                    "e.g. 203.0.113.7/32"
                )
            out.append(str(net))
        if len(set(out)) != len(out):
            raise ValueError("lists the same CIDR twice; accepted: each address once")
        return out

    @field_validator("public_key")
    @classmethod
    def _public_key(cls, key: str | None) -> str | None:
        if key is None:
            return key
        if "PRIVATE KEY" in key:
            raise ValueError("holds a private key; accepted: the public half only (the .pub file)")
        if "\n" in key.strip():
            raise ValueError("holds more than one line; accepted: one public key line")
        try:
            ssh_keys.key_type(key)
        except ssh_keys.PublicKeyError as exc:
            raise ValueError(f"{exc}; accepted: one line of a .pub file, e.g. 'ssh-ed25519 AAAAC3Nz... you@host'") from None
        return key.strip()

    @model_validator(mode="after")
    def _shape(self) -> SshSpec:
        if self.mode == "ssh":
            if not self.allowed_cidrs:
                raise ValueError(
                    "mode ssh needs allowedCidrs; accepted: a non-empty list of your addresses, e.g. [203.0.113.7/32], "
                    "or mode: ssm / cloud-assistant for no inbound access at all"
                )
            if bool(self.public_key) == bool(self.key_name):
                raise ValueError("mode ssh needs exactly one of publicKey or keyName")
        else:
            if self.allowed_cidrs:
                raise ValueError(f"mode {self.mode} opens no inbound port; accepted: no allowedCidrs in this mode")
        return self


class DataDiskSpec(SpecModel):
    size_gb: int = Field(100, ge=10, le=16384, description="Size of the data disk in GB.")
    type: str | None = Field(None, description="gp3 (AWS default) / cloud_essd (Alibaba default).")
    iops: int | None = Field(None, ge=100, le=256000)
    throughput: int | None = Field(None, ge=125, le=2000, description="MB/s, gp3 only.")
    performance_level: Literal["PL0", "PL1", "PL2", "PL3"] | None = Field(None, description="Alibaba ESSD only.")
    retain: bool = Field(True, description="Keep the disk when the stack is destroyed.")
    existing_volume_id: str | None = Field(None, description="Reattach a disk from an earlier experiment.")
    kms_key_id: str | None = Field(None, description="A customer-managed key; the cloud's default key otherwise.")


class TransitionSpec(SpecModel):
    days: int = Field(..., ge=1)
    storage_class: str


class LifecycleSpec(SpecModel):
    keep_days: int = Field(30, ge=1, le=3650, description="Expire checkpoints under the prefix after this many days.")
    noncurrent_versions_to_keep: int = Field(3, ge=0, le=100)
    noncurrent_days: int = Field(7, ge=1, le=3650, description="Noncurrent versions beyond those kept expire after this many days.")
    abort_incomplete_upload_days: int = Field(2, ge=1, le=365)
    transitions: list[TransitionSpec] = Field(default_factory=list)

    @model_validator(mode="after")
    def _transitions_before_expiry(self) -> LifecycleSpec:
        for i, t in enumerate(self.transitions):
            if t.days >= self.keep_days:
                raise ValueError(
                    f"transitions[{i}].days ({t.days}) is not before keepDays ({self.keep_days}); "
                    "accepted: a transition earlier than the expiry"
                )
        return self


class CheckpointSpec(SpecModel):
    enabled: bool = Field(True, description="false only for on-demand experiments.")
    bucket: str | None = Field(None, description="An existing bucket; a new one is created when omitted.")
    prefix: str = Field("checkpoints/", description="Key prefix for this experiment's checkpoints.")
    interval_minutes: int = Field(15, ge=1, le=1440, description="How often the watchdog syncs /data/checkpoints.")
    retain: bool = Field(True, description="Keep a created bucket when the stack is destroyed.")
    lifecycle: LifecycleSpec = Field(default_factory=LifecycleSpec)
    hook: str | None = Field(
        None,
        max_length=HOOK_MAX_LENGTH,
        description="Command run before a checkpoint sync on a spot notice or the deadline, e.g. 'pkill -USR1 -f train.py'.",
    )
    signal: str | None = Field(
        None,
        description="A signal sent to the training process before a final sync (instead of or besides hook), e.g. USR1.",
    )
    process: str | None = Field(
        None,
        max_length=HOOK_MAX_LENGTH,
        description="Part of the training process's command line that signal is sent to, e.g. train.py.",
    )
    hook_timeout_seconds: int = Field(
        120,
        ge=5,
        le=1800,
        description="How long the hook (or the signalled process) may take before the sync starts anyway; "
        "always cut short to fit the spot notice window.",
    )

    @field_validator("signal")
    @classmethod
    def _signal(cls, name: str | None) -> str | None:
        if name is None:
            return None
        bare = name.upper().removeprefix("SIG")
        if bare not in CHECKPOINT_SIGNALS:
            raise ValueError(f"{name!r} is not a signal for a checkpoint; accepted: {', '.join(CHECKPOINT_SIGNALS)}")
        return f"SIG{bare}"

    @model_validator(mode="after")
    def _signal_target(self) -> CheckpointSpec:
        if (self.signal is None) != (self.process is None):
            raise ValueError(
                "signal and process go together; accepted: e.g. {signal: USR1, process: train.py}, or neither"
            )
        return self

    @field_validator("bucket")
    @classmethod
    def _bucket(cls, name: str | None) -> str | None:
        if name is not None and (not BUCKET_NAME.match(name) or ".." in name):
            raise ValueError(f"{name!r} is not a bucket name; accepted: 3-63 lowercase letters, digits, dots and hyphens")
        return name

    @field_validator("prefix")
    @classmethod
    def _prefix(cls, prefix: str) -> str:
        if prefix.startswith("/") or not re.match(r"^[A-Za-z0-9!_.*'()/-]+$", prefix):
            raise ValueError(f"{prefix!r} is not a key prefix; accepted: e.g. 'checkpoints/' (no leading slash)")
        return prefix if prefix.endswith("/") else prefix + "/"


class ImageSpec(SpecModel):
    id: str | None = Field(None, description="An image id (ami-... / an Alibaba image id).")
    family: str | None = Field(None, description="A family resolved by lookup to the newest image.")
    root_disk_gb: int = Field(100, ge=30, le=2048)


class NetworkSpec(SpecModel):
    vpc_id: str | None = None
    subnet_id: str | None = Field(None, description="AWS subnet or Alibaba vSwitch id; the default VPC otherwise.")
    availability_zone: str | None = Field(None, description="Pin the zone; otherwise the first zone offering the type.")


class WatchdogSpec(SpecModel):
    idle_gpu_percent: int = Field(5, ge=0, le=100, description="Below this GPU utilization the GPU counts as idle.")
    warn_minutes: int = Field(15, ge=0, le=240, description="Run the warning hook this long before the deadline.")
    warn_hook: str | None = Field(None, max_length=HOOK_MAX_LENGTH, description="Command run when the deadline is near.")
    final_sync_minutes: int = Field(
        5, ge=1, le=60, description="Run the checkpoint hook and the final sync this long before the deadline, then shut down."
    )
    busy_marker: str = Field(
        "/data/busy",
        max_length=PATH_MAX_LENGTH,
        description="While this file exists the instance never counts as idle (touch it from a job)."
    )
    busy_marker_max_age_minutes: int = Field(
        0, ge=0, le=10080, description="Ignore a busy marker not touched for this long; 0 trusts it at any age."
    )
    on_rebalance: Literal["checkpoint", "shutdown", "ignore"] = Field(
        "checkpoint",
        description="On an AWS rebalance recommendation (an early interruption warning): checkpoint and sync, "
        "also shut down, or ignore it.",
    )
    poll_seconds: int = Field(5, ge=1, le=60, description="How often the metadata service is asked for a spot notice.")

    @field_validator("busy_marker")
    @classmethod
    def _busy_marker(cls, path: str) -> str:
        if not path.startswith("/") or "\n" in path:
            raise ValueError(f"{path!r} is not an absolute path; accepted: e.g. /data/busy")
        return path


class ExperimentSpec(SpecModel):
    """One experiment: one GPU instance, one data disk, a checkpoint prefix."""

    name: str = Field(..., description="DNS-safe experiment name (lowercase letters, digits, hyphens).")
    owner: str = Field(..., description="Owner email; every resource is tagged with it.")
    project: str = Field(..., min_length=1, max_length=64)
    cost_center: str = Field(..., min_length=1, max_length=64)
    budget_usd: float = Field(..., gt=0, description="Budget for the whole experiment in USD.")
    tags: dict[str, str] = Field(default_factory=dict, description="Extra tags on every resource.")
    cloud: Cloud = "aws"
    region: str | None = Field(None, description="Defaults to the provider's region config (aws:region / alicloud:region).")
    gpu: GpuSpec
    market: Literal["spot", "on-demand"] = "spot"
    max_spot_price_usd: float | None = Field(
        None,
        ge=0.001,
        le=1000,
        description="Hourly cap for a spot instance in USD (0.001-1000, above any GPU's on-demand price); the "
        "on-demand price otherwise.",
    )
    on_demand_reason: str | None = Field(None, description="Why this experiment cannot run on spot.")
    max_runtime_hours: float = Field(..., gt=0, le=v.MAX_RUNTIME_HOURS_CAP, description="Hard deadline after creation.")
    expires_at: datetime | None = Field(
        None,
        description="An explicit deadline (RFC 3339 UTC); otherwise creation time + maxRuntimeHours, recorded once.",
    )
    deadline_renewal: int = Field(
        0, ge=0, description="Raise by one to record a new deadline (now + maxRuntimeHours) on the next pulumi up."
    )
    idle_minutes: int = Field(30, ge=5, le=1440, description="Shut down after the GPU has been idle this long.")
    ssh: SshSpec
    data_disk: DataDiskSpec = Field(default_factory=DataDiskSpec)
    checkpoints: CheckpointSpec = Field(default_factory=CheckpointSpec)
    image: ImageSpec = Field(default_factory=ImageSpec)
    network: NetworkSpec = Field(default_factory=NetworkSpec)
    watchdog: WatchdogSpec = Field(default_factory=WatchdogSpec)
    ci_run: str | None = Field(
        None,
        description="The CI run an ephemeral stack belongs to (set by gpulease ephemeral); tagged on every resource.",
    )

    @field_validator("name")
    @classmethod
    def _name(cls, name: str) -> str:
        if not DNS_LABEL.match(name):
            raise ValueError(
                f"{name!r} is not DNS-safe; accepted: 1-40 lowercase letters, digits and hyphens, starting with a letter"
            )
        return name

    @field_validator("owner")
    @classmethod
    def _owner(cls, owner: str) -> str:
        if not EMAIL.match(owner):
            raise ValueError(f"{owner!r} is not an email address; accepted: e.g. alice@example.com")
        return owner

    @field_validator("project", "cost_center")
    @classmethod
    def _tag_text(cls, value: str) -> str:
        return _tag_safe(value, "this value")

    @field_validator("ci_run")
    @classmethod
    def _ci_run(cls, value: str | None) -> str | None:
        if value is None:
            return value
        if not value.strip():
            raise ValueError("is empty; accepted: an identifier of the CI run, e.g. octo/repo/actions/runs/123")
        return _tag_safe(value.strip(), "ciRun")

    @field_validator("on_demand_reason")
    @classmethod
    def _reason(cls, value: str | None) -> str | None:
        if value is None:
            return value
        if len(value.strip()) < 10:
            raise ValueError("is too short to review; accepted: a sentence of at least 10 characters")
        return _tag_safe(value.strip(), "the reason")

    @field_validator("tags")
    @classmethod
    def _tags(cls, tags: dict[str, str]) -> dict[str, str]:
        for key, value in tags.items():
            if key.startswith(v.TAG_PREFIX) or key.lower().startswith(("aws:", "aliyun", "acs:")):
                raise ValueError(
                    f"key {key!r} uses a reserved prefix; accepted: keys not starting with {v.TAG_PREFIX}, aws:, aliyun or acs:"
                )
            if not key or len(key) > v.TAG_KEY_MAX_LEN or not v.TAG_VALUE_PATTERN.match(key):
                raise ValueError(f"key {key!r} is not a valid tag key on both clouds")
            _tag_safe(value, f"tags.{key}")
        return tags

    @field_validator("expires_at")
    @classmethod
    def _expires_utc(cls, value: datetime | None) -> datetime | None:
        if value is None:
            return value
        if value.tzinfo is None:
            raise ValueError("has no UTC offset; accepted: RFC 3339 with Z or an offset, e.g. 2026-11-30T10:00:00Z")
        first, last = DEADLINE_YEARS
        if not first <= value.year <= last:
            raise ValueError(f"year {value.year} is not a deadline; accepted: a date in the years {first}-{last}, "
                             "e.g. 2026-11-30T10:00:00Z")
        return value.astimezone(UTC)

    @model_validator(mode="after")
    def _cross_field(self) -> ExperimentSpec:
        problems: list[tuple[str, str]] = []
        if self.market == "on-demand" and not self.on_demand_reason:
            problems.append(
                ("onDemandReason", "on-demand costs 2-4x spot; accepted: a reason, e.g. 'interactive debugging - cannot be interrupted'")
            )
        if self.market == "spot" and self.on_demand_reason:
            problems.append(("onDemandReason", "is only for market: on-demand"))
        if self.market == "on-demand" and self.max_spot_price_usd is not None:
            problems.append(("maxSpotPriceUsd", "is only for market: spot"))
        if self.market == "spot" and not self.checkpoints.enabled:
            problems.append(
                ("checkpoints.enabled", "a spot instance can be reclaimed at any time; accepted: true (checkpoints) for spot")
            )
        if self.ssh.mode == "ssm" and self.cloud != "aws":
            problems.append(("ssh.mode", "ssm is AWS Systems Manager; accepted on alicloud: ssh or cloud-assistant"))
        if self.ssh.mode == "cloud-assistant" and self.cloud != "alicloud":
            problems.append(("ssh.mode", "cloud-assistant is Alibaba Cloud's; accepted on aws: ssh or ssm"))
        disk_types = AWS_DISK_TYPES if self.cloud == "aws" else ALICLOUD_DISK_TYPES
        disk = self.data_disk
        if disk.type is not None and disk.type not in disk_types:
            problems.append(("dataDisk.type", f"{disk.type!r} is not a {self.cloud} disk type; accepted: {', '.join(disk_types)}"))
        elif disk.existing_volume_id is None:
            problems += cloud_limits.disk_problems(
                self.cloud, self.disk_type, disk.size_gb, disk.iops, disk.throughput, disk.performance_level
            )
        problems += cloud_limits.runtime_problems(
            self.cloud, self.max_runtime_hours, self.watchdog.final_sync_minutes, self.expires_at is not None
        )
        problems += self._ssh_problems()
        problems += self._tag_problems()
        vol = self.data_disk.existing_volume_id
        if vol is not None:
            pattern, example = (AWS_VOLUME_ID, "vol-0123456789abcdef0") if self.cloud == "aws" else (ALICLOUD_DISK_ID, "d-bp1abcdefghij1234567")
            if not pattern.match(vol):
                problems.append(("dataDisk.existingVolumeId", f"{vol!r} is not a {self.cloud} disk id; accepted: e.g. {example}"))
        classes = AWS_STORAGE_CLASSES if self.cloud == "aws" else ALICLOUD_STORAGE_CLASSES
        for i, t in enumerate(self.checkpoints.lifecycle.transitions):
            if t.storage_class not in classes:
                problems.append(
                    (f"checkpoints.lifecycle.transitions[{i}].storageClass", f"{t.storage_class!r}; accepted: {', '.join(classes)}")
                )
        image = self.image
        if image.id is not None and image.family is not None:
            problems.append(("image", "give id or family, not both"))
        if image.id is not None and self.cloud == "aws" and not AWS_AMI_ID.match(image.id):
            problems.append(("image.id", f"{image.id!r} is not an AMI id; accepted: e.g. ami-0123456789abcdef0"))
        if image.family is not None and image.family not in IMAGE_FAMILIES[self.cloud]:
            problems.append(("image.family", f"{image.family!r}; accepted on {self.cloud}: {', '.join(IMAGE_FAMILIES[self.cloud])}"))
        if self.expires_at is not None:
            now = clock.utcnow()
            lead = timedelta(minutes=v.ALICLOUD_MIN_RELEASE_MINUTES if self.cloud == "alicloud" else 5)
            if self.expires_at < now + lead:
                problems.append(
                    ("expiresAt", f"{v.rfc3339(self.expires_at)} is less than {int(lead.total_seconds() // 60)} minutes away; "
                     "accepted: a future deadline (or omit it to use creation time + maxRuntimeHours)")
                )
            elif self.expires_at > now + timedelta(hours=self.max_runtime_hours):
                problems.append(
                    ("expiresAt", f"{v.rfc3339(self.expires_at)} is more than maxRuntimeHours ({self.max_runtime_hours:g}) from now; "
                     "accepted: a deadline within maxRuntimeHours, or raise maxRuntimeHours")
                )
        if problems:
            raise _MultiFieldError(problems)
        return self

    def _builtin_tags(self) -> set[str]:
        """gpulease's own tag keys on this experiment's resources (the most any one resource carries)."""
        builtin = {
            v.TAG_OWNER, v.TAG_PROJECT, v.TAG_EXPERIMENT, v.TAG_COST_CENTER, v.TAG_BUDGET_USD, v.TAG_EXPIRES_AT,
            v.TAG_MAX_RUNTIME_HOURS, v.TAG_CHECKPOINT_URI, v.TAG_MANAGED_BY, v.TAG_STACK, v.TAG_RETAIN,
        }
        builtin |= {v.TAG_ON_DEMAND_REASON} if self.on_demand_reason else set()
        builtin |= {v.TAG_CI_RUN} if self.ci_run else set()
        return builtin

    def _tag_problems(self) -> list[tuple[str, str]]:
        """Tag count and value lengths each cloud accepts (components.cloud_limits), for the user's tags and for
        the values that become gpulease's own tags."""
        problems: list[tuple[str, str]] = []
        builtin = self._builtin_tags()
        extra = [k for k in self.tags if k not in builtin]
        most = cloud_limits.MAX_TAGS[self.cloud]
        if len(builtin) + len(extra) > most:
            problems.append(
                ("tags", f"{len(extra)} extra tags plus gpulease's {len(builtin)} exceed the {most} tags {self.cloud} allows "
                 f"per resource; accepted: at most {most - len(builtin)} tags here")
            )
        value_max = cloud_limits.TAG_VALUE_MAX[self.cloud]
        if len(self.owner) > value_max:
            problems.append(("owner", f"is {len(self.owner)} characters and becomes a tag value; {self.cloud} accepts up to {value_max}"))
        if self.checkpoints.enabled:
            ck = self.checkpoints
            length = cloud_limits.checkpoint_uri_length(self.cloud, ck.bucket, ck.prefix, self.name)
            if length > value_max:
                room = len(ck.prefix) - (length - value_max)
                problems.append(
                    ("checkpoints.prefix", f"the checkpoint URI (bucket, prefix and run name, up to {length} characters) "
                     f"becomes the tag {v.TAG_CHECKPOINT_URI}; {self.cloud} accepts values of up to {value_max}; "
                     "accepted: a prefix of at most "
                     f"{max(room, 0)} characters here")
                )
        if self.cloud == "alicloud":
            problems += self._alicloud_problems()
        return problems

    def _ssh_problems(self) -> list[tuple[str, str]]:
        """What the cloud's key-pair import and security-group quota would refuse."""
        problems: list[tuple[str, str]] = []
        ssh = self.ssh
        if ssh.public_key:
            problem = ssh_keys.cloud_problem(self.cloud, ssh_keys.key_type(ssh.public_key))
            if problem:
                problems.append(("ssh.publicKey", problem))
        problems += cloud_limits.cidr_count_problems(self.cloud, ssh.allowed_cidrs)
        return problems

    def existing_disk_zone_problem(self, zone: str, region: str) -> str | None:
        """Why an existing data disk found in ``zone`` cannot serve this experiment in ``region``, or None.

        The clouds' placement code calls this after looking the disk up: a disk in another region, or a pinned
        network.availabilityZone other than the disk's, is an error rather than a silently moved instance."""
        field = "dataDisk.existingVolumeId"
        disk_id = self.data_disk.existing_volume_id
        if not zone.startswith(region):
            return (f"{field}: {disk_id} is in {zone}, not in the stack's region {region}; a disk attaches only in its "
                    f"own zone; accepted: a disk in {region} (copy a snapshot across regions first)")
        pinned = self.network.availability_zone
        if pinned and pinned != zone:
            return (f"network.availabilityZone: {pinned} differs from the zone of {field} {disk_id} ({zone}); the "
                    f"instance must run where the disk is; accepted: {zone}, or omit availabilityZone")
        return None

    def _alicloud_problems(self) -> list[tuple[str, str]]:
        """What Alibaba Cloud cannot do as asked: OSS keeps no count of noncurrent versions, and values that
        become tags must meet its stricter tag rules (128 characters, reserved prefixes)."""
        problems: list[tuple[str, str]] = []
        if "noncurrent_versions_to_keep" in self.checkpoints.lifecycle.model_fields_set:
            problems.append(
                ("checkpoints.lifecycle.noncurrentVersionsToKeep", "OSS cannot keep a number of noncurrent versions; "
                 "accepted on alicloud: omit it (noncurrent versions expire after noncurrentDays)")
            )
        for key, value in self.tags.items():
            problem = v.alicloud_tag_problem(key, value)
            if problem:
                problems.append((f"tags.{key}", problem))
        for field, value in (
            ("project", self.project), ("costCenter", self.cost_center),
            ("onDemandReason", self.on_demand_reason), ("ciRun", self.ci_run),
        ):
            if not value:
                continue
            if len(value) > v.ALICLOUD_TAG_VALUE_MAX_LEN:
                problems.append(
                    (field, f"is {len(value)} characters and becomes a tag value; Alibaba Cloud accepts up to {v.ALICLOUD_TAG_VALUE_MAX_LEN}")
                )
            elif value.lower().startswith(v.ALICLOUD_RESERVED_TAG_PREFIXES):
                problems.append(
                    (field, "becomes a tag value and starts with a prefix Alibaba Cloud reserves; accepted: "
                     f"a value not starting with {', '.join(v.ALICLOUD_RESERVED_TAG_PREFIXES)}")
                )
        if self.owner.lower().startswith(v.ALICLOUD_RESERVED_TAG_PREFIXES):
            problems.append(("owner", "becomes a tag value and starts with a prefix Alibaba Cloud reserves"))
        return problems

    @property
    def disk_type(self) -> str:
        return self.data_disk.type or DEFAULT_DISK_TYPE[self.cloud]

    @property
    def image_family(self) -> str | None:
        if self.image.id is not None:
            return None
        return self.image.family or DEFAULT_IMAGE_FAMILY[self.cloud]


class _MultiFieldError(ValueError):
    """Cross-field problems, each with its own path, lifted into SpecError by ``_format_errors``."""

    def __init__(self, problems: list[tuple[str, str]]):
        super().__init__("; ".join(f"{path}: {msg}" for path, msg in problems))
        self.problems = problems


class SweepRun(SpecModel):
    name: str = Field(..., description="Run name, appended to the base experiment name.")
    overrides: dict[str, Any] = Field(default_factory=dict, description="Keys of the experiment spec, merged over base.")

    @field_validator("name")
    @classmethod
    def _name(cls, name: str) -> str:
        if not re.match(r"^[a-z0-9]([a-z0-9-]{0,18}[a-z0-9])?$", name):
            raise ValueError(f"{name!r}; accepted: 1-20 lowercase letters, digits and hyphens")
        return name


class SweepSpec(SpecModel):
    base: dict[str, Any] = Field(..., description="An experiment spec shared by every run.")
    runs: list[SweepRun] = Field(..., min_length=1, max_length=256)

    @field_validator("runs")
    @classmethod
    def _unique(cls, runs: list[SweepRun]) -> list[SweepRun]:
        names = [r.name for r in runs]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"run names must be unique; repeated: {', '.join(dupes)}")
        return runs


# Fields a sweep run may not change: the runs share one security group, one bucket and one network.
SWEEP_SHARED_FIELDS = ("cloud", "region", "ssh", "network", "owner", "project", "costCenter", "budgetUsd")


class StackSpec(SpecModel):
    """What a stack declares, normalised: ``experiments`` always holds the merged, validated runs."""

    stack: str
    kind: Literal["experiment", "sweep"]
    experiments: list[ExperimentSpec]
    sweep_name: str | None = None

    @property
    def cloud(self) -> str:
        return self.experiments[0].cloud

    @property
    def base(self) -> ExperimentSpec:
        return self.experiments[0]


class SpecError(UserError):
    """A user mistake in stack config: one readable message, no traceback."""

    def __init__(self, stack: str, problems: list[tuple[str, str]], source: str | None = None):
        self.stack = stack
        self.problems = problems
        self.source = source
        where = f" ({source})" if source else ""
        lines = [f"invalid gpulease config in stack '{stack}'{where}:"]
        lines += [f"  - {path}: {msg}" for path, msg in problems]
        lines.append("Nothing was created. The fields are documented in the README's stack config reference.")
        super().__init__("\n".join(lines))


def _path(prefix: str, loc: tuple[Any, ...]) -> str:
    out = prefix
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in ("function-after", "function-before", "function-wrap") or str(part).startswith("function-"):
            continue
        else:
            out += f".{part}"
    return out


def _model_at(model: type[BaseModel], loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The model class a location points into, to list the accepted fields of an unknown key."""
    current: Any = model
    for part in loc:
        if isinstance(part, int) or current is None:
            continue
        fields = {(f.alias or n): f for n, f in current.model_fields.items()}
        field = fields.get(part) or current.model_fields.get(part)
        if field is None:
            return current
        ann = field.annotation
        current = _first_model(ann)
    return current


def _first_model(ann: Any) -> type[BaseModel] | None:
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return ann
    for arg in getattr(ann, "__args__", ()) or ():
        found = _first_model(arg)
        if found is not None:
            return found
    return None


def _format_errors(prefix: str, exc: ValidationError, model: type[BaseModel]) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    for err in exc.errors():
        loc = tuple(err["loc"])
        ctx_error = (err.get("ctx") or {}).get("error")
        if isinstance(ctx_error, _MultiFieldError):
            base = _path(prefix, loc)
            problems += [(f"{base}.{path}", msg) for path, msg in ctx_error.problems]
            continue
        kind = err["type"]
        if kind == "extra_forbidden":
            parent = _model_at(model, loc[:-1])
            accepted = sorted((f.alias or n) for n, f in parent.model_fields.items()) if parent else []
            problems.append((_path(prefix, loc), f"unknown field; accepted fields here: {', '.join(accepted)}"))
        elif kind == "missing":
            problems.append((_path(prefix, loc), "is required"))
        elif kind == "value_error":
            msg = str(ctx_error) if ctx_error is not None else err["msg"]
            problems.append((_path(prefix, loc), msg))
        else:
            shown = err.get("input")
            shown_text = f" (got {json.dumps(shown, default=str)})" if shown is not None and not isinstance(shown, dict) else ""
            problems.append((_path(prefix, loc), f"{err['msg']}{shown_text}"))
    return problems


# Sections that say one thing one of several ways: a run's override replaces them whole (a run that asks for
# {gpuMemoryGb: 48} must not keep the base's instanceType).
REPLACED_SECTIONS = ("gpu", "image")


def _deep_merge(base: dict[str, Any], override: Mapping[str, Any], top: bool = True) -> dict[str, Any]:
    merged = copy.deepcopy(base)
    for key, value in override.items():
        if top and key in REPLACED_SECTIONS:
            merged[key] = copy.deepcopy(value)
        elif isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value, top=False)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def _validate_experiment(stack: str, prefix: str, raw: Any, source: str | None) -> ExperimentSpec:
    if not isinstance(raw, Mapping):
        raise SpecError(stack, [(prefix, f"must be a mapping of experiment fields, got {type(raw).__name__}")], source)
    try:
        return ExperimentSpec.model_validate(dict(raw))
    except ValidationError as exc:
        raise SpecError(stack, _format_errors(prefix, exc, ExperimentSpec), source) from None


def load_stack_spec(stack: str, config: Mapping[str, Any], source: str | None = None) -> StackSpec:
    """Validate the ``gpulease:*`` keys of a stack's config (values already parsed from YAML/JSON)."""
    exp_key = f"{CONFIG_NAMESPACE}:{EXPERIMENT_KEY}"
    sweep_key = f"{CONFIG_NAMESPACE}:{SWEEP_KEY}"
    raw_exp, raw_sweep = config.get(exp_key), config.get(sweep_key)
    known = {exp_key, sweep_key}
    unknown = sorted(k for k in config if k.startswith(f"{CONFIG_NAMESPACE}:") and k not in known)
    if unknown:
        raise SpecError(stack, [(k, f"unknown key; accepted: {exp_key} or {sweep_key}") for k in unknown], source)
    if (raw_exp is None) == (raw_sweep is None):
        raise SpecError(
            stack,
            [(f"{exp_key} / {sweep_key}", "declare exactly one of them; accepted: an experiment, or a sweep {base, runs}")],
            source,
        )
    if raw_exp is not None:
        return StackSpec(stack=stack, kind="experiment", experiments=[_validate_experiment(stack, exp_key, raw_exp, source)])

    try:
        sweep = SweepSpec.model_validate(raw_sweep if isinstance(raw_sweep, Mapping) else {"_": raw_sweep})
    except ValidationError as exc:
        raise SpecError(stack, _format_errors(sweep_key, exc, SweepSpec), source) from None
    base = _validate_experiment(stack, f"{sweep_key}.base", sweep.base, source)
    experiments = []
    problems: list[tuple[str, str]] = []
    for i, run in enumerate(sweep.runs):
        shared = sorted(set(run.overrides) & set(SWEEP_SHARED_FIELDS))
        if shared:
            problems.append((f"{sweep_key}.runs[{i}].overrides", f"{', '.join(shared)} are shared by every run; set them in base"))
            continue
        if "name" in run.overrides:
            problems.append((f"{sweep_key}.runs[{i}].overrides.name", "the run's name comes from runs[].name"))
            continue
        merged = _deep_merge(dict(sweep.base), run.overrides)
        merged["name"] = f"{base.name}-{run.name}"
        try:
            experiments.append(_validate_experiment(stack, f"{sweep_key}.runs[{i}]", merged, source))
        except SpecError as err:
            problems += err.problems
    if problems:
        raise SpecError(stack, problems, source)
    if len({e.checkpoints.bucket for e in experiments}) > 1:
        raise SpecError(stack, [(f"{sweep_key}.runs", "all runs share one bucket; set checkpoints.bucket in base only")], source)
    return StackSpec(stack=stack, kind="sweep", experiments=experiments, sweep_name=base.name)


def stack_config_json_schema() -> dict[str, Any]:
    """JSON Schema of a stack file (``stacks/Pulumi.<stack>.yaml``), for editors and review."""
    exp = ExperimentSpec.model_json_schema(by_alias=True, ref_template="#/$defs/{model}")
    defs = exp.pop("$defs", {})
    defs["ExperimentSpec"] = exp
    sweep = SweepSpec.model_json_schema(by_alias=True, ref_template="#/$defs/{model}")
    defs.update(sweep.pop("$defs", {}))
    sweep["properties"]["base"] = {"$ref": "#/$defs/ExperimentSpec", "description": "Experiment spec shared by every run."}
    defs["SweepSpec"] = sweep
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "gpulease stack config",
        "description": "stacks/Pulumi.<stack>.yaml: declare gpulease:experiment or gpulease:sweep.",
        "type": "object",
        "properties": {
            "encryptionsalt": {"type": "string"},
            "secretsprovider": {"type": "string"},
            "encryptedkey": {"type": "string"},
            "config": {
                "type": "object",
                "properties": {
                    f"{CONFIG_NAMESPACE}:{EXPERIMENT_KEY}": {"$ref": "#/$defs/ExperimentSpec"},
                    f"{CONFIG_NAMESPACE}:{SWEEP_KEY}": {"$ref": "#/$defs/SweepSpec"},
                    "aws:region": {"type": "string"},
                    "alicloud:region": {"type": "string"},
                },
                "additionalProperties": True,
            },
        },
        "$defs": defs,
    }


