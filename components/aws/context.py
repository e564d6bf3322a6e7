"""Facts about the AWS account and region that several files need, looked up once."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from components.plan import CloudContext


@dataclass(frozen=True)
class AwsContext(CloudContext):
    partition: str
    """The ARN partition (aws, aws-cn, aws-us-gov)."""


def lookup_context(region: str, provider: aws.Provider | None) -> AwsContext:
    opts = pulumi.InvokeOptions(provider=provider) if provider else None
    identity = aws.get_caller_identity(opts=opts)
    partition = aws.get_partition(opts=opts)
    return AwsContext(region=region, account_id=identity.account_id, partition=partition.partition, provider=provider)


class AwsAccount:
    """The account part of the AWS cloud: the provider for another region, and the facts looked up once."""

    def provider(self, region: str) -> pulumi.ProviderResource:
        return aws.Provider(f"aws-{region}", region=region)

    def lookup_context(self, region: str, provider: pulumi.ProviderResource | None) -> AwsContext:
        return lookup_context(region, provider)
