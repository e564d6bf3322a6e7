"""The dated override file a refresh writes: the existing override format, checked before it replaces anything.

- Known instance types get ``prices`` (by region) and ``spotPrices`` (by zone) with ``asOf`` = the refresh date;
  the loader dates only those prices so (``gpulease.core.catalog.dating``), every other price keeps its own date.
- A new type of a known family gets a complete row: its GPU facts (model, memory, bandwidth, link, typical spot
  discount) from a known type of its family, its GPU count, vCPUs and memory from the API, and ``source`` naming
  the price API. A new multi-GPU type whose family has no known multi-GPU type is written as ``pcie`` (the
  cautious assumption: it only adds a scaling warning).
- Region rows carry the storage and address prices found, only for regions the catalog already has (a new region
  row must be complete, and egress is in no price API used here).
- A spot price is written only for a zone of a region where the type has an on-demand price (its cap).

Every number is checked once more (finite, positive), the document is written to a temporary file beside the
target, loaded with the catalog loader (the exact check every later reader applies) and only then moved into
place, so a failed refresh never leaves a half-written or invalid override behind.
"""

from __future__ import annotations

import math
import os
from datetime import date
from pathlib import Path
from typing import Any

import yaml

from gpulease.catalog_refresh.fetched import Fetched, NewType, family
from gpulease.core.catalog import Catalog, load_catalog
from gpulease.core.catalog.models import InstanceType, RegionPrices, zone_in_region

SOURCES: dict[str, tuple[str, dict[str, str]]] = {
    "aws": ("aws-price-list-api", {
        "url": "https://docs.aws.amazon.com/awsaccountbilling/latest/aboutv2/using-price-list-query-api.html",
        "note": "AWS Price List Query API (GetProducts) and EC2 DescribeSpotPriceHistory, via gpulease catalog refresh.",
    }),
    "alicloud": ("alicloud-describe-price", {
        "url": "https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-describeprice",
        "note": "ECS DescribePrice (list price, USD) and DescribeSpotPriceHistory, via gpulease catalog refresh.",
    }),
}


class UnsafeDocumentError(ValueError):
    """A value the refresh must never write (a NaN, an infinity, a negative, zero or empty price)."""


def _family_row(catalog: Catalog, new: NewType) -> InstanceType:
    sibling = catalog.get(new.cloud, new.family_of)
    assert sibling is not None
    return sibling


def _interconnect(catalog: Catalog, new: NewType) -> str:
    """The family's link for a multi-GPU type (from a known multi-GPU sibling), else ``pcie``."""
    if new.gpu_count == 1:
        return _family_row(catalog, new).interconnect
    mine = family(new.cloud, new.type)
    multi = [it.interconnect for it in catalog.instances
             if it.cloud == new.cloud and family(it.cloud, it.type) == mine and it.gpu_count > 1]
    return multi[0] if multi else "pcie"


def _new_row(catalog: Catalog, new: NewType) -> dict[str, Any]:
    sibling = _family_row(catalog, new)
    return {
        "cloud": new.cloud, "type": new.type, "gpuModel": sibling.gpu_model, "gpuCount": new.gpu_count,
        "gpuMemoryGb": sibling.gpu_memory_gb, "memoryBandwidthGbps": sibling.memory_bandwidth_gbps,
        "interconnect": _interconnect(catalog, new), "vcpu": new.vcpu, "ramGb": new.ram_gb,
        "spotDiscount": sibling.spot_discount, "source": SOURCES[new.cloud][0],
    }


def _known_row(it: InstanceType) -> dict[str, Any]:
    """The hardware facts of a type the shipped catalog lacks but an override in use has: the file stands alone."""
    return {
        "cloud": it.cloud, "type": it.type, "gpuModel": it.gpu_model, "gpuCount": it.gpu_count,
        "gpuMemoryGb": it.gpu_memory_gb, "memoryBandwidthGbps": it.memory_bandwidth_gbps,
        "interconnect": it.interconnect, "vcpu": it.vcpu, "ramGb": it.ram_gb, "spotDiscount": it.spot_discount,
        "source": SOURCES[it.cloud][0],
    }


def _known_region(row: RegionPrices, refreshed: dict[str, Any]) -> dict[str, Any]:
    """A region row the shipped catalog lacks, completed from the row in use; the prices not refreshed keep their
    own dates (``pricesAsOf``)."""
    out: dict[str, Any] = {"cloud": row.cloud, "region": row.region, "source": SOURCES[row.cloud][0]}
    dates = {}
    for item in row.item_keys():
        name, _, sub = item.partition(".")
        mine = refreshed.get(name)
        if (sub and isinstance(mine, dict) and sub in mine) or (not sub and name in refreshed):
            continue
        value = row.item_price(item)
        if sub:
            out.setdefault(name, {})[sub] = value
        else:
            out[name] = value
        dates[item] = row.item_date(item)
    for name, value in refreshed.items():
        if isinstance(value, dict):
            out.setdefault(name, {}).update(value)
        elif name not in ("cloud", "region"):
            out[name] = value
    return {**out, "pricesAsOf": dates} if dates else out


