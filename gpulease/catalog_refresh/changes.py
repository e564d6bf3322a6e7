"""What a refresh changed against the catalog in use: type or item, region or zone, old -> new, and by how much."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from rich.markup import escape
from rich.table import Table

from gpulease.catalog_refresh.fetched import Fetched
from gpulease.core.catalog import Catalog
from gpulease.core.cost import region_from_zone
from gpulease.core.printable import printable

SAME = 1e-9


@dataclass(frozen=True)
class Change:
    cloud: str
    kind: str  # on-demand, spot, storage
    name: str  # instance type, or price item (blockStorageGbMonth.gp3, snapshotGbMonth, ...)
    where: str  # region, or zone for spot
    old: float | None  # None: the catalog had no such price
    new: float

    @property
    def percent(self) -> float | None:
        return None if self.old is None else (self.new - self.old) / self.old * 100

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "percent": None if self.percent is None else round(self.percent, 2)}


@dataclass
class Report:
    changes: list[Change]
    unchanged: int
    new_types: list[str]


def compare(catalog: Catalog, fetched: list[Fetched]) -> Report:
    changes: list[Change] = []
    unchanged = 0

    def note(change: Change) -> None:
        nonlocal unchanged
        if change.old is not None and abs(change.new - change.old) <= SAME:
            unchanged += 1
        else:
            changes.append(change)

    new_types = []
    for found in fetched:
        for (name, region), price in sorted(found.on_demand.items()):
            known = catalog.get(found.cloud, name)
            note(Change(found.cloud, "on-demand", name, region, known.on_demand_price(region) if known else None, price))
        for (name, zone), price in sorted(found.spot.items()):
            known = catalog.get(found.cloud, name)
            note(Change(found.cloud, "spot", name, zone, known.spot_prices.get(zone) if known else None, price))
        for (region, item), price in sorted(found.region_items.items()):
            row = catalog.region_prices(found.cloud, region)
            note(Change(found.cloud, "storage", item, region, row.item_price(item) if row else None, price))
        new_types += [f"{found.cloud} {name}" for name in sorted(found.new_types)]
    return Report(changes, unchanged, new_types)


def _usd(value: float | None) -> str:
    return "new" if value is None else f"{value:.6g}"


def rows(report: Report) -> list[Change]:
    """The changes as the table shows them: spot prices summed up per type and region (the cheapest zone before and
    after, and how many zones), every other change as it is."""
    out = [c for c in report.changes if c.kind != "spot"]
    groups: dict[tuple[str, str, str], list[Change]] = {}
    for c in report.changes:
        if c.kind == "spot":
            groups.setdefault((c.cloud, c.name, region_from_zone(c.where) or c.where), []).append(c)
    for (cloud, name, region), found in groups.items():
        olds = [c.old for c in found if c.old is not None]
        out.append(Change(cloud, f"spot, cheapest of {len(found)} zone(s)", name, region,
                          min(olds) if olds else None, min(c.new for c in found)))
    return out


def table(report: Report) -> Table:
    """The change report: one row per changed price (spot per type and region), largest moves first per kind."""
    out = Table(title=f"prices that changed ({len(report.changes)}; {report.unchanged} unchanged)", title_justify="left")
    for column, justify in (("cloud", "left"), ("price", "left"), ("type / item", "left"), ("region", "left"),
                            ("old $", "right"), ("new $", "right"), ("change", "right")):
        out.add_column(column, justify=justify)  # type: ignore[arg-type]
    order = {"on-demand": 0, "storage": 2}
    for c in sorted(rows(report), key=lambda c: (c.cloud, order.get(c.kind, 1), -abs(c.percent or 0), c.name, c.where)):
        pct = "" if c.percent is None else f"{c.percent:+.1f}%"
        style = "" if c.percent is None else "red" if c.percent > 0 else "green"
        out.add_row(*(escape(printable(str(x))) for x in (c.cloud, c.kind, c.name, c.where)), _usd(c.old), f"{c.new:.6g}", f"[{style}]{pct}[/{style}]" if style else pct)
    return out
