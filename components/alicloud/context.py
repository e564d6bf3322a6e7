"""Facts about the Alibaba Cloud account and region that several files need, looked up once."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_alicloud as alicloud

from components.plan import CloudContext


@dataclass(frozen=True)
class AlicloudContext(CloudContext):
    def oss_arn(self, bucket: str, key: str | None = None) -> str:
        """The RAM resource name of a bucket (``key`` None) or of objects under a key pattern."""
        return f"acs:oss:*:{self.account_id}:{bucket}" + (f"/{key}" if key is not None else "")


def lookup_context(region: str, provider: alicloud.Provider | None) -> AlicloudContext:
    opts = pulumi.InvokeOptions(provider=provider) if provider else None
    account = alicloud.get_account(opts=opts)
    return AlicloudContext(region=region, account_id=account.id, provider=provider)


class AlicloudAccount:
    """The account part of the Alibaba Cloud cloud: the provider for another region, and the facts looked up once."""

    def provider(self, region: str) -> pulumi.ProviderResource:
        return alicloud.Provider(f"alicloud-{region}", region=region)

    def lookup_context(self, region: str, provider: pulumi.ProviderResource | None) -> AlicloudContext:
        return lookup_context(region, provider)
