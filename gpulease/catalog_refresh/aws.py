"""AWS prices: the Price List Query API for on-demand, storage and address prices; EC2 for current spot prices.

Price List Query API (``pricing`` client, ``GetProducts``, https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_pricing_GetProducts.html):
- Its endpoints are in us-east-1, eu-central-1 and ap-south-1 only ("The Price List Query API provides the
  following endpoints", https://docs.aws.amazon.com/awsaccountbilling/latest/aboutv2/using-price-list-query-api.html);
  the endpoint region is unrelated to the region whose prices are asked for, which is a ``regionCode`` filter.
- Each ``PriceList`` item is a JSON document (a string): ``product.attributes`` and ``terms.OnDemand`` ->
  ``priceDimensions`` -> ``unit``, ``beginRange``, ``pricePerUnit.USD`` (the shape of the reference's example,
  botocore ``data/pricing/2017-10-15/examples-1.json``). Pages of at most 100 (``MaxResults``), ``NextToken`` to
  go on: botocore's ``GetProducts`` paginator.
- One on-demand Linux rate needs every discriminator: ``operatingSystem=Linux``, ``tenancy=Shared``,
  ``preInstalledSw=NA``, ``capacitystatus=Used``, ``licenseModel=No License required`` and
  ``marketoption=OnDemand`` (without it a Capacity Block SKU at $0.00 comes back for p5); GPU types are
  ``instanceFamily=GPU instance`` (bare-metal types carry productFamily "Compute Instance (bare metal)", so the
  product family is not filtered). Should two SKUs still disagree, the type is skipped, not guessed.
- EBS capacity: productFamily ``Storage``, ``volumeApiName``, unit ``GB-Mo``; provisioned IOPS: productFamily
  ``System Operation``, unit ``IOPS-Mo`` (the first tier); snapshots: productFamily ``Storage Snapshot``,
  usagetype ending ``EBS:SnapshotUsage``; public IPv4: AmazonVPC usagetype ending ``PublicIPv4:InUseAddress``
  (unit ``Hrs``); S3 Standard: AmazonS3 ``storageClass=General Purpose``, ``volumeType=Standard``, the first tier.
  Not refreshed: gp3 throughput (its Price List unit is not verified here) and internet egress.

Spot (EC2 ``DescribeSpotPriceHistory``, https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeSpotPriceHistory.html):
with a start and end time, "it also returns the last price change before the start time, which is the effective
price as of the start time" (the botocore operation documentation); asking for ``StartTime = EndTime = now``
gives the price in effect now, per zone; the latest entry per (type, zone) wins. Paged by the SDK's paginator.

Calls run through ``AwsClients`` (one session, the standard credential chain, botocore's retry mode and
timeouts per attempt), so throttling (``ThrottlingException``) is retried by botocore, not by a loop of ours.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from gpulease.catalog_refresh.fetched import Fetched, NewType, RejectedPriceError, accept, family
from gpulease.core.catalog import Catalog
from gpulease.core.catalog.models import zone_in_region
from gpulease.inventory.aws import CREDENTIAL_ERRORS, AwsClients, credentials_problem

PRICING_REGIONS = ("us-east-1", "eu-central-1", "ap-south-1")
"""The AWS Price List Query API's endpoint regions (see the module docstring for the source)."""
DEFAULT_PRICING_REGION = "us-east-1"

PAGE_SIZE = 100  # GetProducts' MaxResults upper bound (botocore service model: GetProductsMaxResults max 100)
SPOT_BATCH = 20  # instance types per DescribeSpotPriceHistory call: the reference states no limit; stay modest
LINUX = ("Linux/UNIX", "Linux/UNIX (Amazon VPC)")

ON_DEMAND_LINUX = {
    "instanceFamily": "GPU instance",
    "operatingSystem": "Linux",
    "tenancy": "Shared",
    "preInstalledSw": "NA",
    "capacitystatus": "Used",
    "licenseModel": "No License required",
    "marketoption": "OnDemand",
}
_GIB = re.compile(r"^\s*([\d.]+)\s*GiB\s*\Z")


class PriceClients(AwsClients):
    """``AwsClients`` with this command's user agent."""

    @property
    def config(self) -> Config:
        return super().config.merge(Config(user_agent_extra="gpulease-catalog-refresh"))


