"""The shared vocabulary: tag keys, limits and GPU-type detection.

Components, the policy pack, the cost estimator and the reaper import these names; none of them retypes a
tag key. Tag keys carry one prefix so that they never collide with a user's own tags and so that a sweep
can filter on them server-side.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime

TAG_PREFIX = "gpulease:"

TAG_OWNER = f"{TAG_PREFIX}owner"
TAG_PROJECT = f"{TAG_PREFIX}project"
TAG_EXPERIMENT = f"{TAG_PREFIX}experiment"
TAG_COST_CENTER = f"{TAG_PREFIX}cost-center"
TAG_BUDGET_USD = f"{TAG_PREFIX}budget-usd"
TAG_EXPIRES_AT = f"{TAG_PREFIX}expires-at"
TAG_MAX_RUNTIME_HOURS = f"{TAG_PREFIX}max-runtime-hours"
TAG_CHECKPOINT_URI = f"{TAG_PREFIX}checkpoint-uri"
TAG_ON_DEMAND_REASON = f"{TAG_PREFIX}on-demand-reason"
TAG_RETAIN = f"{TAG_PREFIX}retain"
TAG_MANAGED_BY = f"{TAG_PREFIX}managed-by"
TAG_CI_RUN = f"{TAG_PREFIX}ci-run"
TAG_STACK = f"{TAG_PREFIX}stack"
TAG_NODE = f"{TAG_PREFIX}node"
"""A cluster node's rank and the node count, ``<rank>/<nodes>`` (``0/4``): on every resource of that node only."""
TAG_VERIFY = f"{TAG_PREFIX}verify"
"""``<maxMinutes>min`` (``+resume`` when the resume is checked): the experiment declares a verification run."""
TAG_PHASE = f"{TAG_PREFIX}phase"
"""On a parked experiment's data disk only: ``parked``. The reaper never deletes a disk so tagged (its stack means
to keep it), whatever its retain and expires-at tags say."""
PHASE_PARKED = "parked"
TAG_MAX_HOURLY_USD = f"{TAG_PREFIX}max-hourly-usd"
"""On the instance only: its worst-case hourly price (the spot cap, else on-demand), for the watchdog's spend
estimate. A tag rather than a setting: a price refresh then updates a tag in place instead of the user-data."""


def verify_tag_value(max_minutes: int, resume: bool) -> str:
    """The ``gpulease:verify`` tag of an experiment that declares ``verify``: ``20min`` or ``20min+resume``."""
    return f"{max_minutes}min" + ("+resume" if resume else "")

MANAGED_BY_VALUE = "gpulease"
"""Value of ``TAG_MANAGED_BY`` on everything gpulease creates; the reaper acts on nothing else."""

NO_CHECKPOINTS = "none"
"""Value of ``TAG_CHECKPOINT_URI`` for an on-demand experiment that declares no checkpoint bucket."""

REQUIRED_TAGS: tuple[str, ...] = (
    TAG_OWNER,
    TAG_PROJECT,
    TAG_EXPERIMENT,
    TAG_COST_CENTER,
    TAG_BUDGET_USD,
    TAG_EXPIRES_AT,
    TAG_MAX_RUNTIME_HOURS,
    TAG_CHECKPOINT_URI,
    TAG_MANAGED_BY,
)
"""Tags every taggable resource of a stack carries (the policy pack's default list)."""

# Limits shared by the spec, the policies and the CLI.
MAX_RUNTIME_HOURS_CAP = 168.0
"""No experiment may run longer than a week without a new deadline."""
DEFAULT_POLICY_MAX_HOURS = 72.0
MIN_SSH_PREFIX_V4 = 16
MIN_SSH_PREFIX_V6 = 48
SSH_PORT = 22
ALICLOUD_MIN_RELEASE_MINUTES = 30
"""Alibaba Cloud refuses an ``auto_release_time`` less than 30 minutes in the future."""
MIN_RUNTIME_MINUTES = {"aws": 15, "alicloud": ALICLOUD_MIN_RELEASE_MINUTES + 15}
"""The shortest maxRuntimeHours each cloud's stack file accepts, in minutes (the reasons: components/*/spec.py)."""

# Tag values must survive both clouds' character rules (AWS: letters, digits, spaces and + - = . _ : / @;
# Alibaba OSS tags allow the same set). Free text such as an on-demand reason is validated against this.
EMAIL = re.compile(r"^[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}\Z")
"""What an owner is: an email address (the spec refuses anything else; the pack checks the owner tag with it)."""

TAG_VALUE_PATTERN = re.compile(r"^[A-Za-z0-9 +\-=._:/@]*\Z")
TAG_VALUE_MAX_LEN = 256
TAG_KEY_MAX_LEN = 128

