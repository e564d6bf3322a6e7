"""Is this instance type a GPU (or other accelerator) type: the family patterns, then the catalog.

The patterns (``gpulease.core.vocabulary``) know the families by name; the catalog knows every type it prices,
including the ones an override file adds, so a new family listed there with ``gpuCount`` is guarded before the
patterns learn its name.
"""

from __future__ import annotations

from gpulease.core import vocabulary as v
from gpulease.core.catalog import Catalog, CatalogError, load_catalog

_TYPES: dict[int, frozenset[str]] = {}


def _catalog_types() -> frozenset[str]:
    try:
        catalog: Catalog = load_catalog()  # cached by the loader, per set of override files
    except CatalogError:
        return frozenset()  # a broken override file is the cost estimate's error to report, not this one's
    key = id(catalog)
    if key not in _TYPES:
        _TYPES.clear()
        _TYPES[key] = frozenset(it.type for it in catalog.instances if it.gpu_count > 0)
    return _TYPES[key]


def is_accelerated(instance_type: object) -> bool:
    """True for a GPU or ML-accelerator instance type of either cloud (see the module docstring)."""
    if not isinstance(instance_type, str) or not instance_type:
        return False
    return v.is_accelerated_instance_type(instance_type) or instance_type in _catalog_types()
