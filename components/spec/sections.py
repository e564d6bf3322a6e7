"""The sections of an experiment spec: SSH access, data disk, checkpoints and their lifecycle, image, network,
watchdog (the ``gpu`` section is sizing's: ``gpulease.core.sizing.resolve.GpuSpec``)."""

from __future__ import annotations

import ipaddress
import re
from typing import Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from components.spec import keys
from components.spec.cidr import CIDR_PATTERN
from components.spec.clouds import all_key_types
from components.spec.schema_terms import given, is_value, together
from components.spec.text import COMMAND_SCHEMA, PATH_SCHEMA, plain_command, plain_path
from gpulease.core import vocabulary as v
from gpulease.core.model import SpecModel
from gpulease.core.schema_pattern import PY_SPACE, any_case, schema_pattern

CHECKPOINT_SIGNALS = ("USR1", "USR2", "TERM", "INT", "HUP")
BUCKET_NAME = re.compile(r"^(?![\s\S]*\.\.)[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]\Z")
"""A bucket name (no ``..``); the JSON Schema's pattern too (``schema_pattern``)."""
# POSIX user names: the portable filename characters, not starting with a hyphen (POSIX.1-2017, 3.437 User
# Name and 3.282 Portable Filename Character Set), in the lowercase form useradd(8) accepts by default
# (NAME_REGEX ^[a-z][-a-z0-9_]*$), at most 32 characters ("Usernames may only be up to 32 characters long").
POSIX_USER = re.compile(r"^[a-z_][a-z0-9_-]{0,31}\Z")
# Pulumi stack references: ``stack``, ``project/stack`` or ``org/project/stack`` (names of letters, digits, . _ -).
STACK_REFERENCE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}(/[A-Za-z0-9][A-Za-z0-9._-]{0,99}){0,2}\Z")


# Hooks and the busy marker travel in the instance's user-data, which every cloud caps (see components/userdata):
# bounded here so that the largest spec accepted still leaves user-data a quarter under the cloud's limit.
HOOK_MAX_LENGTH = 2048
PATH_MAX_LENGTH = 1024
ABSOLUTE_FILE = re.compile(r"^/[\s\S]*[^/]\Z")
"""An absolute path of a file: starting with /, not ending with one."""
PREFIX_MAX_LENGTH = 512
_KEY_PART = r"(?!\.\.?(/|(?![\s\S])))[A-Za-z0-9!_.'()-]+"
KEY_PREFIX = re.compile(rf"^{_KEY_PART}(/{_KEY_PART})*/?\Z")
"""Folder names of letters, digits and ! _ . ' ( ) -, joined by /: no leading slash, no empty, . or .. part. It becomes
part of a tag value and of IAM/RAM resource patterns, where ``*`` is a wildcard (``ck*/`` would grant ``ck2/``)."""


MAX_FORWARDS = 10
# Address ranges no SSH client connects from (IANA special-purpose registries, RFC 6890; RFC 1122 3.2.1.3 for
# 0.0.0.0/8, RFC 5771 multicast, RFC 1112 240.0.0.0/4 reserved, RFC 4291 for the IPv6 ones): a rule for them
# opens nothing useful, and is a typo for another address.
SSH_UNREACHABLE = {
    ipaddress.ip_network(net): label for net, label in (
        ("0.0.0.0/8", "'this network' (0.0.0.0/8)"), ("127.0.0.0/8", "loopback"), ("169.254.0.0/16", "link-local"),
        ("224.0.0.0/4", "multicast"), ("240.0.0.0/4", "reserved (240.0.0.0/4)"), ("::/128", "the unspecified address"),
        ("::1/128", "loopback"), ("fe80::/10", "link-local"), ("ff00::/8", "multicast"),
    )
}


def forward_ports(item: int | str) -> tuple[int, int]:
    """(local, remote) of one ``ssh.forward`` entry; (0, 0) when it is neither a port nor ``local:remote``."""
    if isinstance(item, bool):
        return 0, 0
    if isinstance(item, int):
        return item, item
    local, sep, remote = str(item).strip().partition(":")
    if not (local.isdigit() and (remote.isdigit() if sep else True)):
        return 0, 0
    return int(local), int(remote if sep else local)