# Instance families that carry GPUs or other ML accelerators, by name (the catalog adds the types it lists, see
# ``gpulease.core.compute.accelerators``).
#
# AWS (https://docs.aws.amazon.com/ec2/latest/instancetypes/ac.html, "Accelerated computing"): NVIDIA and AMD GPU
# families p*, g* (g4ad, g5g, g6f, gr6 ...) and the old cg1; AWS Trainium trn*, Inferentia inf*, Habana Gaudi dl1,
# Qualcomm AI 100 dl2q; FPGA f1/f2 and video transcoding vt1. Families with a suffix after a dash (p6-b200,
# p6e-gb200) are matched whole. No CPU family starts with p, g, trn, inf, dl, f or vt (the test checks every
# family of botocore's EC2 InstanceType enum).
_AWS_GPU_FAMILY = re.compile(r"^(?:cg1|g\d+[a-z]*|gr\d+[a-z]*|p\d+[a-z]*(?:-[a-z0-9]+)?)\.")
_AWS_ACCELERATOR_FAMILY = re.compile(r"^(?:trn\d+[a-z]*|inf\d+[a-z]*|dl\d+[a-z]*|f\d+|vt\d+)\.")
# Alibaba Cloud (https://www.alibabacloud.com/help/en/egs/instance-naming-conventions): ``ecs.<body><generation>
# <letters>[-suffix...].<size>``, the body gn (NVIDIA GPU), vgn / sgn (NVIDIA GRID vGPU), gi (Intel GPU), f (FPGA),
# with ebm (bare metal) or scc (super computing cluster) in front; a family may carry several dash suffixes
# (ecs.vgn6i-m4-vws.xlarge, ecs.gn7i-c8g1.2xlarge, ecs.sgn7i-vws-m2.xlarge). The CPU families (ecs.g7, ecs.ebmg7,
# ecs.sccg7) have no n / i after their g.
_ALICLOUD_GPU_FAMILY = re.compile(r"^ecs\.(?:ebm|scc)?(?:gn|vgn|sgn|gi)\d+[a-z]*(?:-[a-z0-9]+)*\.")
_ALICLOUD_ACCELERATOR_FAMILY = re.compile(r"^ecs\.(?:ebm|scc)?f\d+[a-z]*(?:-[a-z0-9]+)*\.")


def is_gpu_instance_type(instance_type: str | None) -> bool:
    """True when the AWS or Alibaba Cloud instance type carries at least one GPU (what the kit's images drive)."""
    if not instance_type:
        return False
    return bool(_AWS_GPU_FAMILY.match(instance_type) or _ALICLOUD_GPU_FAMILY.match(instance_type))


def is_accelerated_instance_type(instance_type: str | None) -> bool:
    """True for a GPU type and for the other accelerated families (Trainium, Inferentia, Gaudi, FPGA, video
    transcoding): the expensive hardware the policy pack guards, whatever framework runs on it."""
    if not instance_type:
        return False
    return is_gpu_instance_type(instance_type) or bool(
        _AWS_ACCELERATOR_FAMILY.match(instance_type) or _ALICLOUD_ACCELERATOR_FAMILY.match(instance_type))


def rfc3339(moment: datetime) -> str:
    """The one RFC 3339 UTC form used in tags and outputs: ``2026-11-30T10:00:00Z`` (whole seconds)."""
    if moment.tzinfo is None:
        raise ValueError("deadline must be timezone-aware")
    return moment.astimezone(UTC).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(value: str) -> datetime:
    """Parse an RFC 3339 timestamp with an explicit offset (``Z`` or ``+hh:mm``); naive times are refused."""
    if not isinstance(value, str) or not re.match(
        r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$", value
    ):
        raise ValueError(f"{value!r} is not an RFC 3339 timestamp with a UTC offset, e.g. 2026-11-30T10:00:00Z")
    moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return moment.astimezone(UTC)


def is_managed(tags: Mapping[str, str] | None) -> bool:
    """True when a resource's tags say gpulease manages it."""
    return bool(tags) and tags.get(TAG_MANAGED_BY) == MANAGED_BY_VALUE


def tags_from_list(items: list[dict] | None, key: str = "Key", value: str = "Value") -> dict[str, str]:
    """Turn a cloud API tag list (``[{"Key": k, "Value": v}]``) into a dict."""
    return {item[key]: item.get(value, "") for item in items or []}

TAG_RETAIN_UNTIL = f"{TAG_PREFIX}retain-until"
"""RFC 3339 UTC end of a snapshot's retention; the reaper deletes a managed snapshot only after it."""

# Alibaba Cloud tag rules (ECS tags and OSS bucket tags, the stricter of the two): at most 20 tags on a
# resource, keys up to 64 characters (OSS), values up to 128, and neither may start with a reserved prefix.
ALICLOUD_MAX_TAGS = 20
ALICLOUD_TAG_KEY_MAX_LEN = 64
ALICLOUD_TAG_VALUE_MAX_LEN = 128
ALICLOUD_RESERVED_TAG_PREFIXES: tuple[str, ...] = ("aliyun", "acs:", "http://", "https://")
"""Compared case-insensitively; OSS also refuses keys starting with ``acs`` without the colon."""


def alicloud_tag_problem(key: str, value: str | None) -> str | None:
    """Why Alibaba Cloud would refuse this tag (ECS or OSS rules), or None when it is accepted."""
    lowered_key = key.lower()
    if not key or len(key) > ALICLOUD_TAG_KEY_MAX_LEN:
        return f"tag key {key!r} must be 1-{ALICLOUD_TAG_KEY_MAX_LEN} characters on Alibaba Cloud"
    if lowered_key.startswith((*ALICLOUD_RESERVED_TAG_PREFIXES, "acs")):
        return f"tag key {key!r} starts with a prefix Alibaba Cloud reserves (aliyun, acs, http://, https://)"
    if value is None:
        return None
    if len(value) > ALICLOUD_TAG_VALUE_MAX_LEN:
        return f"tag {key!r} has a value of {len(value)} characters; Alibaba Cloud accepts up to {ALICLOUD_TAG_VALUE_MAX_LEN}"
    if value.lower().startswith(ALICLOUD_RESERVED_TAG_PREFIXES):
        return f"tag {key!r} has a value starting with a prefix Alibaba Cloud reserves (aliyun, acs:, http://, https://)"
    return None
