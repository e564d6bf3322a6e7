"""The instance catalog: GPU instance types with their GPUs and prices, loaded from dated data files.

``models`` holds the row types, ``loader`` reads the shipped files and any overrides, ``dating`` dates each price,
``freshness`` says how old the prices behind a figure are. Turning a spec's ``gpu`` section into an instance type
is sizing's job (``gpulease.core.sizing.resolve``).
"""

from __future__ import annotations

from gpulease.core.catalog.loader import DATA_DIR, OVERRIDES_ENV, CatalogError, load_catalog
from gpulease.core.catalog.models import HOURS_PER_MONTH, Catalog, InstanceType, RegionPrices, Source

__all__ = [
    "DATA_DIR",
    "HOURS_PER_MONTH",
    "OVERRIDES_ENV",
    "Catalog",
    "CatalogError",
    "InstanceType",
    "RegionPrices",
    "Source",
    "load_catalog",
]
