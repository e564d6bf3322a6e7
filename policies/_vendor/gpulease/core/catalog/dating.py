"""Which date each price carries when an override row is merged over a known one.

A row's ``asOf`` dates every price in it, unless a dates map says otherwise for one item: ``pricesAsOf`` (by
region) and ``spotPricesAsOf`` (by zone) on instance rows, ``pricesAsOf`` (by item, e.g.
``blockStorageGbMonth.gp3``) on region rows. When an override changes some prices of a known row, only those
prices take the override's date; the prices it does not give keep their own. Otherwise refreshing one region
would make the row's other, older prices look new, and a stale price would pass for a current one.

Rules, item by item, for the merged row:
- a date the override gives for the item in its dates map;
- else, if the override gives the item's price, the override's ``asOf``; without one the price is **undated**
  (``models.UNDATED``): its age is unknown, and every age check counts it as stale. It does not take the shipped
  row's date, which would make a price the user typed look as old, or as fresh, as one read on that day;
- else the date the item had.
The merged row stores in its dates maps every item whose date is not the merged ``asOf``; ``undated_items`` names
the prices an override left undated, for the advisory that names its file and row.
"""

from __future__ import annotations

from typing import Any

from gpulease.core.catalog.models import MAP_ITEMS, SCALAR_ITEMS, UNDATED

INSTANCE_DATED = {"prices": "pricesAsOf", "spotPrices": "spotPricesAsOf"}
"""Instance rows: price map -> the map of its dates (same keys)."""
REGION_DATES = "pricesAsOf"
DATED_MAPS = (*INSTANCE_DATED, *INSTANCE_DATED.values(), *MAP_ITEMS)
"""Maps an override merges key by key."""

Item = tuple[str, str]  # (dates map, key)


def _items(section: str, row: dict[str, Any]) -> list[Item]:
    found: list[Item] = []
    if section == "instances":
        for prices, dates in INSTANCE_DATED.items():
            value = row.get(prices)
            if isinstance(value, dict):
                found += [(dates, str(k)) for k in value]
    else:
        for name in MAP_ITEMS:
            value = row.get(name)
            if isinstance(value, dict):
                found += [(REGION_DATES, f"{name}.{k}") for k in value]
        found += [(REGION_DATES, name) for name in SCALAR_ITEMS if name in row]
    return found


def _dates(row: dict[str, Any], field: str) -> dict[str, Any]:
    value = row.get(field)
    return value if isinstance(value, dict) else {}


def redate(section: str, previous: dict[str, Any], override: dict[str, Any], merged: dict[str, Any]) -> dict[str, Any]:
    """``merged`` (``previous`` with ``override`` on top) with every price keeping the right date."""
    date_fields = set(INSTANCE_DATED.values()) if section == "instances" else {REGION_DATES}
    if any(field in override and not isinstance(override[field], dict) for field in date_fields):
        return merged  # malformed: validation reports the override's own value
    given = set(_items(section, override))
    known = set(_items(section, previous))
    merged_as_of = merged.get("asOf")
    items = _items(section, merged)
    out: dict[str, dict[str, Any]] = {}
    # A date for a price the row does not have is kept, so that validation names it rather than dropping it.
    for field in date_fields:
        for key, when in _dates(override, field).items():
            if (field, str(key)) not in items:
                out.setdefault(field, {})[key] = when
    for item in items:
        field, key = item
        explicit = _dates(override, field).get(key)
        if explicit is not None:
            when = explicit
        elif item in given:
            when = override["asOf"] if override.get("asOf") is not None else UNDATED
        elif item in known:
            when = _dates(previous, field).get(key, previous.get("asOf"))
        else:
            continue
        if str(when) != str(merged_as_of):
            out.setdefault(field, {})[key] = when
    result = dict(merged)
    for field in date_fields:
        if out.get(field):
            result[field] = out[field]
        else:
            result.pop(field, None)
    return result


def undated_items(section: str, override: dict[str, Any]) -> list[str]:
    """The prices an override row over a known row gives without any date (``prices.us-west-2``,
    ``blockStorageGbMonth.gp3``): none when it has an ``asOf``."""
    if override.get("asOf") is not None:
        return []
    out = []
    for field, key in _items(section, override):
        if _dates(override, field).get(key) is None:
            prices = next((p for p, d in INSTANCE_DATED.items() if d == field), None) if section == "instances" else None
            out.append(f"{prices}.{key}" if prices else key)
    return out