def term_filters(**fields: str) -> list[dict[str, str]]:
    return [{"Type": "TERM_MATCH", "Field": k, "Value": v} for k, v in fields.items()]


def products(pricing: Any, service: str, filters: list[dict[str, str]]) -> Iterator[dict[str, Any]]:
    """Every product ``GetProducts`` lists for ``filters``, page after page, each parsed from its JSON."""
    pages = pricing.get_paginator("get_products").paginate(
        ServiceCode=service, Filters=filters, FormatVersion="aws_v1", PaginationConfig={"PageSize": PAGE_SIZE}
    )
    for page in pages:
        for item in page.get("PriceList", []):
            yield json.loads(item) if isinstance(item, str) else item


@dataclass(frozen=True)
class Dimension:
    unit: str
    begin: str
    usd: Any


def dimensions(product: dict[str, Any]) -> list[Dimension]:
    """The on-demand price dimensions of a product."""
    found = []
    for term in ((product.get("terms") or {}).get("OnDemand") or {}).values():
        for dim in (term.get("priceDimensions") or {}).values():
            found.append(Dimension(str(dim.get("unit", "")), str(dim.get("beginRange", "0")),
                                   (dim.get("pricePerUnit") or {}).get("USD")))
    return found


def attributes(product: dict[str, Any]) -> dict[str, str]:
    return (product.get("product") or {}).get("attributes") or {}


def one_price(found: Fetched, products_: list[dict[str, Any]], unit: str, what: str) -> float | None:
    """The single first-tier ``unit`` price the products agree on; None (and a note) when none or several."""
    prices, rejected = set(), False
    for product in products_:
        for dim in dimensions(product):
            if dim.unit == unit and dim.begin in ("0", "0.0"):
                try:
                    prices.add(accept(dim.usd, what))
                except RejectedPriceError as exc:
                    found.skipped.append(str(exc))
                    rejected = True
    if len(prices) == 1 and not rejected:
        return prices.pop()
    if prices or not rejected:
        found.skipped.append(f"{what}: {len(prices) or 'no'} {unit} price(s) found; not written")
    return None


def _later(when: datetime | None, than: datetime | None) -> bool:
    return when is not None and (than is None or when > than)


def _gib(text: str) -> float | None:
    match = _GIB.match(text or "")
    return float(match.group(1)) if match else None


def _int(text: str) -> int | None:
    try:
        return int(str(text).strip())
    except ValueError:
        return None


