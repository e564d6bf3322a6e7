"""The cloud-neutral facade: one call turns a validated ``StackSpec`` into its cloud's component.

``CLOUDS`` is the registry of cloud implementations: a stack's ``cloud: aws`` reaches ``components/aws/cloud.py``
through its line here. Each entry imports its cloud when a stack asks for it, so that an AWS stack never loads
pulumi_alicloud and an Alibaba Cloud stack never loads pulumi_aws (a tenth of a plan's time each); the imports are
plain import statements, not names in strings. Adding a cloud is one folder (``components/<cloud>/``, see
``components/cloud.py``) plus one line here and one in ``components.spec.clouds`` (a test holds them together).
"""

from __future__ import annotations

from collections.abc import Callable

import pulumi

from components.alicloud.spec import RULES as ALICLOUD_SPEC
from components.aws.spec import RULES as AWS_SPEC
from components.build import GpuExperimentStack, prepare, resolve_instance_types, stack_region
from components.cloud import Cloud
from components.phase import phased
from components.spec.load import StackSpec


def _aws() -> Cloud:
    from components.aws.cloud import AWS

    return AWS


def _alicloud() -> Cloud:
    from components.alicloud.cloud import ALICLOUD

    return ALICLOUD


CLOUDS: dict[str, Callable[[], Cloud]] = {AWS_SPEC.name: _aws, ALICLOUD_SPEC.name: _alicloud}


def cloud(name: str) -> Cloud:
    """The implementation of the cloud a spec names (``aws``, ``alicloud``)."""
    return CLOUDS[name]()


def _explicit_provider(impl: Cloud, region: str) -> pulumi.ProviderResource | None:
    """A provider for the spec's region when it is not the provider config's (children inherit it)."""
    if pulumi.Config(impl.name).get("region") == region:
        return None
    return impl.provider(region)


def GpuExperiment(spec: StackSpec) -> GpuExperimentStack:  # noqa: N802 - reads as the component it returns
    """Create ``gpulease:<cloud>:GpuExperiment`` for the stack: the gpu sections resolved once, every lookup made,
    then the resources."""
    impl = cloud(spec.cloud)
    spec = phased(spec)  # the phase's shape of every experiment (components/phase.py)
    region = stack_region(spec)
    types = resolve_instance_types(spec, region)
    provider = _explicit_provider(impl, region)
    plan = prepare(impl, spec, region, types, provider)
    return GpuExperimentStack(impl, spec, region, plan, provider=provider)
