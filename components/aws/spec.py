"""What AWS accepts in a stack's spec: disk types and limits, image families, storage classes, ids, keys, tags.

No Pulumi here: the spec imports this module to validate a stack before anything is registered.
"""

from __future__ import annotations

import ipaddress
import re
from typing import TYPE_CHECKING, Any

from components.spec_rules import CloudSpecRules, Problem
from gpulease.core import vocabulary as v

if TYPE_CHECKING:
    from components.spec.experiment import ExperimentSpec

def recovers(spec: ExperimentSpec) -> bool:
    """A spot instance that comes back by itself after a reclaim (``spot.recover``; never on-demand, never the
    preparation phase's instance): a persistent request, stopped on interruption (components/aws/instance.py)."""
    return spec.market == "spot" and spec.spot.recover is True


# Image families resolved to the newest matching image, and whether the NVIDIA driver comes with it. The Deep
# Learning Base AMIs ship the NVIDIA driver, CUDA and Docker ("Nvidia Driver" is in their names); Canonical's
# Ubuntu image has no NVIDIA driver. On that family (``absent``) the bootstrap installs the pinned driver from the
# Ubuntu archive (``components.userdata.settings.NVIDIA_DRIVER_PACKAGES``, the same install as Alibaba Cloud's
# Ubuntu family), loads it and checks that nvidia-smi sees the GPU; readiness fails, naming the driver, when it
# does not.
AMI_FAMILIES: dict[str, dict[str, Any]] = {
    "dlami-base-ubuntu22": {
        "owners": ["amazon"],
        "name": "Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04) *",
        "nvidia_driver": "preinstalled",
    },
    "dlami-pytorch-ubuntu22": {
        "owners": ["amazon"],
        "name": "Deep Learning OSS Nvidia Driver AMI GPU PyTorch * (Ubuntu 22.04) *",
        "nvidia_driver": "preinstalled",
    },
    "ubuntu-22.04": {
        "owners": ["099720109477"],  # Canonical
        "name": "ubuntu/images/hvm-ssd/ubuntu-jammy-22.04-amd64-server-*",
        "nvidia_driver": "absent",
    },
}

# --- tags --------------------------------------------------------------------------------------------------
# "Maximum number of tags per resource – 50", keys up to 128 and values up to 256 Unicode characters
# (https://docs.aws.amazon.com/tag-editor/latest/userguide/tagging.html#tag-conventions; the same limits in
# https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/Using_Tags.html#tag-restrictions).
MAX_TAGS = 50

# --- runtime -----------------------------------------------------------------------------------------------
# The deadline is fixed when the stack is created (time:Static), before the instance: the instance, its disk and
# the cloud-side stop are created after it, which takes minutes. EventBridge Scheduler invokes a one-time at()
# target "with 60 second precision" (https://docs.aws.amazon.com/scheduler/latest/UserGuide/schedule-types.html);
# 15 minutes leaves room for the resources before it and the boot.
MIN_RUNTIME_MINUTES = v.MIN_RUNTIME_MINUTES["aws"]

# --- data disks --------------------------------------------------------------------------------------------
# EBS CreateVolume (EC2 API reference https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateVolume.html,
# the same text in botocore's ec2 2016-11-15 model, CreateVolumeRequest Size / Iops / Throughput):
#   sizes gp2 1-16,384, gp3 1-65,536, io1 4-16,384, io2 4-65,536, st1/sc1 125-16,384 GiB;
#   IOPS "Required for io1 and io2 volumes. Optional for gp3 volumes. Omit for all other volume types":
#   gp3 3,000-80,000, io1 100-64,000, io2 100-256,000; throughput gp3 only, 125-2,000 MiB/s.
# Ratios (EBS user guide, https://docs.aws.amazon.com/ebs/latest/userguide/general-purpose.html and
# https://docs.aws.amazon.com/ebs/latest/userguide/provisioned-iops.html): gp3 at most 500 IOPS per GiB and
# 0.25 MiB/s of throughput per provisioned IOPS; io1 50 and io2 1,000 IOPS per GiB.
DISK_SIZES = {"gp2": (1, 16384), "gp3": (1, 65536), "io1": (4, 16384), "io2": (4, 65536), "st1": (125, 16384),
              "sc1": (125, 16384)}
IOPS = {"gp3": (3000, 80000), "io1": (100, 64000), "io2": (100, 256000)}
IOPS_PER_GIB = {"gp3": 500, "io1": 50, "io2": 1000}
GP3_THROUGHPUT = (125, 2000)
GP3_DEFAULT_IOPS = 3000
GP3_MIBS_PER_IOPS = 0.25

# --- security group rules ----------------------------------------------------------------------------------
# "Inbound or outbound rules per security group: 60 ... enforced separately for IPv4 rules and IPv6 rules"
# (default quota, https://docs.aws.amazon.com/vpc/latest/userguide/amazon-vpc-limits.html#vpc-limits-security-groups).
SG_RULES_PER_FAMILY = 60


# --- regions -----------------------------------------------------------------------------------------------
# Every region of the public partitions in botocore's endpoint data (botocore/data/endpoints.json, partitions aws,
# aws-cn, aws-us-gov; the botocore pinned in constraints.txt).
REGIONS = (
    "af-south-1", "ap-east-1", "ap-east-2", "ap-northeast-1", "ap-northeast-2", "ap-northeast-3", "ap-south-1",
    "ap-south-2", "ap-southeast-1", "ap-southeast-2", "ap-southeast-3", "ap-southeast-4", "ap-southeast-5",
    "ap-southeast-6", "ap-southeast-7", "ca-central-1", "ca-west-1", "eu-central-1", "eu-central-2", "eu-north-1",
    "eu-south-1", "eu-south-2", "eu-west-1", "eu-west-2", "eu-west-3", "il-central-1", "me-central-1", "me-south-1",
    "mx-central-1", "sa-east-1", "us-east-1", "us-east-2", "us-west-1", "us-west-2",
    "cn-north-1", "cn-northwest-1", "us-gov-east-1", "us-gov-west-1",
)