class AwsRefresh:
    """Fetches one region's prices at a time into a ``Fetched``; errors of a step become failures of the refresh."""

    def __init__(self, clients: AwsClients, catalog: Catalog, now: datetime, pricing_region: str = DEFAULT_PRICING_REGION):
        self.clients = clients
        self.catalog = catalog
        self.now = now
        self.pricing_region = pricing_region
        self.known = {it.type: it for it in catalog.instances if it.cloud == "aws"}
        self.families = {family("aws", t): t for t in sorted(self.known)}

    @property
    def pricing(self) -> Any:
        return self.clients.client("pricing", self.pricing_region)

    def step(self, found: Fetched, what: str, action: Callable[[], None]) -> None:
        """Run one step; a credential problem is the user's (raised), any other failure is recorded."""
        try:
            action()
        except CREDENTIAL_ERRORS as exc:
            raise credentials_problem(exc) from None
        except ClientError as exc:
            error = exc.response.get("Error", {})
            if error.get("Code") in ("UnrecognizedClientException", "InvalidClientTokenId", "AuthFailure"):
                raise credentials_problem(exc) from None
            found.failures.append(f"aws {what}: {error.get('Code', 'error')}: {error.get('Message', exc)}")
        except BotoCoreError as exc:
            found.failures.append(f"aws {what}: {exc}")

    # --- on-demand GPU instances ------------------------------------------------------------------------------

    def instances(self, region: str, found: Fetched) -> None:
        filters = term_filters(regionCode=region, **ON_DEMAND_LINUX)
        by_type: dict[str, list[dict[str, Any]]] = {}
        for product in products(self.pricing, "AmazonEC2", filters):
            name = attributes(product).get("instanceType", "")
            if family("aws", name) in self.families:
                by_type.setdefault(name, []).append(product)
        for name, items in sorted(by_type.items()):
            price = one_price(found, items, "Hrs", f"aws {name} on-demand in {region}")
            if price is None:
                continue
            if name not in self.known and name not in found.new_types:
                new = self._new_type(name, attributes(items[0]))
                if new is None:
                    found.skipped.append(f"aws {name} in {region}: the Price List lacks its GPU count, vCPUs or memory")
                    continue
                found.new_types[name] = new
            found.on_demand[(name, region)] = price

    def _new_type(self, name: str, attrs: dict[str, str]) -> NewType | None:
        gpus, vcpu, ram = _int(attrs.get("gpu", "")), _int(attrs.get("vcpu", "")), _gib(attrs.get("memory", ""))
        if not gpus or not vcpu or not ram or not 1 <= gpus <= 16:
            return None
        return NewType("aws", name, gpus, vcpu, ram, family_of=self.families[family("aws", name)])

    # --- storage and addresses -------------------------------------------------------------------------------

    def storage(self, region: str, found: Fetched) -> None:
        known = self.catalog.region_prices("aws", region)
        disk_types = sorted(known.block_storage_gb_month) if known else []
        iops_types = sorted(known.provisioned_iops_month) if known else []
        volumes = list(products(self.pricing, "AmazonEC2", term_filters(regionCode=region, productFamily="Storage")))
        for disk in disk_types:
            mine = [p for p in volumes if attributes(p).get("volumeApiName") == disk]
            if (price := one_price(found, mine, "GB-Mo", f"aws {disk} GB-month in {region}")) is not None:
                found.region_items[(region, f"blockStorageGbMonth.{disk}")] = price
        ops = list(products(self.pricing, "AmazonEC2", term_filters(regionCode=region, productFamily="System Operation")))
        for disk in iops_types:
            mine = [p for p in ops if attributes(p).get("volumeApiName") == disk]
            if (price := one_price(found, mine, "IOPS-Mo", f"aws {disk} IOPS-month in {region}")) is not None:
                found.region_items[(region, f"provisionedIopsMonth.{disk}")] = price
        snaps = [p for p in products(self.pricing, "AmazonEC2", term_filters(regionCode=region, productFamily="Storage Snapshot"))
                 if attributes(p).get("usagetype", "").endswith("EBS:SnapshotUsage")]
        if (price := one_price(found, snaps, "GB-Mo", f"aws snapshot GB-month in {region}")) is not None:
            found.region_items[(region, "snapshotGbMonth")] = price
        ipv4 = [p for p in products(self.pricing, "AmazonVPC", [
            *term_filters(regionCode=region), {"Type": "CONTAINS", "Field": "usagetype", "Value": "PublicIPv4:InUseAddress"}])
            if attributes(p).get("usagetype", "").endswith("PublicIPv4:InUseAddress")]
        if (price := one_price(found, ipv4, "Hrs", f"aws public IPv4 hour in {region}")) is not None:
            found.region_items[(region, "publicIpv4Hour")] = price
        s3 = list(products(self.pricing, "AmazonS3", term_filters(regionCode=region, storageClass="General Purpose",
                                                                  volumeType="Standard")))
        if (price := one_price(found, s3, "GB-Mo", f"aws S3 Standard GB-month in {region}")) is not None:
            found.region_items[(region, "objectStorageGbMonth")] = price

    # --- spot ------------------------------------------------------------------------------------------------

    def spot(self, region: str, types: list[str], found: Fetched) -> None:
        """The price in effect now of each type in each zone of ``region`` (the latest entry per type and zone)."""
        latest: dict[tuple[str, str], tuple[datetime | None, Any]] = {}
        ec2 = self.clients.ec2(region)
        for start in range(0, len(types), SPOT_BATCH):
            pages = ec2.get_paginator("describe_spot_price_history").paginate(
                InstanceTypes=types[start:start + SPOT_BATCH], ProductDescriptions=list(LINUX),
                StartTime=self.now, EndTime=self.now,
            )
            for page in pages:
                for entry in page.get("SpotPriceHistory", []):
                    if not str(entry.get("ProductDescription", "")).startswith("Linux/UNIX"):
                        continue
                    key = (str(entry.get("InstanceType")), str(entry.get("AvailabilityZone")))
                    when = entry.get("Timestamp")
                    if key not in latest or _later(when, latest[key][0]):
                        latest[key] = (when, entry.get("SpotPrice"))
        for (name, zone), (_, price) in sorted(latest.items()):
            if name in types and zone_in_region(zone, region):
                found.put(found.spot, (name, zone), price, f"aws {name} spot in {zone}")
