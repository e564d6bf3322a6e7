"""The phase a stack runs in (``phase: prep | train | parked``), as the skeleton builds it.

One experiment spec, three shapes of the same stack; the data disk and the bucket are the same in all three:

- ``train``: the spec as written (the GPU instance);
- ``prep``: ``phase_view`` turns the spec into the preparation instance's: on-demand (an interactive session is
  not worth a spot interruption), the preparation phase's own deadline (``prep.maxRuntimeHours``) and idle time;
  its type is the cheapest CPU catalog type with ``prep.vcpus`` and ``prep.memoryGb`` (``prep_instance_type``);
- ``parked``: no instance at all; the data disk is kept whatever ``dataDisk.retain`` says (retained on destroy,
  tagged ``gpulease:retain=true`` and ``gpulease:phase=parked``: parking exists to keep the disk, and the reaper
  never deletes a disk so tagged, ``gpulease/inventory/decide.py``).

The instance is placed in the zone the GPU type decides in every phase (``build.prepare``), so that switching
phase never moves (and so never replaces) the data disk; the preparation type must be offered in that zone.
Each phase records its own deadline (``components.deadline.record_name``): switching phase starts the new
phase's clock, as a renewal does.
"""

from __future__ import annotations

from components.spec.experiment import ExperimentSpec
from components.spec.load import SpecError, StackSpec
from gpulease.core import vocabulary as v
from gpulease.core.catalog import CatalogError, CatalogFileError
from gpulease.core.catalog.cpu import CpuInstanceType, load_cpu_catalog

PREP_ON_DEMAND_REASON = "preparation phase: a CPU instance for interactive work and data preparation"


def has_instance(exp: ExperimentSpec) -> bool:
    return exp.phase != "parked"


def phase_view(exp: ExperimentSpec) -> ExperimentSpec:
    """The spec the instance of ``exp``'s phase is built from (``exp`` itself for ``train``; for ``parked`` the
    same with its data disk retained)."""
    if exp.phase == "parked":
        return exp.model_copy(update={"data_disk": exp.data_disk.model_copy(update={"retain": True})})
    if exp.phase != "prep":
        return exp
    return exp.model_copy(update={
        "market": "on-demand",
        "on_demand_reason": PREP_ON_DEMAND_REASON,
        "max_spot_price_usd": None,
        "spot": exp.spot.model_copy(update={"recover": False}),  # on-demand: nothing reclaims it
        "max_runtime_hours": exp.prep.max_runtime_hours,
        "idle_minutes": exp.prep.idle_minutes,
    })


def phased(spec: StackSpec) -> StackSpec:
    """The stack with every experiment in its phase's shape."""
    if all(e.phase == "train" for e in spec.experiments):
        return spec
    return spec.model_copy(update={"experiments": [phase_view(e) for e in spec.experiments]})


def prep_instance_type(spec: StackSpec, region: str) -> dict[str, CpuInstanceType]:
    """The preparation instance's type of every experiment in ``prep`` (a ``CatalogError`` with the field path
    ``prep`` when the catalog has none big enough in the region)."""
    catalog = load_cpu_catalog()
    found: dict[str, CpuInstanceType] = {}
    problems: list[tuple[str, str]] = []
    for i, exp in enumerate(spec.experiments):
        if exp.phase == "prep":
            try:
                found[exp.name] = catalog.cheapest(spec.cloud, region, vcpus=exp.prep.vcpus, memory_gb=exp.prep.memory_gb)
            except CatalogFileError:
                raise  # the file's own problem (file, line, row), not this field's
            except CatalogError as exc:
                where = "gpulease:experiment" if spec.kind == "experiment" else f"gpulease:sweep.runs[{i}]"
                problems.append((f"{where}.prep", exc.detail))
    if problems:
        raise SpecError(spec.stack, problems)
    return found


def parked_disk_tags(tags: dict) -> dict:
    """A parked experiment's data disk tags: retained, and saying its stack is parked."""
    return {**tags, v.TAG_RETAIN: "true", v.TAG_PHASE: v.PHASE_PARKED}
