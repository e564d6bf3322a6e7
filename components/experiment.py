"""The cloud-neutral facade: one call turns a validated ``StackSpec`` into its cloud's component.

``CLOUDS`` is the registry of cloud implementations, built from imports: a stack's ``cloud: aws`` reaches
``components/aws/cloud.py`` through this one line. Adding a cloud is one folder (``components/<cloud>/``, see
``components/cloud.py``) plus one line here and one in ``components.spec.clouds``.
"""

from __future__ import annotations

import pulumi

from components.alicloud.cloud import ALICLOUD
from components.aws.cloud import AWS
from components.build import GpuExperimentStack, prepare, resolve_instance_types, stack_region
from components.cloud import Cloud
from components.spec.load import StackSpec

CLOUDS: dict[str, Cloud] = {AWS.name: AWS, ALICLOUD.name: ALICLOUD}


def _explicit_provider(cloud: Cloud, region: str) -> pulumi.ProviderResource | None:
    """A provider for the spec's region when it is not the provider config's (children inherit it)."""
    if pulumi.Config(cloud.name).get("region") == region:
        return None
    return cloud.provider(region)


def GpuExperiment(spec: StackSpec) -> GpuExperimentStack:  # noqa: N802 - reads as the component it returns
    """Create ``gpulease:<cloud>:GpuExperiment`` for the stack: the gpu sections resolved once, every lookup made,
    then the resources."""
    cloud = CLOUDS[spec.cloud]
    region = stack_region(spec)
    types = resolve_instance_types(spec, region)
    provider = _explicit_provider(cloud, region)
    plan = prepare(cloud, spec, region, types, provider)
    return GpuExperimentStack(cloud, spec, region, plan, provider=provider)
