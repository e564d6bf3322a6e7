"""What each cloud refuses, as numbers with their sources, so the spec refuses it first (naming the field).

Each function returns ``(field path, message)`` problems in the spec's camelCase, or nothing. What cannot be
checked without a cloud (a raised account quota, capacity in a zone) is left to the cloud.
"""

from __future__ import annotations

import ipaddress

from gpulease.core import vocabulary as v

Problem = tuple[str, str]

# --- tags --------------------------------------------------------------------------------------------------
# AWS: "Maximum number of tags per resource – 50", keys up to 128 and values up to 256 Unicode characters
# (https://docs.aws.amazon.com/tag-editor/latest/userguide/tagging.html#tag-conventions; the same limits in
# https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/Using_Tags.html#tag-restrictions). Alibaba Cloud's
# stricter limits (20 tags, 128-character values, 64-character OSS keys) live in gpulease.core.vocabulary.
AWS_MAX_TAGS = 50
MAX_TAGS = {"aws": AWS_MAX_TAGS, "alicloud": v.ALICLOUD_MAX_TAGS}
TAG_VALUE_MAX = {"aws": v.TAG_VALUE_MAX_LEN, "alicloud": v.ALICLOUD_TAG_VALUE_MAX_LEN}
BUCKET_NAME_MAX = 63
"""S3 and OSS bucket names are 3-63 characters; a generated name may use all of them."""


def checkpoint_uri_length(cloud: str, bucket: str | None, prefix: str, name: str) -> int:
    """The longest checkpoint URI tag value this experiment can get: ``s3://bucket/prefix[name/]`` (a sweep
    adds the run's name), with a generated bucket name counted at its maximum length."""
    scheme = "s3://" if cloud == "aws" else "oss://"
    return len(scheme) + (len(bucket) if bucket else BUCKET_NAME_MAX) + 1 + len(prefix) + len(name) + 1


# --- runtime -----------------------------------------------------------------------------------------------
# The deadline is fixed when the stack is created (time:Static), before the instance: the instance, its disk and
# the cloud-side stop are created after it, which takes minutes.
# AWS: EventBridge Scheduler invokes a one-time at() target "with 60 second precision"
# (https://docs.aws.amazon.com/scheduler/latest/UserGuide/schedule-types.html); 15 minutes leaves room for the
# resources before it and the boot. Alibaba Cloud: "the release time must be at least 30 minutes later than the
# current time" (auto_release_time, pulumi_alicloud ecs.Instance docstring / RunInstances AutoReleaseTime), and
# the 30 minutes count from the instance's creation, so 15 more minutes for the VPC, RAM role and bucket first.
MIN_RUNTIME_MINUTES = {"aws": 15, "alicloud": v.ALICLOUD_MIN_RELEASE_MINUTES + 15}
BOOT_MINUTES = 10
"""Time to boot and mount before the watchdog's final-sync window may begin."""


def runtime_problems(cloud: str, max_runtime_hours: float, final_sync_minutes: int, explicit_deadline: bool) -> list[Problem]:
    minutes = max_runtime_hours * 60
    floor = MIN_RUNTIME_MINUTES[cloud]
    if not explicit_deadline and minutes < floor:
        why = (f"Alibaba Cloud refuses a release time under {v.ALICLOUD_MIN_RELEASE_MINUTES} minutes away and the "
               "deadline is fixed before the instance is created" if cloud == "alicloud"
               else "the deadline is fixed before the instance and its scheduled stop are created")
        return [("maxRuntimeHours", f"{max_runtime_hours:g} h is too short: {why}; accepted on {cloud}: "
                 f"{floor / 60:g} or more")]
    if minutes < final_sync_minutes + BOOT_MINUTES:
        return [("maxRuntimeHours", f"{max_runtime_hours:g} h leaves no time to train: the watchdog starts the final "
                 f"sync watchdog.finalSyncMinutes ({final_sync_minutes}) before the deadline, after about "
                 f"{BOOT_MINUTES} minutes of boot; accepted: at least {(final_sync_minutes + BOOT_MINUTES) / 60:.2f} h, "
                 "or a smaller finalSyncMinutes")]
    return []


# --- data disks --------------------------------------------------------------------------------------------
# AWS EBS CreateVolume (EC2 API reference https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateVolume.html,
# the same text in botocore's ec2 2016-11-15 model, CreateVolumeRequest Size / Iops / Throughput):
#   sizes gp2 1-16,384, gp3 1-65,536, io1 4-16,384, io2 4-65,536, st1/sc1 125-16,384 GiB;
#   IOPS "Required for io1 and io2 volumes. Optional for gp3 volumes. Omit for all other volume types":
#   gp3 3,000-80,000, io1 100-64,000, io2 100-256,000; throughput gp3 only, 125-2,000 MiB/s.
# Ratios (EBS user guide, https://docs.aws.amazon.com/ebs/latest/userguide/general-purpose.html and
# https://docs.aws.amazon.com/ebs/latest/userguide/provisioned-iops.html): gp3 at most 500 IOPS per GiB and
# 0.25 MiB/s of throughput per provisioned IOPS; io1 50 and io2 1,000 IOPS per GiB.
AWS_DISK_SIZES = {"gp2": (1, 16384), "gp3": (1, 65536), "io1": (4, 16384), "io2": (4, 65536), "st1": (125, 16384),
                  "sc1": (125, 16384)}
