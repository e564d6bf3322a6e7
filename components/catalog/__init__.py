"""The instance catalog: GPU instance types with their GPUs and prices, loaded from dated data files.

``resolve_instance_type`` turns the spec's ``gpu`` section into one instance type for the stack's region:
an explicit type is checked against the catalog's GPU count; requirements pick the cheapest type that meets
them in that region.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from components.errors import UserError

DATA_DIR = Path(__file__).parent


class CatalogError(UserError):
    """A malformed catalog file or a request the catalog cannot satisfy."""


class InstanceType(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)

    cloud: str
    type: str
    gpu_model: str
    gpu_count: int = Field(..., ge=1)
    gpu_memory_gb: float = Field(..., gt=0)
    vcpu: int = Field(..., ge=1)
    ram_gb: float = Field(..., gt=0)
    prices: dict[str, float]
    spot_discount: float = Field(..., ge=0, lt=1)
    source: str

    def on_demand_price(self, region: str) -> float | None:
        return self.prices.get(region)


class Catalog(BaseModel):
    as_of: str
    instances: list[InstanceType]

    def get(self, cloud: str, instance_type: str) -> InstanceType | None:
        for item in self.instances:
            if item.cloud == cloud and item.type == instance_type:
                return item
        return None

    def offers(
        self, cloud: str, region: str, *, gpu_memory_gb: float | None, count: int, model: str | None
    ) -> list[InstanceType]:
        """Types meeting the requirements with a price in ``region``, cheapest first."""
        found = [
            it
            for it in self.instances
            if it.cloud == cloud
            and region in it.prices
            and it.gpu_count == count
            and (gpu_memory_gb is None or it.gpu_memory_gb >= gpu_memory_gb)
            and (model is None or it.gpu_model.lower() == model.lower())
        ]
        return sorted(found, key=lambda it: (it.prices[region], it.type))


@lru_cache(maxsize=1)
def load_catalog() -> Catalog:
    path = DATA_DIR / "instances.yaml"
    raw = yaml.safe_load(path.read_text())
    rows = raw.get("instances", [])
    items = []
    for i, row in enumerate(rows):
        try:
            items.append(InstanceType.model_validate(row))
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"])
            raise CatalogError(f"{path}: instances[{i}] ({row.get('type', '?')}): {field}: {first['msg']}") from None
    return Catalog(as_of=str(raw.get("asOf")), instances=items)


def resolve_instance_type(cloud: str, region: str, gpu: object) -> InstanceType:
    """The instance type for a spec's ``gpu`` section (``components.spec.GpuSpec``) in ``region``."""
    catalog = load_catalog()
    instance_type = getattr(gpu, "instance_type", None)
    if instance_type is not None:
        known = catalog.get(cloud, instance_type)
        if known is None:
            names = ", ".join(sorted(it.type for it in catalog.instances if it.cloud == cloud))
            raise CatalogError(f"instance type {instance_type!r} is not in the {cloud} catalog; known: {names}")
        return known
    memory = getattr(gpu, "gpu_memory_gb", None)
    count = getattr(gpu, "count", 1)
    model = getattr(gpu, "model", None)
    offers = catalog.offers(cloud, region, gpu_memory_gb=memory, count=count, model=model)
    if not offers:
        want = f"{count} x GPU" + (f" {model}" if model else "") + (f" with >= {memory:g} GB" if memory else "")
        raise CatalogError(f"no {cloud} instance type in {region} offers {want}")
    return offers[0]