def _loose_network(raw: str) -> str | None:
    try:
        return str(ipaddress.ip_network(raw, strict=False))
    except ValueError:
        return None


def tag_safe(value: str, what: str) -> str:
    if not v.TAG_VALUE_PATTERN.match(value) or len(value) > v.TAG_VALUE_MAX_LEN:
        raise ValueError(
            f"{what} becomes a tag value on both clouds; accepted: up to {v.TAG_VALUE_MAX_LEN} letters, digits, "
            "spaces and + - = . _ : / @"
        )
    return value


class SshSpec(SpecModel):
    model_config = ConfigDict(json_schema_extra={"allOf": [  # _shape, for the JSON Schema
        {"if": is_value("mode", "ssh", "ssh"),
         "then": {"properties": {"allowedCidrs": {"minItems": 1}},
                  "oneOf": [given(f, {"type": "string", "minLength": 1}) for f in ("publicKey", "keyName")]},
         "else": {"properties": {"allowedCidrs": {"maxItems": 0}}}}]})

    mode: Literal["ssh", "ssm", "cloud-assistant"] = Field(
        "ssh",
        description="ssh: inbound TCP 22 from allowedCidrs only. ssm (AWS) / cloud-assistant (Alibaba): no inbound rule at all.",
    )
    allowed_cidrs: list[str] = Field(
        default_factory=list, description="Your addresses, e.g. 203.0.113.7/32.",
        # The shape in the schema too (an editor flags 1.2.3.4/33 as the loader does); host bits and reserved
        # ranges are the loader's alone.
        json_schema_extra={"items": {"type": "string", "pattern": CIDR_PATTERN}},
    )
    public_key: str | None = Field(None, description="An OpenSSH public key; a key pair is created from it.",
                                   # The line's shape; the key itself is parsed by the loader (components/spec/keys.py).
                                   json_schema_extra={"pattern": keys.line_pattern(all_key_types())})
    key_name: str | None = Field(None, description="An existing key pair name.")
    user: str = Field("ubuntu", description="Login user for the SSH command output (a POSIX user name, e.g. ubuntu).",
                      json_schema_extra={"pattern": schema_pattern(POSIX_USER)})
    forward: list[int | str] = Field(
        default_factory=list,
        description="Ports gpulease ssh forwards from the instance to this machine: 6006 (the same port here), or "
        "'16006:6006' (local:remote), e.g. TensorBoard and Jupyter.",
        # Each entry's shape and range (forward_ports); a local port given twice is the loader's alone.
        json_schema_extra={"maxItems": MAX_FORWARDS, "items": {"anyOf": [
            {"type": "integer", "minimum": 1, "maximum": 65535},
            {"type": "string", "pattern": rf"^[{PY_SPACE}]*[0-9]+(?::[0-9]+)?[{PY_SPACE}]*(?![\s\S])"}]}},
    )

    @field_validator("forward")
    @classmethod
    def _forward(cls, ports: list[int | str]) -> list[int | str]:
        seen: set[int] = set()
        for i, item in enumerate(ports):
            local, remote = forward_ports(item)
            if not (1 <= local <= 65535 and 1 <= remote <= 65535):
                raise ValueError(f"[{i}] {item!r} is not a port or local:remote pair; accepted: 1-65535, e.g. 6006 "
                                 "or '16006:6006'")
            if local in seen:
                raise ValueError(f"[{i}] forwards local port {local} twice; accepted: each local port once")
            seen.add(local)
        if len(ports) > MAX_FORWARDS:
            raise ValueError(f"lists {len(ports)} ports; accepted: at most {MAX_FORWARDS}")
        return ports

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
            _, slash, prefix = raw.partition("/")
            if slash and len(prefix) > 1 and prefix.startswith("0"):
                raise ValueError(f"[{i}] {raw!r} writes its prefix length with a leading zero; accepted: "
                                 f"{raw.partition('/')[0]}/{prefix.lstrip('0') or '0'}")
            try:
                net = ipaddress.ip_network(raw, strict=True)
            except ValueError:
                loose = _loose_network(raw)
                problem = ("is not a valid CIDR: its host bits are set (did you mean " + loose + "?)" if loose
                           else "is not a valid CIDR: not an IPv4 or IPv6 network")
                raise ValueError(f"[{i}] {raw!r} {problem}; accepted: a network such as 203.0.113.7/32 or "
                                 "2001:db8::7/128") from None
            minimum = v.MIN_SSH_PREFIX_V4 if net.version == 4 else v.MIN_SSH_PREFIX_V6
            if net.prefixlen < minimum:
                raise ValueError(
                    f"[{i}] {raw!r} would open SSH to {'the whole internet' if net.prefixlen == 0 else 'too many addresses'}; "
                    f"accepted: IPv4 prefixes of /{v.MIN_SSH_PREFIX_V4} or longer, IPv6 of /{v.MIN_SSH_PREFIX_V6} or longer, "
                    "e.g. 203.0.113.7/32"
                )
            for special, label in SSH_UNREACHABLE.items():
                if special.version == net.version and net.overlaps(special):  # type: ignore[arg-type]
                    raise ValueError(f"[{i}] {raw!r} is {label} space, which no SSH client connects from; accepted: "
                                     "your public address, e.g. 203.0.113.7/32")
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
            keys.key_type(key, all_key_types())
        except keys.PublicKeyError as exc:
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
                raise ValueError("mode ssh needs exactly one of publicKey or keyName; accepted: publicKey (a key pair is "
                                 "created from it) or keyName (an existing key pair)")
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
    model_config = ConfigDict(json_schema_extra={"allOf": [together("signal", "process"), together("process", "signal")]})

    enabled: bool = Field(True, description="false only for on-demand experiments.")
    bucket: str | None = Field(None, description="An existing bucket; a new one is created when omitted.",
                               json_schema_extra={"anyOf": [{"type": "string", "pattern": schema_pattern(BUCKET_NAME)},
                                                            {"type": "null"}]})
    prefix: str = Field("checkpoints/", description="Key prefix for this experiment's checkpoints.",
                        max_length=PREFIX_MAX_LENGTH,
                        json_schema_extra={"pattern": schema_pattern(KEY_PREFIX), "not": {"pattern": "^_gpulease(/|$)"}})
    interval_minutes: int = Field(15, ge=1, le=1440, description="How often the watchdog syncs /data/checkpoints.")
    retain: bool = Field(True, description="Keep a created bucket when the stack is destroyed.")
    lifecycle: LifecycleSpec = Field(default_factory=LifecycleSpec)
    hook: str | None = Field(
        None,
        max_length=HOOK_MAX_LENGTH, json_schema_extra=COMMAND_SCHEMA,
        description="Command run before a checkpoint sync on a spot notice or the deadline, e.g. \"pkill -USR1 -f '[t]rain.py'\" (a pattern that cannot match the hook's own shell).",
    )
    signal: str | None = Field(
        None,
        description="A signal sent to the training process before a final sync (instead of or besides hook), e.g. USR1.",
        json_schema_extra={"pattern": schema_pattern(any_case("(SIG)?(" + "|".join(CHECKPOINT_SIGNALS) + ")"))},
    )
    process: str | None = Field(
        None,
        max_length=HOOK_MAX_LENGTH, json_schema_extra=COMMAND_SCHEMA,
        description="Part of the training process's command line that signal is sent to, e.g. train.py.",
    )
    hook_timeout_seconds: int = Field(
        120,
        ge=5,
        le=1800,
        description="How long the hook (or the signalled process) may take before the sync starts anyway; "
        "always cut short to fit the spot notice window.",
    )

    @field_validator("hook", "process")
    @classmethod
    def _hook(cls, value: str | None) -> str | None:
        return plain_command(value, "hook command")

    @field_validator("signal")
    @classmethod
    def _signal(cls, name: str | None) -> str | None:
        if name is None:
            return None
        # ASCII first: str.upper() makes "SIGUSR1" of "\u017figusr1" (long s) and of "s\u0131gusr1" (dotless i).
        bare = name.upper().removeprefix("SIG") if name.isascii() else ""
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
        if name is not None and not BUCKET_NAME.match(name):
            raise ValueError(f"{name!r} is not a bucket name; accepted: 3-63 lowercase letters, digits, dots and hyphens")
        return name

    @field_validator("prefix")
    @classmethod
    def _prefix(cls, prefix: str) -> str:
        if not KEY_PREFIX.match(prefix) or len(prefix) > PREFIX_MAX_LENGTH:
            raise ValueError(f"{prefix!r} is not a clean key prefix; accepted: folder names of letters, digits and "
                             f"! _ . ' ( ) - (no *: it would be a wildcard in the role's grants), joined by /, at most {PREFIX_MAX_LENGTH} characters, no leading slash, "
                             "no empty, . or .. part (e.g. 'checkpoints/' or 'team/llama/')")
        if prefix.split("/", 1)[0] == "_gpulease":  # the bake records' folder (image_bake.RECORDS_ROOT)
            raise ValueError(f"{prefix!r} starts with _gpulease/, the bake records' folder; accepted: another first folder")
        return prefix if prefix.endswith("/") else prefix + "/"


