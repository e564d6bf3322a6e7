"""One experiment: one GPU instance, one data disk, a checkpoint prefix; checked against its cloud's rules.

The checks that depend on the cloud ask ``components.spec.clouds.SPEC_RULES[cloud]`` (each cloud's ``spec.py``);
the cross-field problems are gathered in order and raised together, each with its own field path.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Literal

from pydantic import ConfigDict, Field, ValidationInfo, field_validator, model_validator

from components.spec import keys
from components.spec.cloud_schema import add_cloud_rules
from components.spec.clouds import SPEC_RULES, Cloud, all_key_types
from components.spec.cluster import MAX_NODES, ClusterSpec, cluster_problems
from components.spec.deadline_form import DEADLINE_PATTERN, DEADLINE_YEARS, parse_deadline
from components.spec.iam import IamSpec
from components.spec.run import BudgetAlertsSpec, JobSpec, VerifySpec, run_problems
from components.spec.sections import (
    CheckpointSpec,
    DataDiskSpec,
    ImageSpec,
    NetworkSpec,
    SshSpec,
    WatchdogSpec,
    tag_safe,
)
from components.spec.spot import SpotSpec, default_recover, spot_problems
from components.spec.suggest import nearest_hint
from components.spec.tags import RESERVED_TAG_PREFIXES, TAGS_SCHEMA
from components.spec.workflow import DataSpec, Phase, PrepSpec, workflow_problems
from components.spec_rules import CloudSpecRules, Problem
from components.tagging import experiment_tags
from gpulease.core import clock
from gpulease.core import vocabulary as v
from gpulease.core.model import SpecModel
from gpulease.core.schema_pattern import PY_SPACE, schema_pattern
from gpulease.core.sizing.resolve import GpuSpec
from gpulease.core.validation_words import a_or_an

DNS_LABEL = re.compile(r"^[a-z]([a-z0-9-]{0,38}[a-z0-9])?$")  # also the JSON schema's pattern: fullmatch here
BUDGET_USD_MAX = 1_000_000
"""Far above the worst case of the largest stack the spec accepts (20 nodes of the dearest type for 168 hours is
about $300,000); a larger number is a typo, and 1e308 would overflow the cost arithmetic."""
_END = "(?![\\s\\S])"
"""How schema_pattern ends a pattern."""

class ExperimentSpec(SpecModel):
    """One experiment: one GPU instance, one data disk, a checkpoint prefix."""

    model_config = ConfigDict(json_schema_extra=add_cloud_rules)
    name: str = Field(..., description="DNS-safe experiment name (lowercase letters, digits, hyphens).",
                      json_schema_extra={"pattern": schema_pattern(DNS_LABEL)})
    owner: str = Field(..., description="Owner email; every resource is tagged with it.",
                       json_schema_extra={"pattern": schema_pattern(v.EMAIL)})
    project: str = Field(..., min_length=1, max_length=64, json_schema_extra={"pattern": schema_pattern(v.TAG_VALUE_PATTERN)})
    cost_center: str = Field(..., min_length=1, max_length=64,
                             json_schema_extra={"pattern": schema_pattern(v.TAG_VALUE_PATTERN)})
    budget_usd: float = Field(..., gt=0, le=BUDGET_USD_MAX, description="Budget for the whole experiment in USD.")
    tags: dict[str, str] = Field(default_factory=dict, description="Extra tags on every resource.",
                                 json_schema_extra=TAGS_SCHEMA)
    cloud: Cloud = "aws"
    region: str | None = Field(None, description="Defaults to the provider's region config (aws:region / alicloud:region).")
    gpu: GpuSpec
    # A cluster (components/spec/cluster.py): ``gpu`` describes one node; every other section applies to all nodes.
    nodes: int = Field(1, ge=1, le=MAX_NODES, description="GPU nodes of this experiment (a cluster); gpu describes one.")
    cluster: ClusterSpec = Field(default_factory=ClusterSpec, description="How the nodes meet (nodes above 1).")
    market: Literal["spot", "on-demand"] = "spot"
    max_spot_price_usd: float | None = Field(
        None,
        ge=0.001,
        le=1000,
        description="Hourly cap for a spot instance in USD (0.001-1000, above any GPU's on-demand price); the "
        "on-demand price otherwise.",
    )
    on_demand_reason: str | None = Field(
        None, description="Why this experiment cannot run on spot.", max_length=v.TAG_VALUE_MAX_LEN,
        # A tag value of at least 10 characters once stripped (the tag's pattern allows no other space).
        json_schema_extra={"pattern": schema_pattern(v.TAG_VALUE_PATTERN), "allOf": [{"pattern": "[^ ].{8,}[^ ]"}]})
    max_runtime_hours: float = Field(..., gt=0, le=v.MAX_RUNTIME_HOURS_CAP, description="Hard deadline after creation.")
    expires_at: datetime | None = Field(
        None, json_schema_extra={"pattern": DEADLINE_PATTERN, "format": "date-time"},
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
    iam: IamSpec = Field(default_factory=IamSpec, description="The IAM roles the stack creates (AWS).")
    watchdog: WatchdogSpec = Field(default_factory=WatchdogSpec)
    # After market, nodes and checkpoints: its default is decided from them (components/spec/spot.py).
    spot: SpotSpec = Field(default_factory=SpotSpec, validate_default=True,
                           description="What happens when the cloud reclaims a spot instance.")
    ci_run: str | None = Field(
        None,
        description="The CI run an ephemeral stack belongs to (set by gpulease ephemeral); tagged on every resource.",
        # A tag value once stripped (the loader strips it).
        json_schema_extra={"pattern": schema_pattern(f"[{PY_SPACE}]*" + schema_pattern(v.TAG_VALUE_PATTERN).removesuffix(_END)[1:] + f"[{PY_SPACE}]*"),
                           "maxLength": v.TAG_VALUE_MAX_LEN, "allOf": [{"pattern": f"[^{PY_SPACE}]"}]},
    )
    # --- the workflow before training (components/spec/workflow.py) ---
    phase: Phase = Field("train", description="prep: a CPU instance on the same disk and bucket; train: the GPU "
                         "instance; parked: no instance, the disk and bucket stay.")
    prep: PrepSpec = Field(default_factory=PrepSpec, description="The preparation phase's instance and deadline.")
    data: DataSpec = Field(default_factory=DataSpec, description="Data staged on the instance before readiness.")
    # --- run sections (components/spec/run.py) ---
    verify: VerifySpec | None = Field(None, description="A short verification run before the long one.")
    job: JobSpec | None = Field(None, description="The training job the instance starts in a tmux session.")
    budget_alerts: BudgetAlertsSpec = Field(
        default_factory=BudgetAlertsSpec, description="Who is notified, and at which shares of budgetUsd."
    )

    @field_validator("name")
    @classmethod
    def _name(cls, name: str) -> str:
        if not DNS_LABEL.fullmatch(name):
            raise ValueError(
                f"{name!r} is not DNS-safe; accepted: 1-40 lowercase letters, digits and hyphens, starting with a letter"
            )
        return name

    @field_validator("owner")
    @classmethod
    def _owner(cls, owner: str) -> str:
        if not v.EMAIL.match(owner):
            raise ValueError(f"{owner!r} is not an email address; accepted: e.g. alice@example.com")
        return owner

    @field_validator("project", "cost_center")
    @classmethod
    def _tag_text(cls, value: str) -> str:
        return tag_safe(value, "this value")

    @field_validator("ci_run")
    @classmethod
    def _ci_run(cls, value: str | None) -> str | None:
        if value is None:
            return value
        if not value.strip():
            raise ValueError("is empty; accepted: an identifier of the CI run, e.g. octo/repo/actions/runs/123")
        return tag_safe(value.strip(), "ciRun")

    @field_validator("on_demand_reason")
    @classmethod
    def _reason(cls, value: str | None) -> str | None:
        if value is None:
            return value
        if len(value.strip()) < 10:
            raise ValueError("is too short to review; accepted: a sentence of at least 10 characters")
        return tag_safe(value.strip(), "the reason")

    @field_validator("tags")
    @classmethod
    def _tags(cls, tags: dict[str, str]) -> dict[str, str]:
        for key, value in tags.items():
            if key.startswith(v.TAG_PREFIX) or key.lower().startswith(RESERVED_TAG_PREFIXES):
                raise ValueError(
                    f"key {key!r} uses a reserved prefix; accepted: keys not starting with {v.TAG_PREFIX}, aws:, aliyun or acs:"
                )
            if not key or len(key) > v.TAG_KEY_MAX_LEN or not v.TAG_VALUE_PATTERN.match(key):
                raise ValueError(f"key {key!r} is not a valid tag key on both clouds; accepted: 1-{v.TAG_KEY_MAX_LEN} "
                                 "letters, digits, spaces and + - = . _ : / @")
            tag_safe(value, f"tags.{key}")
        return tags

    @field_validator("spot")
    @classmethod
    def _spot_default(cls, spot: SpotSpec, info: ValidationInfo) -> SpotSpec:
        """``recover`` decided here, so that every reader sees a bool: the user's value, or true exactly on a
        single-node spot experiment with checkpoints (a field that failed its own check counts as not given)."""
        if spot.recover is not None:
            return spot
        data = info.data
        checkpoints = data.get("checkpoints")
        enabled = checkpoints is not None and checkpoints.enabled
        return spot.model_copy(update={"recover": default_recover(data.get("market", ""), enabled, data.get("nodes", 0))})

    @field_validator("expires_at", mode="before")
    @classmethod
    def _expires_form(cls, value: object) -> object:
        return parse_deadline(value) if isinstance(value, str) else value

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
        problems: list[Problem] = []
        if self.market == "on-demand" and not self.on_demand_reason:
            problems.append(
                ("onDemandReason", "on-demand costs 2-4x spot; accepted: a reason, e.g. 'interactive debugging - cannot be interrupted'")
            )
        if self.market == "spot" and self.on_demand_reason:
            problems.append(("onDemandReason", "is only for market: on-demand; accepted: omit it on spot"))
        if self.market == "on-demand" and self.max_spot_price_usd is not None:
            problems.append(("maxSpotPriceUsd", "is only for market: spot; accepted: omit it on on-demand"))
        if self.market == "spot" and not self.checkpoints.enabled:
            problems.append(
                ("checkpoints.enabled", "a spot instance can be reclaimed at any time; accepted: true (checkpoints) for spot")
            )
        rules = self.rules
        for other in SPEC_RULES.values():
            if other is not rules and self.ssh.mode == other.session_mode:
                problems.append(("ssh.mode", f"{other.session_mode} is {other.session_what}; accepted on {rules.name}: "
                                 f"ssh or {rules.session_mode}"))
        disk = self.data_disk
        if disk.type is not None and disk.type not in rules.disk_types:
            problems.append(("dataDisk.type", self._not_ours("disk_types", "disk type", disk.type)))
        elif disk.existing_volume_id is None:
            problems += rules.disk_problems(self.disk_type, disk.size_gb, disk.iops, disk.throughput, disk.performance_level)
        runtime = rules.runtime_problems(self.max_runtime_hours, self.watchdog.final_sync_minutes, self.expires_at is not None)
        problems += runtime
        problems += rules.runtime_problems(self.prep.max_runtime_hours, self.watchdog.final_sync_minutes, False,
                                           field="prep.maxRuntimeHours")
        if self.phase == "parked" and not disk.retain:
            problems.append(("dataDisk.retain", "false with phase: parked: parking keeps the data disk with no instance, "
                             "and a disk not retained is swept once unattached; accepted: dataDisk.retain: true while "
                             "phase is parked (or another phase)"))
        problems += self._ssh_problems()
        problems += self._tag_problems()
        problems += run_problems(self, runtime_ok=not runtime)
        problems += cluster_problems(self)
        problems += spot_problems(self)
        vol = self.data_disk.existing_volume_id
        if vol is not None and not rules.disk_id.match(vol):
            problems.append(("dataDisk.existingVolumeId", f"{vol!r} is not {a_or_an(rules.title)} disk id; accepted: e.g. {rules.disk_id_example}"))
        for i, t in enumerate(self.checkpoints.lifecycle.transitions):
            if t.storage_class not in rules.storage_classes:
                problems.append(
                    (f"checkpoints.lifecycle.transitions[{i}].storageClass",
                     self._not_ours("storage_classes", "storage class", t.storage_class))
                )
            elif t.days < rules.transition_min_days.get(t.storage_class, 0):
                least = rules.transition_min_days[t.storage_class]
                problems.append(
                    (f"checkpoints.lifecycle.transitions[{i}].days", f"{t.days} day(s) before {t.storage_class}: "
                     f"{rules.title} refuses a transition to {t.storage_class} before {least} days; accepted: {least} or more")
                )
        image = self.image
        if image.id is not None and image.family is not None:
            problems.append(("image", "gives both id and family; accepted: id or family, not both"))
        if image.id is not None and rules.image_id is not None and not rules.image_id.match(image.id):
            problems.append(("image.id", f"{image.id!r} is not {rules.image_id_what}; accepted: e.g. {rules.image_id_example}"))
        if image.family is not None and image.family not in rules.image_families:
            problems.append(("image.family", self._not_ours("image_families", "image family", image.family)))
        if self.iam.permissions_boundary is not None and self.cloud != "aws":
            problems.append(("iam.permissionsBoundary", f"is an AWS IAM setting; {self.cloud} RAM roles have no "
                             "permissions boundary; accepted: remove it on this cloud"))
        problems += workflow_problems(self.data.sources, rules.bucket_scheme.removesuffix("://"))
        problems += image.source_problems(rules)
        if image.bake and not self.checkpoints.enabled:
            problems.append(("image.bake", "the ready record a bake waits for is kept in the checkpoint bucket; "
                             "accepted: checkpoints.enabled true with image.bake"))
        if self.expires_at is not None:
            now = clock.utcnow()
            lead = timedelta(minutes=rules.min_deadline_lead_minutes)
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
            raise MultiFieldError(problems)
        return self

    def _not_ours(self, attribute: str, what: str, value: str) -> str:
        """Why ``value`` is refused as this cloud's ``what`` (a rules list ``attribute``): another cloud's value is
        named as such (``cloud`` defaults to aws), a near miss gets the nearest valid one."""
        ours = list(getattr(self.rules, attribute))
        accepted = f"accepted on {self.cloud}: {', '.join(ours)}"
        for name, other in SPEC_RULES.items():
            if name != self.cloud and value in getattr(other, attribute):
                default = " (cloud defaults to aws)" if self.cloud == "aws" else ""
                return (f"{value!r} is {a_or_an(other.title)} {what}, and this stack's cloud is {self.cloud}{default}; "
                        f"accepted: cloud: {name} to use it, or on {self.cloud}: {', '.join(ours)}")
        return f"{value!r} is not {a_or_an(self.rules.title)} {what}; {accepted}{nearest_hint(value, ours)}"

    def _builtin_tags(self) -> set[str]:
        """gpulease's own tag keys on this experiment's resources (the most any one resource carries): the keys of
        the tag set ``components.tagging`` builds, less the user's own."""
        most = experiment_tags(self, stack="", expires_at="", checkpoint_uri="", retain=True)
        return set(most) - set(self.tags)

    def _tag_problems(self) -> list[Problem]:
        """Tag count and value lengths the cloud accepts, for the user's tags and for the values that become
        gpulease's own tags; then what else the cloud refuses (``extra_problems``)."""
        problems: list[Problem] = []
        rules = self.rules
        builtin = self._builtin_tags()
        extra = [k for k in self.tags if k not in builtin]
        most = rules.max_tags
        if len(builtin) + len(extra) > most:
            problems.append(
                ("tags", f"{len(extra)} extra tags plus gpulease's {len(builtin)} exceed the {most} tags {self.cloud} allows "
                 f"per resource; accepted: at most {most - len(builtin)} tags here")
            )
        value_max = rules.tag_value_max
        if len(self.owner) > value_max:
            problems.append(("owner", f"is {len(self.owner)} characters and becomes a tag value; accepted on {self.cloud}: up to {value_max}"))
        if self.checkpoints.enabled:
            ck = self.checkpoints
            length = rules.checkpoint_uri_length(ck.bucket, ck.prefix, self.name)
            if length > value_max:
                room = len(ck.prefix) - (length - value_max)
                problems.append(
                    ("checkpoints.prefix", f"the checkpoint URI (bucket, prefix and run name, up to {length} characters) "
                     f"becomes the tag {v.TAG_CHECKPOINT_URI}; {self.cloud} accepts values of up to {value_max}; "
                     "accepted: a prefix of at most "
                     f"{max(room, 0)} characters here")
                )
        problems += rules.extra_problems(self)
        return problems

    def _ssh_problems(self) -> list[Problem]:
        """What the cloud's key-pair import and security-group quota would refuse."""
        problems: list[Problem] = []
        ssh = self.ssh
        if ssh.public_key:
            problem = self.rules.key_problem(keys.key_type(ssh.public_key, all_key_types()))
            if problem:
                problems.append(("ssh.publicKey", problem))
        problems += self.rules.cidr_count_problems(ssh.allowed_cidrs)
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

    @property
    def rules(self) -> CloudSpecRules:
        """What this experiment's cloud accepts (``components/<cloud>/spec.py``)."""
        return SPEC_RULES[self.cloud]

    @property
    def disk_type(self) -> str:
        return self.data_disk.type or self.rules.default_disk_type

    @property
    def image_family(self) -> str | None:
        if self.image.id is not None or self.image.from_stack is not None:
            return None
        return self.image.family or self.rules.default_image_family

    @property
    def nvidia_driver(self) -> str:
        """``preinstalled`` or ``absent`` for a family image; ``unknown`` for a pinned ``image.id`` (readiness)."""
        return self.rules.nvidia_driver(self.image_family)


class MultiFieldError(ValueError):
    """Cross-field problems, each with its own path, lifted into ``SpecError`` by ``load.format_errors``."""

    def __init__(self, problems: list[Problem]):
        super().__init__("; ".join(f"{path}: {msg}" for path, msg in problems))
        self.problems = problems
