"""The instance catalog: GPU instance types with their GPUs and prices, loaded from dated data files.

``models`` holds the row types, ``loader`` reads the shipped files and any overrides, ``dating`` dates each price,
``freshness`` says how old the prices behind a figure are. Turning a spec's ``gpu`` section into an instance type
is sizing's job (``gpulease.core.sizing.resolve``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpulease.core.catalog.loader import DATA_DIR, OVERRIDES_ENV, CatalogError, CatalogFileError, load_catalog
    from gpulease.core.catalog.models import HOURS_PER_MONTH, Catalog, InstanceType, RegionPrices, Source

_HOMES = {"DATA_DIR": "loader", "OVERRIDES_ENV": "loader", "CatalogError": "loader", "CatalogFileError": "loader",
          "load_catalog": "loader",
          "HOURS_PER_MONTH": "models", "Catalog": "models", "InstanceType": "models", "RegionPrices": "models",
          "Source": "models"}
"""Where each name of the package lives. They are imported on first use (PEP 562): the models are pydantic's,
whose import and class building are most of the policy pack's start-up, and a module that only needs a helper of
the package (``freshness``'s dates, ``accelerators``' patterns) does not need them until it reads the catalog."""


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


__all__ = [
    "DATA_DIR",
    "HOURS_PER_MONTH",
    "OVERRIDES_ENV",
    "Catalog",
    "CatalogError",
    "CatalogFileError",
    "InstanceType",
    "RegionPrices",
    "Source",
    "load_catalog",
]
