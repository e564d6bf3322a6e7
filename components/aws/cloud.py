"""AWS's implementation of the cloud contract (``components/cloud.py``): each file owns its part of it (``network``,
``storage``, ``identity``, ``instance``, ``lifetime``), so "where is spot configured on AWS?" is ``instance.py``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from components.aws.budget import AwsBudget
from components.aws.cluster import AwsCluster
from components.aws.context import AwsAccount
from components.aws.identity import AwsIdentity
from components.aws.instance import AwsInstance
from components.aws.lifetime import AwsLifetime
from components.aws.network import AwsNetwork
from components.aws.spec import RULES
from components.aws.storage import AwsStorage
from components.aws.workflow import AwsWorkflow
from components.cloud import Cloud, Support


class Aws(AwsAccount, AwsNetwork, AwsStorage, AwsIdentity, AwsInstance, AwsLifetime, AwsCluster, AwsWorkflow,
          AwsBudget,
          Cloud):
    name = "aws"
    spec = RULES
    capabilities: ClassVar[Mapping[str, Support]] = {
        "ssh-scope": Support(
            "one `aws.vpc.SecurityGroupIngressRule` per CIDR, tcp 22–22, described",
        ),
        "no-inbound": Support(
            "`ssh.mode: ssm`: no ingress rule, `AmazonSSMManagedInstanceCore` on the role; `sshCommand` is `aws ssm "
            "start-session --target <id>`",
        ),
        "spot": Support(
            "a one-time request, `terminate` on interruption; with `spot.recover` a persistent request, `stop` on "
            "interruption (the next row); `max_price` from `maxSpotPriceUsd` (plain decimal digits)",
        ),
        "spot-recovery": Support(
            "with `spot.recover` (the default on spot with checkpoints and one node): a persistent spot request with "
            "`instance_interruption_behavior = stop` (no `valid_until`: the deadline's schedules end it): an interruption stops the "
            "instance and keeps its volumes, and EC2 starts it again when capacity returns; the deadline cancels "
            "the request (`ec2:cancelSpotInstanceRequests`, two minutes early) before it terminates the instance, "
            "and the watchdog's own end cancels it before its shutdown; every delete of a spot instance (a destroy "
            "with `--run-program`, a replacement, parking) cancels it first (a `before_delete` hook)",
            gap="A cluster does not recover on AWS (each node would come back on its own while the job on the others "
                "waits or fails): its nodes stay one-time spot, terminated on a reclaim. When EC2 restarts a stopped "
                "instance depends on capacity: not verifiable without a cloud.",
        ),
        "deadline": Support(
            "EventBridge Scheduler one-time schedule at the recorded deadline (`at(...)`, UTC, flexible window off, "
            "deleted after it fires) calls `ec2:TerminateInstances` on that one instance through a role allowed "
            "nothing else",
        ),
        "shutdown-from-inside": Support(
            "`instance_initiated_shutdown_behavior = terminate`: a watchdog shutdown ends billing",
        ),
        "metadata": Support(
            "IMDSv2 only (`http_tokens = required`), hop limit 2 (containers on the instance reach it), instance "
            "tags readable in metadata",
        ),
        "encryption": Support(
            "encrypted gp3 root, encrypted EBS data volume (`kmsKeyId` optional), bucket SSE AES256, TLS-only bucket "
            "policy",
        ),
        "retention": Support(
            "data volume and bucket `retain_on_delete` (tag `gpulease:retain`), attachment `skip_destroy`",
        ),
        "lifecycle": Support(
            "expire under the prefix after `keepDays`, noncurrent versions after `noncurrentDays`, abort uploads, "
            "transitions, delete-marker cleanup; versioning on. The settings are applied one after the other: "
            "ownership → public-access block → encryption → versioning → lifecycle → TLS-only policy, and the "
            "instance waits for the whole chain",
        ),
        "noncurrent-versions-kept": Support(
            "`newer_noncurrent_versions = noncurrentVersionsToKeep`",
        ),
        "tags": Support(
            "the same keys from `gpulease/core/vocabulary.py` on every taggable resource",
        ),
        "storage-access": Support(
            "instance role: `s3:ListBucket` on the prefix only, `s3:GetBucketLocation`, get/put/abort/list-parts on "
            "`bucket/prefix*`, put on its ready records `bucket/_gpulease/prefix/ready/*` and its reports "
            "`bucket/_gpulease/prefix/control/*` (a cluster node N above 0: `bucket/_gpulease/prefix/nodes/N/control/*`); "
            "in `ssm` mode the SSM core policy",
        ),
        "network": Support(
            "the default VPC's subnet in the first zone offering the type, or `network.vpcId`/`subnetId`",
            gap="AWS needs a default VPC in the region unless `network` names a VPC or subnet.",
        ),
        "replacement": Support(
            "instance and disk attachment delete-before-replace (never two GPU instances, never `VolumeInUse`); "
            "`ignore_changes: [ami]` for family images; a pinned `image.id` that changes replaces on purpose; a "
            "user-data change replaces the instance (`user_data_replace_on_change`: a one-time spot instance cannot "
            "be stopped); turning `spot.recover` on or off replaces it (`instance_market_options` is ForceNew; the "
            "old request's tags stay on it, and `reap` cancels it past its deadline if the provider's delete did not), "
            "a renewal does not (no spot option holds the deadline); the data volume grows in place",
        ),
        "nvidia-driver": Support(
            "the DLAMI families (`dlami-base-ubuntu22`, the default, and `dlami-pytorch-ubuntu22`) have the driver "
            "and CUDA preinstalled; on `ubuntu-22.04` (none) the bootstrap installs NVIDIA's R580 server driver from "
            "the Ubuntu archive",
        ),
        "budget-alerts": Support(
            "one `aws.budgets.Budget` per stack: `budgetUsd` USD a year, filtered by the cost-allocation tag "
            "`gpulease:stack`, an e-mail at each `budgetAlerts` threshold for the actual and the forecasted spend; "
            "the watchdog's spend estimate warns too",
            gap="AWS filters costs by the tag only once `gpulease:stack` is activated for cost allocation in the "
                "billing account, and refreshes budget data up to three times a day: the watchdog's estimate "
                "([run](run.md#budget-alerts)) warns hours earlier.",
        ),
        "cluster": Support(
            "`nodes: N` in one subnet of the first zone offering the type, a cluster placement group, addresses fixed "
            "at plan time (rank 0's is the rendezvous); EFA on the types that have it (one interface per network card "
            "through a launch template, an Elastic IP per node on its primary network interface) with the group's "
            "all-traffic rules to and from itself; one schedule per node terminates it",
            gap="Capacity for N nodes in one zone is only known at launch (`InsufficientInstanceCapacity`), and a "
                "fixed address another instance already holds fails the node's launch: neither is verifiable "
                "without a cloud.",
        ),
    }



AWS = Aws()
