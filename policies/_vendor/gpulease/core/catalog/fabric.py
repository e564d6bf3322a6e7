"""The network between the nodes of a cluster: the fabric each instance type takes and its bandwidth.

Read from ``fabric.yaml`` beside this file (dated sources there). A type the file does not list is a TCP node of
unknown bandwidth, never an error: a single-node stack does not care, and a cluster of such nodes still works
(``gpulease size`` warns that its communication cost cannot be judged).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic.alias_generators import to_camel

from gpulease.core import inputfile
from gpulease.core.catalog.loader import CatalogError
from gpulease.core.catalog.models import Cloud, Source

FABRIC_FILE = Path(__file__).parent / "fabric.yaml"

FabricKind = Literal["efa", "erdma", "tcp"]
FABRIC_TITLES: dict[str, str] = {"efa": "EFA", "erdma": "eRDMA", "tcp": "TCP"}


class Fabric(BaseModel):
    """One instance type's network between nodes."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)

    cloud: Cloud
    type: str = Field(..., min_length=3)
    fabric: FabricKind
    interfaces: int = Field(0, ge=0, le=64, description="EFA interfaces (AWS) or ERIs (Alibaba Cloud) the type takes.")
    network_gbps: float | None = Field(None, gt=0, description="The instance's network bandwidth, Gbit/s.")
    low_latency: bool = Field(False, description="A cluster placement group / LowLatency deployment set applies.")
    source: str = ""

    @model_validator(mode="after")
    def _interfaces_match(self) -> Fabric:
        if (self.fabric == "tcp") != (self.interfaces == 0):
            raise ValueError(f"{self.type}: fabric {self.fabric} with {self.interfaces} interfaces; tcp has none, "
                             "efa and erdma at least one")
        if (self.fabric == "efa" and self.cloud != "aws") or (self.fabric == "erdma" and self.cloud != "alicloud"):
            raise ValueError(f"{self.type}: {self.fabric} is not a fabric of {self.cloud}")
        return self

    @property
    def title(self) -> str:
        """``EFA ×4, 400 Gbit/s``; ``TCP, Gbit/s unknown``."""
        count = f" ×{self.interfaces}" if self.interfaces > 1 else ""
        speed = f"{self.network_gbps:g} Gbit/s" if self.network_gbps else "Gbit/s unknown"
        return f"{FABRIC_TITLES[self.fabric]}{count}, {speed}"


class FabricTable(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    sources: dict[str, Source]
    fabric: list[Fabric]


@lru_cache(maxsize=1)
def fabric_table() -> FabricTable:
    """The shipped table, validated once (a row naming an unknown source is a packaging error)."""
    try:
        doc = inputfile.load_package_yaml(FABRIC_FILE)
        table = FabricTable.model_validate(doc.data)
    except (inputfile.InputFileError, ValidationError) as exc:
        raise CatalogError(f"{FABRIC_FILE.name}: {exc}") from None
    unknown = sorted({row.source for row in table.fabric} - set(table.sources))
    if unknown:
        raise CatalogError(f"{FABRIC_FILE.name}: unknown source(s) {', '.join(unknown)}")
    return table


def fabric_of(cloud: str, instance_type: str) -> Fabric:
    """The fabric of ``instance_type``: its row, else a TCP node of unknown bandwidth."""
    for row in fabric_table().fabric:
        if row.cloud == cloud and row.type == instance_type:
            return row
    return Fabric(cloud=cloud, type=instance_type, fabric="tcp")  # type: ignore[arg-type]
