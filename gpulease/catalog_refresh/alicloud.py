"""Alibaba Cloud prices: ECS ``DescribePrice`` (instances, disks), ``DescribeSpotPriceHistory`` and
``DescribeInstanceTypes`` (new types of known families), through the official SDK.

- ``DescribePrice`` (https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-describeprice):
  ``ResourceType=instance`` with ``InstanceType`` and ``PriceUnit=Hour`` answers the pay-as-you-go price, split
  by resource in ``PriceInfo.Price.DetailInfos.DetailInfo`` (the ``instanceType`` entry is the instance alone,
  without its system disk; no ``ImageId`` means a Linux image). ``ResourceType=disk`` with
  ``DataDisk.1.Category``/``Size``/``PerformanceLevel`` answers a disk's hourly price, which is turned into a
  GB-month price (x 730 / size, the clouds' month). The catalog keeps ``OriginalPrice``, the list price:
  ``TradePrice`` subtracts promotions and account discounts that a budget should not count on.
- ``Currency`` is CNY on the China site and USD on the international site (the SDK's field documentation); the
  catalog is in USD, so a non-USD answer is refused, not converted.
- ``DescribeSpotPriceHistory`` (https://www.alibabacloud.com/help/en/ecs/developer-reference/api-describespotpricehistory):
  ``NetworkType=vpc`` and ``InstanceType`` are required; without ``ZoneId`` every zone is listed; without
  ``StartTime``/``EndTime`` the last three hours. Paged by ``Offset``/``NextOffset``; the reference does not say
  how the last page is marked, so paging stops at an empty page, a ``NextOffset`` that does not advance, or
  ``MAX_PAGES``. The latest entry per zone wins.
- ``DescribeInstanceTypes`` with ``InstanceTypeFamilies`` (1 to 10 per call; ``NextToken`` paging) lists the
  types of the families the catalog knows, with ``GPUAmount``, ``CpuCoreCount`` and ``MemorySize`` (GiB).
- Not refreshed on Alibaba Cloud: snapshot, OSS and public IP/egress prices (the ECS API prices instances,
  disks and bandwidth only; OSS has no price API in its SDK), nor ``provisionedIopsMonth``.

Clients, credentials, timeouts and retries are ``gpulease.inventory.alicloud_clients.AlicloudClients``: the retry
policy in tea-openapi's ``Config.retry_options`` retries the throttling codes and 5xx answers.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from alibabacloud_ecs20140526 import models as ecs_models
from alibabacloud_tea_openapi.models import Config
from darabonba.exceptions import RetryError, UnretryableException
from Tea.exceptions import TeaException

from gpulease.catalog_refresh.fetched import Fetched, NewType, RejectedPriceError, accept, family
from gpulease.core.catalog import HOURS_PER_MONTH, Catalog
from gpulease.core.catalog.models import zone_in_region
from gpulease.inventory.alicloud_clients import THROTTLING_CODES, AlicloudClients, credentials_problem
from gpulease.inventory.alicloud_collect import token_pages
from gpulease.inventory.alicloud_errors import error_text

CURRENCY = "USD"
DISK_PROBE_GB = 100
MAX_PAGES = 50
FAMILIES_PER_CALL = 10
CREDENTIAL_CODES = ("InvalidAccessKeyId.NotFound", "InvalidAccessKeyId.Inactive", "SignatureDoesNotMatch",
                    "IncompleteSignature", "Forbidden.RAM", "Forbidden.AccessKeyDisabled")


class PriceClients(AlicloudClients):
    """``AlicloudClients`` with this command's user agent."""

    def config(self, region: str) -> Config:
        config = super().config(region)
        config.user_agent = "gpulease-catalog-refresh"
        return config


def disk_probe(item: str) -> tuple[str, str | None]:
    """The catalog's disk key -> (category, performance level): ``cloud_essd_pl2`` -> (cloud_essd, PL2)."""
    if item.startswith("cloud_essd_pl"):
        return "cloud_essd", item.removeprefix("cloud_essd_").upper()
    return item, None