class ImageSpec(SpecModel):
    # At most one image source (source_problems; id with family has its own message).
    model_config = ConfigDict(json_schema_extra={"not": {"anyOf": [
        {"allOf": [given(a), given(b)]} for a, b in (("id", "family"), ("id", "fromStack"), ("family", "fromStack"))]}})

    id: str | None = Field(None, description="An image id (ami-... / an Alibaba image id).")
    family: str | None = Field(None, description="A family resolved by lookup to the newest image.")
    root_disk_gb: int = Field(100, ge=30, le=2048)
    # --- personal images (components/image_bake.py) ---
    bake: bool = Field(False, description="Bake an image of the running instance once its readiness passed (a "
                       "second pulumi up after the bootstrap reported ready).")
    retain_days: int = Field(30, ge=1, le=3650, description="The baked image's retention (tag gpulease:retain-until).")
    from_stack: str | None = Field(None, description="Use the image another stack baked (a stack reference: "
                                   "stack, project/stack or org/project/stack).",
                                   json_schema_extra={"pattern": schema_pattern(STACK_REFERENCE)})

    @field_validator("from_stack")
    @classmethod
    def _from_stack(cls, value: str | None) -> str | None:
        if value is not None and not STACK_REFERENCE.match(value):
            raise ValueError(f"{value!r} is not a stack reference; accepted: stack, project/stack or org/project/stack "
                             "(letters, digits, . _ -)")
        return value

    def source_problems(self, rules: object) -> list[tuple[str, str]]:
        """At most one image source: ``id``, ``family`` or ``fromStack``."""
        given = [name for name, value in (("id", self.id), ("family", self.family), ("fromStack", self.from_stack))
                 if value is not None]
        if len(given) > 1 and given != ["id", "family"]:  # id with family has its own message
            return [("image", f"gives {' and '.join(given)}; accepted: one of id, family or fromStack")]
        return []


