"""Compute forms: every way a program gets an instance on either cloud, read one way.

``forms`` holds the registry's shape, ``aws_forms`` and ``alicloud_forms`` its entries, ``units`` resolves a
stack's resources into compute units (each form with the templates it launches from), ``accelerators`` says which
instance types carry GPUs or other accelerators, ``paths`` reads inputs by path.
"""

from __future__ import annotations

from gpulease.core.compute.accelerators import is_accelerated
from gpulease.core.compute.forms import FORMS, MIXED, ON_DEMAND, SPOT, ComputeForm, Market, form_of
from gpulease.core.compute.paths import UNKNOWN, read, read_all
from gpulease.core.compute.units import ComputeUnit, Registered, compute_units, templates_of, unit_of

__all__ = [
    "FORMS",
    "MIXED",
    "ON_DEMAND",
    "SPOT",
    "UNKNOWN",
    "ComputeForm",
    "ComputeUnit",
    "Market",
    "Registered",
    "compute_units",
    "form_of",
    "is_accelerated",
    "read",
    "read_all",
    "templates_of",
    "unit_of",
]
