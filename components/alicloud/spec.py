"""What Alibaba Cloud accepts in a stack's spec: disk categories and sizes, image families, storage classes, ids,
keys, tag rules, release-time lead.

No Pulumi here: the spec imports this module to validate a stack before anything is registered.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from components.spec_rules import CloudSpecRules, Problem
from gpulease.core import vocabulary as v

if TYPE_CHECKING:
    from components.spec.experiment import ExperimentSpec

# Image families resolved to the newest matching public image that supports the instance type, and whether the
# NVIDIA driver comes with it. Alibaba Cloud's public images carry no GPU driver: its documentation ("Create an
# instance equipped with NVIDIA GPUs") has the driver installed at first boot by its auto-install script passed
# in RunInstances UserData, or taken from a Marketplace image; "if you use an image without a pre-installed GPU
# driver, you must install the GPU driver". Alibaba's script is not used: it reads its mirror from the metadata
# service without a token, which ``http_tokens = required`` refuses. So on this family (``absent``) the bootstrap
# installs the pinned driver from the Ubuntu archive (``components.userdata.settings.NVIDIA_DRIVER_PACKAGES``;
# AWS's ``ubuntu-22.04`` family gets the same install), loads it, and readiness fails, naming the driver, when
# nvidia-smi cannot see the GPU (docs/provider-facts.md).
IMAGE_FAMILIES: dict[str, dict[str, Any]] = {
    "ubuntu-22.04": {"owners": "system", "name_regex": r"^ubuntu_22_04_x64_20G_alibase_", "nvidia_driver": "absent"},
}

# --- runtime -----------------------------------------------------------------------------------------------
# "the release time must be at least 30 minutes later than the current time" (auto_release_time, pulumi_alicloud
# ecs.Instance docstring / RunInstances AutoReleaseTime), and the 30 minutes count from the instance's creation:
# 15 more minutes for the VPC, RAM role and bucket first (the deadline is fixed before them).
MIN_RUNTIME_MINUTES = v.MIN_RUNTIME_MINUTES["alicloud"]  # the release floor + 15 minutes

# --- data disks --------------------------------------------------------------------------------------------
# Disk sizes by category (pulumi_alicloud ecs.EcsDisk ``size`` docstring, from the ECS CreateDisk reference):
# cloud_efficiency / cloud_ssd 20-32,768, cloud_auto 1-65,536, cloud_essd_entry 10-32,768 GiB; cloud_essd by
# performance level: PL0 1-65,536, PL1 (the default) 20-65,536, PL2 461-65,536, PL3 1,261-65,536.
DISK_SIZES = {"cloud_efficiency": (20, 32768), "cloud_ssd": (20, 32768), "cloud_auto": (1, 65536),
              "cloud_essd_entry": (10, 32768)}
ESSD_SIZES = {"PL0": (1, 65536), "PL1": (20, 65536), "PL2": (461, 65536), "PL3": (1261, 65536)}

# --- security group rules ----------------------------------------------------------------------------------
# "The total number of outbound and inbound rules in each security group cannot exceed 200"
# (https://www.alibabacloud.com/help/en/ecs/api-authorizesecuritygroup); the kit adds its own egress rules.
SG_RULES = 200
KIT_RULES = 2


# --- regions -----------------------------------------------------------------------------------------------
# Alibaba Cloud's public regions: the region list of the Alibaba Cloud SDK core's endpoint data
# (aliyunsdkcore/data/endpoints.json, "regions", the version pinned in constraints.txt) and the regions of the
# "Regions and zones" page (https://www.alibabacloud.com/help/en/ecs/regions-and-zones) that it lacks.
REGIONS = (
    "cn-qingdao", "cn-beijing", "cn-zhangjiakou", "cn-huhehaote", "cn-wulanchabu", "cn-hangzhou", "cn-shanghai",
    "cn-nanjing", "cn-fuzhou", "cn-shenzhen", "cn-heyuan", "cn-guangzhou", "cn-chengdu", "cn-wuhan-lr", "cn-hongkong",
    "ap-northeast-1", "ap-northeast-2", "ap-south-1", "ap-southeast-1", "ap-southeast-2", "ap-southeast-3",
    "ap-southeast-5", "ap-southeast-6", "ap-southeast-7", "us-east-1", "us-west-1", "na-south-1", "eu-central-1",
    "eu-west-1", "me-east-1", "me-central-1",
)


class AlicloudSpecRules(CloudSpecRules):
    name = "alicloud"
    title = "Alibaba Cloud"
    # Disks: the categories a data disk may have (sizes by category above), and an existing disk's id.
    disk_types = ("cloud_essd", "cloud_auto", "cloud_essd_entry", "cloud_ssd", "cloud_efficiency")
    default_disk_type = "cloud_essd"
    disk_id = re.compile(r"^d-[0-9a-z]{8,24}\Z")
    disk_id_example = "d-bp1abcdefghij1234567"
    # OSS lifecycle transition targets.
    storage_classes = ("IA", "Archive", "ColdArchive", "DeepColdArchive")
    # Images: the public family above; an image id has no shape the spec could check.
    image_families = IMAGE_FAMILIES
    default_image_family = "ubuntu-22.04"
    image_id = None
    # No inbound port: sessions through Cloud Assistant.
    session_mode = "cloud-assistant"
    session_what = "Alibaba Cloud's"
    # ECS ImportKeyPair: "The imported key pair must support one of the following encryption methods: rsa, dsa,
    # ssh-rsa, ssh-dss, ecdsa" (https://www.alibabacloud.com/help/en/ecs/developer-reference/
    # api-ecs-2014-05-26-importkeypair). ED25519 is not listed. DSA keys are refused anyway: OpenSSH disabled them
    # by default in 7.0 as too weak.
    key_types = ("ssh-rsa", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521")
    key_example = "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAA... you@host (or ssh-rsa ...)"
    # Alibaba Cloud's tag rules (ECS and OSS, the stricter of the two) live in the vocabulary: the pack reads them too.
    max_tags = v.ALICLOUD_MAX_TAGS
    tag_value_max = v.ALICLOUD_TAG_VALUE_MAX_LEN
    bucket_scheme = "oss://"
    regions = REGIONS
    # The deadline: ECS's release time must be at least 30 minutes away (above).
    min_runtime_minutes = MIN_RUNTIME_MINUTES
    short_runtime_reason = (f"Alibaba Cloud refuses a release time under {v.ALICLOUD_MIN_RELEASE_MINUTES} minutes away "
                            "and the deadline is fixed before the instance is created")
    min_deadline_lead_minutes = v.ALICLOUD_MIN_RELEASE_MINUTES

    def disk_problems(
        self, disk_type: str, size_gb: int, iops: int | None, throughput: int | None, performance_level: str | None
    ) -> list[Problem]:
        problems: list[Problem] = []
        if disk_type == "cloud_essd":
            level = performance_level or "PL1"
            low, high = ESSD_SIZES[level]
            what = f"cloud_essd at {level}"
        else:
            low, high = DISK_SIZES.get(disk_type, (20, 32768))
            what = disk_type
        if not low <= size_gb <= high:
            problems.append(("dataDisk.sizeGb", f"{size_gb} GiB is outside what Alibaba Cloud accepts for {what}; accepted: {low}-{high}"))
        if iops is not None:
            problems.append(("dataDisk.iops", "applies to AWS disks only; accepted on alicloud: performanceLevel (PL0-PL3) instead"))
        if throughput is not None:
            problems.append(("dataDisk.throughput", "applies to AWS gp3 only; accepted on alicloud: omit it (use "
                             "performanceLevel)"))
        if performance_level is not None and disk_type != "cloud_essd":
            problems.append(("dataDisk.performanceLevel", "applies to cloud_essd only; accepted: omit it, or dataDisk.type: "
                             "cloud_essd"))
        return problems

    def cidr_count_problems(self, cidrs: list[str]) -> list[Problem]:
        most = SG_RULES - KIT_RULES
        if len(cidrs) > most:
            return [("ssh.allowedCidrs", f"{len(cidrs)} sources need {len(cidrs)} rules; an Alibaba Cloud security group holds "
                     f"{SG_RULES} and gpulease adds {KIT_RULES}; accepted: at most {most} CIDRs")]
        return []

    def extra_problems(self, spec: ExperimentSpec) -> list[Problem]:
        """What Alibaba Cloud cannot do as asked: OSS keeps no count of noncurrent versions, and values that
        become tags must meet its stricter tag rules (128 characters, reserved prefixes)."""
        problems: list[Problem] = []
        if "noncurrent_versions_to_keep" in spec.checkpoints.lifecycle.model_fields_set:
            problems.append(
                ("checkpoints.lifecycle.noncurrentVersionsToKeep", "OSS cannot keep a number of noncurrent versions; "
                 "accepted on alicloud: omit it (noncurrent versions expire after noncurrentDays)")
            )
        for key, value in spec.tags.items():
            problem = v.alicloud_tag_problem(key, value)
            if problem:
                problems.append((f"tags.{key}", f"{problem}; accepted: keys of 1-{v.ALICLOUD_TAG_KEY_MAX_LEN} and values "
                                 f"of up to {v.ALICLOUD_TAG_VALUE_MAX_LEN} characters, neither starting with aliyun, "
                                 "acs:, http:// or https://"))
        for field, value in (
            ("project", spec.project), ("costCenter", spec.cost_center),
            ("onDemandReason", spec.on_demand_reason), ("ciRun", spec.ci_run),
        ):
            if not value:
                continue
            if len(value) > v.ALICLOUD_TAG_VALUE_MAX_LEN:
                problems.append(
                    (field, f"is {len(value)} characters and becomes a tag value; accepted on Alibaba Cloud: up to "
                     f"{v.ALICLOUD_TAG_VALUE_MAX_LEN}")
                )
            elif value.lower().startswith(v.ALICLOUD_RESERVED_TAG_PREFIXES):
                problems.append(
                    (field, "becomes a tag value and starts with a prefix Alibaba Cloud reserves; accepted: "
                     f"a value not starting with {', '.join(v.ALICLOUD_RESERVED_TAG_PREFIXES)}")
                )
        if spec.owner.lower().startswith(v.ALICLOUD_RESERVED_TAG_PREFIXES):
            problems.append(("owner", "becomes a tag value and starts with a prefix Alibaba Cloud reserves; accepted: an "
                             f"address not starting with {', '.join(v.ALICLOUD_RESERVED_TAG_PREFIXES)}"))
        return problems


RULES = AlicloudSpecRules()