class NetworkSpec(SpecModel):
    vpc_id: str | None = None
    subnet_id: str | None = Field(None, description="AWS subnet or Alibaba vSwitch id; the default VPC otherwise.")
    availability_zone: str | None = Field(None, description="Pin the zone; otherwise the first zone offering the type.")


class WatchdogSpec(SpecModel):
    idle_gpu_percent: int = Field(5, ge=0, le=100, description="Below this GPU utilization the GPU counts as idle.")
    warn_minutes: int = Field(15, ge=0, le=240, description="Run the warning hook this long before the deadline.")
    warn_hook: str | None = Field(None, max_length=HOOK_MAX_LENGTH, json_schema_extra=COMMAND_SCHEMA, description="Command run when the deadline is near.")
    final_sync_minutes: int = Field(
        5, ge=1, le=60, description="Run the checkpoint hook and the final sync this long before the deadline, then shut down."
    )
    busy_marker: str = Field(
        "/data/busy",
        max_length=PATH_MAX_LENGTH, json_schema_extra={**PATH_SCHEMA, "pattern": schema_pattern(ABSOLUTE_FILE)},
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

    @field_validator("warn_hook")
    @classmethod
    def _warn_hook(cls, value: str | None) -> str | None:
        return plain_command(value, "hook command")

    @field_validator("busy_marker")
    @classmethod
    def _busy_marker(cls, path: str) -> str:
        plain_path(path)
        if not ABSOLUTE_FILE.match(path):
            raise ValueError(f"{path!r} is not an absolute path of a file; accepted: e.g. /data/busy")
        return path
