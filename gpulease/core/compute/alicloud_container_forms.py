"""Alibaba Cloud GPU forms beyond ECS (pulumi_alicloud 4.0.0): ECI container groups with GPU specifications or GPU
containers, and PAI-EAS model services. Argument names are the SDK's (engine form, camelCase); every claim about
what Alibaba Cloud does cites its source.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpulease.core.compute.forms import ON_DEMAND, SPOT, ComputeForm, Market, register
from gpulease.core.compute.paths import UNKNOWN, count, json_object, number, read, read_all

ECI_CONTAINER_GROUP = "alicloud:eci/containerGroup:ContainerGroup"
PAI_SERVICE = "alicloud:pai/service:Service"


def _eci_market(props: Mapping[str, Any]) -> Market:
    strategy = read(props, "spotStrategy")
    if strategy is UNKNOWN:
        return Market(UNKNOWN)
    if strategy in (None, "", "NoSpot"):
        return Market(ON_DEMAND, f"spotStrategy={strategy or 'NoSpot (the default)'}")
    return Market(SPOT, f"spotStrategy={strategy}")


def _eci_gpus(props: Mapping[str, Any]) -> str | None:
    """GPU containers: ``containers[].gpu`` (and init containers') above 0 (pulumi_alicloud eci.ContainerGroup:
    "The number GPUs. Default value: 0")."""
    for path in ("containers", "initContainers"):
        for i, container in enumerate(read_all(props, f"{path}.*")):
            gpus = number(read(container, "gpu")) if container is not UNKNOWN else None
            if isinstance(gpus, float) and gpus > 0:
                return f"{path}[{i}].gpu={gpus:g}"
    return None


def service_config(props: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """A PAI-EAS service's ``serviceConfig`` JSON document; None when it is absent, not known or not JSON."""
    return json_object(read(props, "serviceConfig"))


def _pai_types(props: Mapping[str, Any]) -> list[Any]:
    config = service_config(props)
    if config is None:
        return [UNKNOWN] if read(props, "serviceConfig") is UNKNOWN else []
    one = read(config, "cloud.computing.instance_type")
    many = [read(x, "type") for x in read_all(config, "cloud.computing.instances.*")]
    return [t for t in (one, *many) if t is not None]


def _pai_gpus(props: Mapping[str, Any]) -> str | None:
    config = service_config(props)
    gpus = number(read(config, "metadata.gpu")) if config is not None else None
    return f"metadata.gpu={gpus:g}" if isinstance(gpus, float) and gpus > 0 else None


def _pai_instances(props: Mapping[str, Any]) -> Any:
    config = service_config(props)
    if config is None:
        return UNKNOWN
    instances = count(config, "metadata.instance", shown="serviceConfig.metadata.instance")
    return 1.0 if instances is None else instances


register(
    ComputeForm(
        token=ECI_CONTAINER_GROUP, cloud="alicloud", label="ECI container group",
        accelerator=_eci_gpus, market=_eci_market,
        spot_how="spot_strategy='SpotAsPriceGo' or 'SpotWithPriceLimit'", spot_cap="spotPriceLimit",
        unbounded="an ECI container group has no release time or active deadline in pulumi_alicloud 4.0.0 "
        "(eci.ContainerGroup's inputs), so nothing outside its containers ends it at its deadline; accepted: "
        "delete it at the deadline from outside and name it in acceptUnbounded after review",
        identity=("id", "containerGroupName"),
        source="pulumi_alicloud eci.ContainerGroup; https://www.alibabacloud.com/help/en/eci/"
        "developer-reference/api-eci-2018-08-08-createcontainergroup",
    ),
    ComputeForm(
        token=PAI_SERVICE, cloud="alicloud", label="PAI-EAS service",
        type_reader=_pai_types, accelerator=_pai_gpus, capacity=_pai_instances,
        unsized="its serviceConfig JSON (metadata.instance) is not known or not readable",
        priced_as="PAI-EAS bills its own rates per instance specification, which the catalog does not hold",
        market=lambda props: Market(ON_DEMAND, "a PAI-EAS service"),
        spot_how="none in serviceConfig that the pack reads",
        unbounded="a PAI-EAS service runs until it is stopped or deleted; pulumi_alicloud 4.0.0's pai.Service "
        "has no time to stop at; accepted: stop it at the deadline from outside and name it in acceptUnbounded",
        source="pulumi_alicloud pai.Service; https://www.alibabacloud.com/help/en/pai/user-guide/"
        "parameters-of-model-services",
    ),
)