AWS_IOPS = {"gp3": (3000, 80000), "io1": (100, 64000), "io2": (100, 256000)}
AWS_IOPS_PER_GIB = {"gp3": 500, "io1": 50, "io2": 1000}
AWS_GP3_THROUGHPUT = (125, 2000)
AWS_GP3_DEFAULT_IOPS = 3000
AWS_GP3_MIBS_PER_IOPS = 0.25
# Alibaba Cloud disk sizes by category (pulumi_alicloud ecs.EcsDisk ``size`` docstring, from the ECS CreateDisk
# reference): cloud_efficiency / cloud_ssd 20-32,768, cloud_auto 1-65,536, cloud_essd_entry 10-32,768 GiB;
# cloud_essd by performance level: PL0 1-65,536, PL1 (the default) 20-65,536, PL2 461-65,536, PL3 1,261-65,536.
ALICLOUD_DISK_SIZES = {"cloud_efficiency": (20, 32768), "cloud_ssd": (20, 32768), "cloud_auto": (1, 65536),
                       "cloud_essd_entry": (10, 32768)}
ALICLOUD_ESSD_SIZES = {"PL0": (1, 65536), "PL1": (20, 65536), "PL2": (461, 65536), "PL3": (1261, 65536)}


def disk_problems(
    cloud: str, disk_type: str, size_gb: int, iops: int | None, throughput: int | None, performance_level: str | None
) -> list[Problem]:
    if cloud == "alicloud":
        return _alicloud_disk_problems(disk_type, size_gb, iops, throughput, performance_level)
    problems: list[Problem] = []
    low, high = AWS_DISK_SIZES.get(disk_type, (1, 16384))
    if not low <= size_gb <= high:
        problems.append(("dataDisk.sizeGb", f"{size_gb} GiB is outside what EBS accepts for {disk_type}; accepted: {low}-{high}"))
    if disk_type in AWS_IOPS:
        low, high = AWS_IOPS[disk_type]
        ratio = AWS_IOPS_PER_GIB[disk_type]
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
            problems.append(("dataDisk.throughput", "applies to gp3 only"))
        else:
            low, high = AWS_GP3_THROUGHPUT
            most = int((iops or AWS_GP3_DEFAULT_IOPS) * AWS_GP3_MIBS_PER_IOPS)
            if not low <= throughput <= high:
                problems.append(("dataDisk.throughput", f"{throughput} MiB/s is outside gp3's range; accepted: {low}-{high}"))
            elif throughput > most:
                problems.append(("dataDisk.throughput", f"{throughput} MiB/s exceeds gp3's {AWS_GP3_MIBS_PER_IOPS} MiB/s per "
                                 f"IOPS ({iops or AWS_GP3_DEFAULT_IOPS} IOPS); accepted: at most {most}, or more iops"))
    return problems


def _alicloud_disk_problems(
    disk_type: str, size_gb: int, iops: int | None, throughput: int | None, performance_level: str | None
) -> list[Problem]:
    problems: list[Problem] = []
    if disk_type == "cloud_essd":
        level = performance_level or "PL1"
        low, high = ALICLOUD_ESSD_SIZES[level]
        what = f"cloud_essd at {level}"
    else:
        low, high = ALICLOUD_DISK_SIZES.get(disk_type, (20, 32768))
        what = disk_type
    if not low <= size_gb <= high:
        problems.append(("dataDisk.sizeGb", f"{size_gb} GiB is outside what Alibaba Cloud accepts for {what}; accepted: {low}-{high}"))
    if iops is not None:
        problems.append(("dataDisk.iops", "applies to AWS disks only; on alicloud choose performanceLevel"))
    if throughput is not None:
        problems.append(("dataDisk.throughput", "applies to AWS gp3 only"))
    if performance_level is not None and disk_type != "cloud_essd":
        problems.append(("dataDisk.performanceLevel", "applies to cloud_essd only"))
    return problems


# --- security group rules ----------------------------------------------------------------------------------
# AWS: "Inbound or outbound rules per security group: 60 ... enforced separately for IPv4 rules and IPv6 rules"
# (default quota, https://docs.aws.amazon.com/vpc/latest/userguide/amazon-vpc-limits.html#vpc-limits-security-groups).
# Alibaba Cloud: "The total number of outbound and inbound rules in each security group cannot exceed 200"
# (https://www.alibabacloud.com/help/en/ecs/api-authorizesecuritygroup); the kit adds its own egress rules.
AWS_SG_RULES_PER_FAMILY = 60
ALICLOUD_SG_RULES = 200
ALICLOUD_KIT_RULES = 2


def cidr_count_problems(cloud: str, cidrs: list[str]) -> list[Problem]:
    if cloud == "aws":
        problems = []
        for version in (4, 6):
            count = sum(1 for c in cidrs if ipaddress.ip_network(c).version == version)
            if count > AWS_SG_RULES_PER_FAMILY:
                problems.append(("ssh.allowedCidrs", f"{count} IPv{version} sources need {count} inbound rules; an AWS security "
                                 f"group holds {AWS_SG_RULES_PER_FAMILY} per address family (default quota); accepted: at most "
                                 f"{AWS_SG_RULES_PER_FAMILY} IPv{version} CIDRs (merge neighbours into a wider prefix)"))
        return problems
    most = ALICLOUD_SG_RULES - ALICLOUD_KIT_RULES
    if len(cidrs) > most:
        return [("ssh.allowedCidrs", f"{len(cidrs)} sources need {len(cidrs)} rules; an Alibaba Cloud security group holds "
                 f"{ALICLOUD_SG_RULES} and gpulease adds {ALICLOUD_KIT_RULES}; accepted: at most {most} CIDRs")]
    return []