# --- lifecycle transitions ---------------------------------------------------------------------------------
# S3 Transition, Days: "If the specified storage class is STANDARD_IA or ONEZONE_IA, valid values are positive
# integers greater than 30" (https://docs.aws.amazon.com/AmazonS3/latest/API/API_Transition.html); the user guide
# says objects must be stored "at least 30 days" first ("Constraints and considerations for transitions",
# https://docs.aws.amazon.com/AmazonS3/latest/userguide/lifecycle-transition-general-considerations.html).
# INTELLIGENT_TIERING, GLACIER_IR, GLACIER and DEEP_ARCHIVE take 0 or more.
TRANSITION_MIN_DAYS = {"STANDARD_IA": 30, "ONEZONE_IA": 30}


class AwsSpecRules(CloudSpecRules):
    name = "aws"
    title = "AWS"
    session_mode = "ssm"
    session_what = "AWS Systems Manager"
    disk_types = ("gp3", "gp2", "io1", "io2", "st1")
    default_disk_type = "gp3"
    storage_classes = ("STANDARD_IA", "ONEZONE_IA", "INTELLIGENT_TIERING", "GLACIER_IR", "GLACIER", "DEEP_ARCHIVE")
    image_families = AMI_FAMILIES
    default_image_family = "dlami-base-ubuntu22"
    disk_id = re.compile(r"^vol-[0-9a-f]{8,17}\Z")
    disk_id_example = "vol-0123456789abcdef0"
    image_id = re.compile(r"^ami-[0-9a-f]{8,17}\Z")
    image_id_what = "an AMI id"
    image_id_example = "ami-0123456789abcdef0"
    # ImportKeyPair: "Imports the public key from an RSA or ED25519 key pair" (EC2 API reference,
    # https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_ImportKeyPair.html; the same text is in botocore's
    # ec2 service model, ``ImportKeyPair`` documentation). ECDSA is not listed.
    key_types = ("ssh-rsa", "ssh-ed25519")
    key_example = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAA... you@host"
    max_tags = MAX_TAGS
    tag_value_max = v.TAG_VALUE_MAX_LEN
    bucket_scheme = "s3://"
    regions = REGIONS
    transition_min_days = TRANSITION_MIN_DAYS
    min_runtime_minutes = MIN_RUNTIME_MINUTES
    short_runtime_reason = "the deadline is fixed before the instance and its scheduled stop are created"
    min_deadline_lead_minutes = 5

    def disk_problems(
        self, disk_type: str, size_gb: int, iops: int | None, throughput: int | None, performance_level: str | None
    ) -> list[Problem]:
        problems: list[Problem] = []
        low, high = DISK_SIZES.get(disk_type, (1, 16384))
        if not low <= size_gb <= high:
            problems.append(("dataDisk.sizeGb", f"{size_gb} GiB is outside what EBS accepts for {disk_type}; accepted: {low}-{high}"))
        if disk_type in IOPS:
            low, high = IOPS[disk_type]
            ratio = IOPS_PER_GIB[disk_type]
            if iops is None and disk_type in ("io1", "io2"):
                problems.append(("dataDisk.iops", f"is required for {disk_type}; accepted: {low}-{min(high, ratio * size_gb)} "
                                 f"for {size_gb} GiB ({ratio} IOPS per GiB at most)"))
            elif iops is not None and not low <= iops <= high:
                problems.append(("dataDisk.iops", f"{iops} is outside what EBS accepts for {disk_type}; accepted: {low}-{high}"))
            elif iops is not None and iops > ratio * size_gb:
                problems.append(("dataDisk.iops", f"{iops} IOPS on {size_gb} GiB exceeds {disk_type}'s {ratio} IOPS per GiB; "
                                 f"accepted: at most {ratio * size_gb}, or a larger sizeGb"))
        elif iops is not None:
            problems.append(("dataDisk.iops", f"does not apply to {disk_type}; accepted with gp3, io1, io2"))
        if throughput is not None:
            if disk_type != "gp3":
                problems.append(("dataDisk.throughput", "applies to gp3 only; accepted: omit it, or dataDisk.type: gp3"))
            else:
                low, high = GP3_THROUGHPUT
                most = int((iops or GP3_DEFAULT_IOPS) * GP3_MIBS_PER_IOPS)
                if not low <= throughput <= high:
                    problems.append(("dataDisk.throughput", f"{throughput} MiB/s is outside gp3's range; accepted: {low}-{high}"))
                elif throughput > most:
                    problems.append(("dataDisk.throughput", f"{throughput} MiB/s exceeds gp3's {GP3_MIBS_PER_IOPS} MiB/s per "
                                     f"IOPS ({iops or GP3_DEFAULT_IOPS} IOPS); accepted: at most {most}, or more iops"))
        return problems

    def cidr_count_problems(self, cidrs: list[str]) -> list[Problem]:
        problems = []
        for version in (4, 6):
            count = sum(1 for c in cidrs if ipaddress.ip_network(c).version == version)
            if count > SG_RULES_PER_FAMILY:
                problems.append(("ssh.allowedCidrs", f"{count} IPv{version} sources need {count} inbound rules; an AWS security "
                                 f"group holds {SG_RULES_PER_FAMILY} per address family (default quota); accepted: at most "
                                 f"{SG_RULES_PER_FAMILY} IPv{version} CIDRs (merge neighbours into a wider prefix)"))
        return problems


RULES = AwsSpecRules()