def document(catalog: Catalog, fetched: list[Fetched], as_of: date) -> dict[str, Any]:
    """The override document for what the refreshes found, complete enough to stand alone over the shipped
    catalog (which is what ``write`` checks it against): a type or region the shipped catalog lacks gets a whole
    row, from the API (a new type) or from the catalog in use (a type or region an override added). What it
    leaves out, and why, is added to each ``Fetched.skipped``."""
    base = load_catalog(overrides=())
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    regions: dict[tuple[str, str], dict[str, Any]] = {}
    sources = {}
    for found in fetched:
        key, source = SOURCES[found.cloud]
        sources[key] = source
        for (name, region), price in sorted(found.on_demand.items()):
            if name in found.new_types or catalog.get(found.cloud, name) is not None:
                row = rows.setdefault((found.cloud, name), {"cloud": found.cloud, "type": name})
                row.setdefault("prices", {})[region] = price
        for (name, zone), price in sorted(found.spot.items()):
            shipped = base.get(found.cloud, name)
            priced = set(shipped.prices if shipped else ()) | set(rows.get((found.cloud, name), {}).get("prices", {}))
            if any(zone_in_region(zone, r) for r in priced):
                row = rows.setdefault((found.cloud, name), {"cloud": found.cloud, "type": name})
                row.setdefault("spotPrices", {})[zone] = price
            else:
                found.skipped.append(f"{found.cloud} {name} spot in {zone}: no on-demand price in its region to cap it")
        for (cloud, name), row in list(rows.items()):
            if cloud != found.cloud or base.get(cloud, name) is not None:
                continue
            if "prices" not in row:
                del rows[(cloud, name)]  # no on-demand price anywhere: not a usable row
            elif name in found.new_types:
                rows[(cloud, name)] = {**_new_row(catalog, found.new_types[name]), **row}
            elif (known := catalog.get(cloud, name)) is not None:
                rows[(cloud, name)] = {**_known_row(known), **row}
        for (region, item), price in sorted(found.region_items.items()):
            if catalog.region_prices(found.cloud, region) is None:
                found.skipped.append(f"{found.cloud} {item} in {region}: the catalog has no row for {region} "
                                     "(egress and the other prices are not in the APIs); add one by hand")
                continue
            row = regions.setdefault((found.cloud, region), {"cloud": found.cloud, "region": region})
            name, _, sub = item.partition(".")
            if sub:
                row.setdefault(name, {})[sub] = price
            else:
                row[name] = price
        for (cloud, region), row in list(regions.items()):
            in_use = catalog.region_prices(cloud, region)
            if cloud == found.cloud and base.region_prices(cloud, region) is None and in_use is not None:
                regions[(cloud, region)] = _known_region(in_use, row)
    out: dict[str, Any] = {"sources": sources}
    if rows:
        out["instances"] = [{**row, "asOf": as_of} for _, row in sorted(rows.items())]
    if regions:
        out["regions"] = [{**row, "asOf": as_of} for _, row in sorted(regions.items())]
    check(out)
    return out


PRICE_MAPS = ("prices", "spotPrices", "blockStorageGbMonth", "provisionedIopsMonth", "throughputMbpsMonth")
PRICE_SCALARS = ("snapshotGbMonth", "publicIpv4Hour", "objectStorageGbMonth", "egressGb")


def check(doc: dict[str, Any]) -> None:
    """Refuse any price that is not a finite positive number, and any empty price map, in ``doc``."""
    for section in ("instances", "regions"):
        for i, row in enumerate(doc.get(section) or []):
            where = f"{section}[{i}]"
            for name in PRICE_MAPS:
                if name in row:
                    if not isinstance(row[name], dict) or not row[name]:
                        raise UnsafeDocumentError(f"{where}.{name}: an empty price map")
                    for key, value in row[name].items():
                        _price(value, f"{where}.{name}.{key}")
            for name in PRICE_SCALARS:
                if name in row:
                    _price(row[name], f"{where}.{name}")


def _price(value: Any, where: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        raise UnsafeDocumentError(f"{where}: {value!r} is not a finite positive price")


class _Dumper(yaml.SafeDumper):
    """Every value written out: the catalog loader refuses YAML anchors and aliases (gpulease.core.inputfile)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def render(doc: dict[str, Any], header: list[str]) -> str:
    body = yaml.dump(doc, Dumper=_Dumper, sort_keys=False, default_flow_style=None, width=118, allow_unicode=True)
    return "".join(f"# {line}\n" if line else "#\n" for line in header) + body


def write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` only if the catalog loader accepts it as an override file."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        temporary.write_text(text)
        load_catalog([temporary])
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
