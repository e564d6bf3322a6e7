"""ECS price actions for the loopback Alibaba Cloud stub: DescribePrice, DescribeSpotPriceHistory and
DescribeInstanceTypes, answered from a small price book.

The answers are shaped like the API reference's sample responses, with the field names of the SDK's response
models (alibabacloud_ecs20140526 ``DescribePriceResponseBody``, ``DescribeSpotPriceHistoryResponseBody``,
``DescribeInstanceTypesResponseBody``):
- DescribePrice (https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-describeprice):
  ``PriceInfo.Price`` {OriginalPrice, DiscountPrice, TradePrice, Currency, ReservedInstanceHourPrice,
  DetailInfos.DetailInfo[{Resource, OriginalPrice, DiscountPrice, TradePrice, SubRules.Rule[]}]},
  ``PriceInfo.Rules.Rule[]``, ``PriceInfo.RelatedPrice.MarketplaceImagePrice``; an instance answer details
  ``instanceType`` and ``systemDisk``.
- DescribeSpotPriceHistory (https://www.alibabacloud.com/help/en/ecs/developer-reference/api-describespotpricehistory):
  ``SpotPrices.SpotPriceType[{IoOptimized, NetworkType, InstanceType, SpotPrice, OriginPrice, Timestamp, ZoneId}]``,
  ``NextOffset``, ``Currency``, hourly timestamps as in the reference's example.
- DescribeInstanceTypes: ``InstanceTypes.InstanceType[{InstanceTypeId, InstanceTypeFamily, GPUAmount, GPUSpec,
  GPUMemorySize, CpuCoreCount, MemorySize}]``, ``NextToken``.
The prices are test values, not Alibaba Cloud's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tests.support.alicloud_stub import ECS_VERSION, AlicloudStub, ApiError, RpcRequest

SYSTEM_DISK_HOURLY = 0.0137  # what the default 40 GB system disk adds to an instance answer


@dataclass
class PriceBook:
    instances: dict[tuple[str, str], Any] = field(default_factory=dict)  # (region, type) -> USD/h
    disks: dict[tuple[str, str], float] = field(default_factory=dict)  # (region, category[_plN]) -> USD per GB-hour
    spot: dict[tuple[str, str], list[tuple[str, str, Any]]] = field(default_factory=dict)
    """(region, type) -> [(zone, timestamp, price)] in the order the API lists them."""
    types: list[dict[str, Any]] = field(default_factory=list)
    currency: str = "USD"
    spot_page: int = 3
    types_page: int = 2


def _price(book: PriceBook, original: Any, resources: list[tuple[str, Any]]) -> dict[str, Any]:
    details = [{"Resource": name, "OriginalPrice": value, "DiscountPrice": 0, "TradePrice": value,
                "SubRules": {"Rule": []}} for name, value in resources]
    return {"PriceInfo": {
        "Price": {"OriginalPrice": original, "DiscountPrice": 0, "TradePrice": original, "Currency": book.currency,
                  "ReservedInstanceHourPrice": 0, "DetailInfos": {"DetailInfo": details}},
        "Rules": {"Rule": []},
        "RelatedPrice": {"MarketplaceImagePrice": {"OriginalPrice": 0, "DiscountPrice": 0, "Currency": book.currency,
                                                   "TradePrice": 0}},
    }}


def install_prices(stub: AlicloudStub, book: PriceBook) -> None:
    def describe_price(req: RpcRequest) -> dict:
        region = req.get("RegionId", "")
        if req.get("ResourceType", "instance") == "instance":
            name = req.get("InstanceType", "")
            if (region, name) not in book.instances:
                raise ApiError("InvalidInstanceType.ValueNotSupported",
                               "The specified InstanceType does not exist or beyond the permitted range.")
            hourly = book.instances[(region, name)]
            total = hourly + SYSTEM_DISK_HOURLY if isinstance(hourly, int | float) else hourly
            return _price(book, total, [("instanceType", hourly), ("systemDisk", SYSTEM_DISK_HOURLY)])
        category = req.get("DataDisk.1.Category", "")
        level = req.get("DataDisk.1.PerformanceLevel")
        size = float(req.get("DataDisk.1.Size") or 0)
        key = f"{category}_{level.lower()}" if level and level != "PL1" else category
        if (region, key) not in book.disks or size <= 0:
            raise ApiError("InvalidDataDiskCategory.ValueNotSupported", "The specified disk category is not supported.")
        hourly = round(book.disks[(region, key)] * size, 6)
        return _price(book, hourly, [("dataDisk", hourly)])

    def describe_spot_price_history(req: RpcRequest) -> dict:
        if req.get("NetworkType") != "vpc" or not req.get("InstanceType"):
            raise ApiError("MissingParameter", "NetworkType and InstanceType are mandatory for this action.")
        entries = book.spot.get((req.get("RegionId", ""), req.get("InstanceType", "")), [])
        offset = int(req.get("Offset") or 0)
        page = entries[offset:offset + book.spot_page]
        return {
            "NextOffset": offset + len(page),
            "Currency": book.currency,
            "SpotPrices": {"SpotPriceType": [
                {"IoOptimized": "optimized", "NetworkType": "vpc", "InstanceType": req.get("InstanceType"),
                 "SpotPrice": price, "OriginPrice": 1.0, "Timestamp": when, "ZoneId": zone}
                for zone, when, price in page
            ]},
        }

    def describe_instance_types(req: RpcRequest) -> dict:
        families = set(req.numbered("InstanceTypeFamilies"))
        matching = [t for t in book.types if not families or t["InstanceTypeFamily"] in families]
        start = int(req.get("NextToken") or 0)
        out: dict[str, Any] = {"InstanceTypes": {"InstanceType": matching[start:start + book.types_page]}}
        if start + book.types_page < len(matching):
            out["NextToken"] = str(start + book.types_page)
        return out

    stub.register(ECS_VERSION, "DescribePrice", describe_price)
    stub.register(ECS_VERSION, "DescribeSpotPriceHistory", describe_spot_price_history)
    stub.register(ECS_VERSION, "DescribeInstanceTypes", describe_instance_types)


def instance_type(name: str, family: str, gpus: int, cpus: int, memory: float, spec: str = "NVIDIA A10") -> dict:
    return {"InstanceTypeId": name, "InstanceTypeFamily": family, "GPUAmount": gpus, "GPUSpec": spec,
            "GPUMemorySize": 24.0, "CpuCoreCount": cpus, "MemorySize": memory}
