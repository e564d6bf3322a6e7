"""AWS's implementation of the cloud contract (``components/cloud.py``): each file owns its part of it (``network``,
``storage``, ``identity``, ``instance``, ``lifetime``), so "where is spot configured on AWS?" is ``instance.py``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from components.aws.context import AwsAccount
from components.aws.identity import AwsIdentity
from components.aws.instance import AwsInstance
from components.aws.lifetime import AwsLifetime
from components.aws.network import AwsNetwork
from components.aws.spec import RULES
from components.aws.storage import AwsStorage
from components.cloud import Cloud, Support


class Aws(AwsAccount, AwsNetwork, AwsStorage, AwsIdentity, AwsInstance, AwsLifetime, Cloud):
    name = "aws"
    spec = RULES
    capabilities: ClassVar[Mapping[str, Support]] = {
        "ssh-scope": Support(
            "one `aws.vpc.SecurityGroupIngressRule` per CIDR, tcp 22–22, described",
        ),
        "no-inbound": Support(
            "`ssh.mode: ssm`: no ingress rule, SSM core policy on the role",
        ),
        "spot": Support(
            "one-time spot request, `terminate` on interruption, `max_price` from `maxSpotPriceUsd`",
        ),
        "deadline": Support(
            "EventBridge Scheduler one-time schedule at the recorded deadline terminates that one instance",
        ),
        "shutdown-from-inside": Support(
            "`instance_initiated_shutdown_behavior = terminate`: a watchdog shutdown ends billing",
        ),
        "metadata": Support(
            "IMDSv2 only (`http_tokens = required`), hop limit 2",
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
            "transitions, delete-marker cleanup; versioning on",
        ),
        "noncurrent-versions-kept": Support(
            "`newer_noncurrent_versions = noncurrentVersionsToKeep`",
        ),
        "tags": Support(
            "the same keys from `gpulease/core/vocabulary.py` on every taggable resource",
        ),
        "storage-access": Support(
            "instance role: `s3:ListBucket` on the prefix only, get/put/abort/list-parts on `bucket/prefix*`",
        ),
        "network": Support(
            "the default VPC's subnet in the first zone offering the type",
        ),
    }



AWS = Aws()