class AlicloudRefresh:
    def __init__(self, clients: AlicloudClients, catalog: Catalog, now: datetime):
        self.clients = clients
        self.catalog = catalog
        self.now = now
        self.known = {it.type: it for it in catalog.instances if it.cloud == "alicloud"}
        self.families = {family("alicloud", t): t for t in sorted(self.known)}

    def step(self, found: Fetched, what: str, action: Callable[[], None]) -> None:
        try:
            action()
        except (TeaException, RetryError, UnretryableException) as exc:
            if getattr(exc, "code", "") in CREDENTIAL_CODES:
                raise credentials_problem(exc) from None
            found.failures.append(f"alicloud {what}: {error_text(exc)}")

    def _answer(self, found: Fetched, call: Callable[[Any], Any], request: Any) -> dict[str, Any]:
        found.calls += 1
        return call(request).body.to_map()

    @staticmethod
    def _usd(currency: str | None, what: str) -> None:
        if currency and currency != CURRENCY:
            raise RejectedPriceError(f"{what}: priced in {currency} (a China-site account); the catalog is in {CURRENCY}")

    # --- types ------------------------------------------------------------------------------------------------

    def discover(self, region: str, found: Fetched) -> None:
        """New types of the known families, from ``DescribeInstanceTypes``."""
        families = sorted(self.families)
        ecs = self.clients.ecs(region)
        for start in range(0, len(families), FAMILIES_PER_CALL):
            request = ecs_models.DescribeInstanceTypesRequest(instance_type_families=families[start:start + FAMILIES_PER_CALL])
            found.calls += 1
            for item in token_pages(ecs.describe_instance_types, request, "InstanceTypes", "InstanceType"):
                name = str(item.get("InstanceTypeId", ""))
                if name in self.known or name in found.new_types or family("alicloud", name) not in self.families:
                    continue
                gpus, vcpu, ram = item.get("GPUAmount"), item.get("CpuCoreCount"), item.get("MemorySize")
                if not (isinstance(gpus, int) and 1 <= gpus <= 16 and isinstance(vcpu, int) and vcpu > 0
                        and isinstance(ram, int | float) and ram > 0):
                    found.skipped.append(f"alicloud {name}: DescribeInstanceTypes lacks its GPU count, vCPUs or memory")
                    continue
                found.new_types[name] = NewType("alicloud", name, gpus, vcpu, float(ram), self.families[family("alicloud", name)])

    # --- on-demand ---------------------------------------------------------------------------------------------

    def instance(self, region: str, name: str, found: Fetched) -> None:
        request = ecs_models.DescribePriceRequest(region_id=region, resource_type="instance", instance_type=name,
                                                  price_unit="Hour")
        what = f"alicloud {name} on-demand in {region}"
        try:
            body = self._answer(found, self.clients.ecs(region).describe_price, request)
        except TeaException as exc:
            if self._not_offered(exc):
                found.skipped.append(f"{what}: not offered ({error_text(exc)})")
                return
            raise
        price = (body.get("PriceInfo") or {}).get("Price") or {}
        details = ((price.get("DetailInfos") or {}).get("DetailInfo")) or []
        hours = [d for d in details if d.get("Resource") == "instanceType"]
        try:
            self._usd(price.get("Currency"), what)
            if len(hours) != 1:
                raise RejectedPriceError(f"{what}: the answer has {len(hours)} instanceType price detail(s)")
            found.on_demand[(name, region)] = accept(hours[0].get("OriginalPrice"), what)
        except RejectedPriceError as exc:
            found.skipped.append(str(exc))

    def _not_offered(self, exc: TeaException) -> bool:
        """A 4xx answer other than throttling or a credential problem: this type is not sold in this region."""
        code = str(getattr(exc, "code", "") or "")
        status = getattr(exc, "status_code", None)
        if code in CREDENTIAL_CODES:
            raise credentials_problem(exc) from None
        return isinstance(status, int) and 400 <= status < 500 and code not in THROTTLING_CODES

    def disks(self, region: str, found: Fetched) -> None:
        known = self.catalog.region_prices("alicloud", region)
        for item in sorted(known.block_storage_gb_month) if known else []:
            category, level = disk_probe(item)
            disk = ecs_models.DescribePriceRequestDataDisk(category=category, size=DISK_PROBE_GB, performance_level=level)
            request = ecs_models.DescribePriceRequest(region_id=region, resource_type="disk", price_unit="Hour",
                                                      data_disk=[disk])
            what = f"alicloud {item} GB-month in {region}"
            try:
                body = self._answer(found, self.clients.ecs(region).describe_price, request)
            except TeaException as exc:
                if self._not_offered(exc):
                    found.skipped.append(f"{what}: not offered ({error_text(exc)})")
                    continue
                raise
            price = (body.get("PriceInfo") or {}).get("Price") or {}
            try:
                self._usd(price.get("Currency"), what)
                hourly = accept(price.get("OriginalPrice"), what)
                found.region_items[(region, f"blockStorageGbMonth.{item}")] = round(hourly * HOURS_PER_MONTH / DISK_PROBE_GB, 6)
            except RejectedPriceError as exc:
                found.skipped.append(str(exc))

    # --- spot --------------------------------------------------------------------------------------------------

    def spot(self, region: str, name: str, found: Fetched) -> None:
        request = ecs_models.DescribeSpotPriceHistoryRequest(region_id=region, instance_type=name, network_type="vpc",
                                                             ostype="linux", offset=0)
        latest: dict[str, tuple[str, Any]] = {}
        currency = None
        for _ in range(MAX_PAGES):
            body = self._answer(found, self.clients.ecs(region).describe_spot_price_history, request)
            currency = body.get("Currency") or currency
            page = ((body.get("SpotPrices") or {}).get("SpotPriceType")) or []
            for entry in page:
                zone, when = str(entry.get("ZoneId", "")), str(entry.get("Timestamp", ""))
                if entry.get("InstanceType", name) == name and (zone not in latest or when > latest[zone][0]):
                    latest[zone] = (when, entry.get("SpotPrice"))  # ISO 8601 UTC strings order as times
            following = body.get("NextOffset")
            if not page or not isinstance(following, int) or following <= (request.offset or 0):
                break
            request.offset = following
        what = f"alicloud {name} spot in {region}"
        if currency and currency != CURRENCY:
            found.skipped.append(f"{what}: priced in {currency}; the catalog is in {CURRENCY}")
            return
        for zone, (_, price) in sorted(latest.items()):
            if zone_in_region(zone, region):
                found.put(found.spot, (name, zone), price, f"alicloud {name} spot in {zone}")
