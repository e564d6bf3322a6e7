"""What a stack costs: per hour while it runs, at worst until its deadline, and per month after destroy.

``estimate.estimate_resources`` prices the resources a program registers (engine-form inputs) from the catalog:
``pricing`` prices one resource at a time, ``spot`` the expected and worst hourly figures of an instance,
``region`` finds the region the inputs name, ``lines`` holds the figures.
"""

from __future__ import annotations

from gpulease.core.cost.estimate import estimate_resources
from gpulease.core.cost.lines import SHARED, CostLine, ExperimentCost, StackCost, price_dates_used
from gpulease.core.cost.region import configured_region, configured_regions, derive_region, region_from_zone

__all__ = [
    "SHARED",
    "CostLine",
    "ExperimentCost",
    "StackCost",
    "configured_region",
    "configured_regions",
    "derive_region",
    "estimate_resources",
    "price_dates_used",
    "region_from_zone",
]
