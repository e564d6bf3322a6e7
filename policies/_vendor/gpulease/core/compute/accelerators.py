"""Is this instance type a GPU (or other accelerator) type: the family patterns, then the catalog.

The patterns (``gpulease.core.vocabulary``) know the families by name; the catalog knows every type it prices,
including the ones an override file adds, so a new family listed there with ``gpuCount`` is guarded before the
patterns learn its name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpulease.core import vocabulary as v

if TYPE_CHECKING:
    from gpulease.core.catalog import Catalog

_TYPES: dict[int, frozenset[str]] = {}


def _catalog_types() -> frozenset[str]:
    # The catalog (pydantic models) is imported when a type is first looked up, not with the compute readers: the
    # policy pack answers the CLI's first request without it (gpulease/core/catalog/__init__.py).
    from gpulease.core.catalog import CatalogError, load_catalog

    try:
        catalog: Catalog = load_catalog()  # cached by the loader, per set of override files
    except CatalogError:
        return frozenset()  # a broken override file is the cost estimate's error to report, not this one's
    key = id(catalog)
    if key not in _TYPES:
        _TYPES.clear()
        _TYPES[key] = frozenset(it.type for it in catalog.instances if it.gpu_count > 0)
    return _TYPES[key]


SAGEMAKER_PREFIX = "ml."
"""SageMaker names EC2 hardware with this prefix (``ml.p4d.24xlarge``, ``ml.g5.xlarge``)."""
DEDICATED_HOST_PREFIX = "ddh."
"""Alibaba names a dedicated host's type by its ECS family with this prefix (``ddh.gn7i``;
``alicloud.ecs.DedicatedHost.dedicated_host_type``, pulumi_alicloud's docstring: "Dedicated host type ... ddh.g6")."""
STREAM_PREFIX = "stream."
"""AWS AppStream 2.0 fleet types (``aws.appstream.Fleet.instance_type``): ``stream.graphics.<EC2 type>``
(``stream.graphics.g4dn.xlarge``) and the graphics families ``stream.graphics-design``, ``-desktop``, ``-pro``
all run on GPUs (https://docs.aws.amazon.com/appstream2/latest/APIReference/API_Fleet.html, InstanceType)."""


def normalise(instance_type: object) -> object:
    """An instance type as the readers compare it: surrounding spaces dropped and lower case (``" P4D.24XLARGE"``
    is ``p4d.24xlarge``); anything that is not text is returned as it is. Every reader of types goes through this
    one function, so a type written in another case or padded is never read as a CPU type."""
    return instance_type.strip().lower() if isinstance(instance_type, str) else instance_type


def is_accelerated(instance_type: object) -> bool:
    """True for a GPU or ML-accelerator instance type of either cloud (see the module docstring), SageMaker's
    ``ml.`` types, Alibaba's ``ddh.`` host types and AppStream's ``stream.`` types included, in any case and padding."""
    instance_type = normalise(instance_type)
    if not isinstance(instance_type, str) or not instance_type:
        return False
    bare = instance_type.removeprefix(SAGEMAKER_PREFIX)
    if bare.startswith(DEDICATED_HOST_PREFIX):
        family = bare.removeprefix(DEDICATED_HOST_PREFIX).split(".")[0]
        return bool(family) and v.is_accelerated_instance_type(f"ecs.{family}.xlarge")
    if bare.startswith(STREAM_PREFIX):
        return bare.startswith(("stream.graphics-", "stream.graphics."))
    return (v.is_accelerated_instance_type(bare) or instance_type in _catalog_types()
            or bare in _catalog_types())


def is_accelerated_family(family: object) -> bool:
    """True for a family name without a size that AWS Batch and Karpenter accept (``p4d``, ``g5``, ``trn1``), or
    an instance type itself."""
    family = normalise(family)
    if not isinstance(family, str) or not family:
        return False
    return is_accelerated(family) or ("." not in family.removeprefix(SAGEMAKER_PREFIX)
                                      and is_accelerated(f"{family}.xlarge"))


def hardware_of(cloud: str, instance_type: object) -> tuple[int, int] | None:
    """``(vCPUs, GPUs)`` of a type the catalogs list (the GPU catalog, then the CPU one; SageMaker's ``ml.``
    prefix dropped); None when neither knows it. Forms sized in vCPUs or GPUs (an AWS Batch compute environment,
    a Karpenter NodePool's limits) count instances with it."""
    instance_type = normalise(instance_type)
    if not isinstance(instance_type, str) or not instance_type:
        return None
    bare = instance_type.removeprefix(SAGEMAKER_PREFIX)
    from gpulease.core.catalog import CatalogError, load_catalog  # on first use, as in _catalog_types
    from gpulease.core.catalog.cpu import load_cpu_catalog

    try:
        it = load_catalog().get(cloud, bare)
        if it is not None:
            return it.vcpu, it.gpu_count
        cpu = load_cpu_catalog().get(cloud, bare)
    except CatalogError:
        return None
    return (cpu.vcpu, 0) if cpu is not None else None
