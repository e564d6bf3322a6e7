"""The clients ``gpulease status`` reads with: short timeouts and few retries, so that an offline machine gets its
one-line answer in seconds (botocore's defaults wait 60 s per connection attempt).

``CLIENTS`` is the seam a test replaces (or points at moto through ``AWS_ENDPOINT_URL``, which boto3 honours)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# Interactive: fail fast. botocore's standard retry mode also retries throttling and 5xx answers.
TIMEOUTS = {"connect_timeout": 5, "read_timeout": 15, "retries": {"mode": "standard", "max_attempts": 2}}


@dataclass
class Clients:
    """What status reads: the bucket (S3, or OSS through its S3 API), and on AWS EC2, Budgets and STS."""

    bucket: Any
    ec2: Any | None = None
    budgets: Any | None = None
    sts: Any | None = None


def make_clients(cloud: str, region: str) -> Clients:
    import boto3
    from botocore.config import Config

    if cloud == "alicloud":
        # OSS speaks the S3 API at https://oss-<region>.aliyuncs.com with virtual-hosted addressing and V4
        # signatures (https://www.alibabacloud.com/help/en/oss/developer-reference/use-amazon-s3-sdks-to-access-oss).
        bucket = boto3.client(
            "s3", region_name=region, endpoint_url=f"https://oss-{region}.aliyuncs.com",
            aws_access_key_id=os.environ.get("ALIBABA_CLOUD_ACCESS_KEY_ID") or os.environ.get("ALICLOUD_ACCESS_KEY"),
            aws_secret_access_key=os.environ.get("ALIBABA_CLOUD_ACCESS_KEY_SECRET")
            or os.environ.get("ALICLOUD_SECRET_KEY"),
            aws_session_token=os.environ.get("ALIBABA_CLOUD_SECURITY_TOKEN") or os.environ.get("ALICLOUD_SECURITY_TOKEN"),
            config=Config(**TIMEOUTS, s3={"addressing_style": "virtual"}, signature_version="s3v4"),
        )
        return Clients(bucket=bucket)
    config = Config(**TIMEOUTS)
    return Clients(
        bucket=boto3.client("s3", region_name=region, config=config),
        ec2=boto3.client("ec2", region_name=region, config=config),
        # AWS Budgets has one endpoint, in us-east-1 (https://docs.aws.amazon.com/general/latest/gr/billing.html).
        budgets=boto3.client("budgets", region_name="us-east-1", config=config),
        sts=boto3.client("sts", region_name=region, config=config),
    )


CLIENTS: Callable[[str, str], Clients] = make_clients
