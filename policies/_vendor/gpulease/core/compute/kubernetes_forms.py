"""Kubernetes compute forms (pulumi_kubernetes): Karpenter ``NodePool``s and the ``EC2NodeClass``es they launch
from, registered as custom resources. ``pulumi_kubernetes``' ``CustomResource`` (and the typed classes crd2pulumi
generates) register the type ``kubernetes:<apiVersion>:<kind>`` (``pulumi_kubernetes/apiextensions/
CustomResource.py``), so a NodePool is ``kubernetes:karpenter.sh/v1:NodePool`` however it is written. Inputs are
the object as written: ``apiVersion``, ``kind``, ``metadata``, ``spec`` in Kubernetes' own (camelCase) names.
Every claim about what Karpenter does cites https://karpenter.sh/docs/concepts/nodepools/ (v1) or
https://karpenter.sh/docs/concepts/nodeclasses/.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from gpulease.core.compute.accelerators import hardware_of
from gpulease.core.compute.forms import (
    MIXED,
    ON_DEMAND,
    SPOT,
    TEMPLATE,
    ComputeForm,
    Disk,
    Market,
    Metadata,
    TemplateRef,
    UserData,
    register,
)
from gpulease.core.compute.paths import UNKNOWN, Uncountable, read, read_all

NODEPOOL_DOC = "https://karpenter.sh/docs/concepts/nodepools/"
NODECLASS_DOC = "https://karpenter.sh/docs/concepts/nodeclasses/"
NODE_POOLS = ("kubernetes:karpenter.sh/v1:NodePool", "kubernetes:karpenter.sh/v1beta1:NodePool")
NODE_CLASSES = ("kubernetes:karpenter.k8s.aws/v1:EC2NodeClass", "kubernetes:karpenter.k8s.aws/v1beta1:EC2NodeClass")

INSTANCE_TYPE_LABELS = ("node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type")
FAMILY_LABEL = "karpenter.k8s.aws/instance-family"
CATEGORY_LABEL = "karpenter.k8s.aws/instance-category"
GPU_LABELS = ("karpenter.k8s.aws/instance-gpu-count", "karpenter.k8s.aws/instance-gpu-name",
              "karpenter.k8s.aws/instance-gpu-manufacturer", "karpenter.k8s.aws/instance-accelerator-count",
              "karpenter.k8s.aws/instance-accelerator-name")
CAPACITY_LABEL = "karpenter.sh/capacity-type"
GPU_RESOURCES = ("nvidia.com/gpu", "amd.com/gpu", "aws.amazon.com/neuron", "aws.amazon.com/neuroncore",
                 "aws.amazon.com/neurondevice", "habana.ai/gaudi")
"""Extended resources that count accelerators (device plugins' names)."""
ACCELERATED_CATEGORIES = frozenset({"p", "g", "gr", "trn", "inf", "dl", "f", "vt"})
"""``instance-category`` values of the accelerated families (AWS accelerated computing)."""


def _requirements(props: Mapping[str, Any]) -> list[Any]:
    return read_all(props, "spec.template.spec.requirements.*")


def _allowed(props: Mapping[str, Any], keys: tuple[str, ...]) -> list[Any] | None:
    """The values an ``In`` requirement on one of ``keys`` allows; None when nothing restricts them."""
    found: list[Any] | None = None
    for req in _requirements(props):
        if req is UNKNOWN:
            return [UNKNOWN]
        if isinstance(req, Mapping) and req.get("key") in keys and req.get("operator") == "In":
            values = req.get("values")
            found = (found or []) + (list(values) if isinstance(values, list) else [UNKNOWN])
    return found


def node_pool_types(props: Mapping[str, Any]) -> list[Any]:
    """The instance types a NodePool's requirements allow, else the families they allow (a family name, such as
    ``p4d``, stands for every size of it)."""
    return _allowed(props, INSTANCE_TYPE_LABELS) or _allowed(props, (FAMILY_LABEL,)) or []


MAX_QUANTITY = 10**18
"""Above this a limit is no quantity a cluster holds (and an integer may be too large for a float)."""
QUANTITY = "a Kubernetes quantity (a non-negative number such as 1000 or \"1500m\")"


def quantity(value: Any) -> Any:
    """A Kubernetes quantity as a number (``100``, ``"100"``, ``"1500m"``, ``"2k"``); ``UNKNOWN`` kept; None when
    it is not one."""
    if value is UNKNOWN:
        return UNKNOWN
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and not 0 <= value <= MAX_QUANTITY:
        return None  # negative, or too large for a float (10**5000)
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) and value >= 0 else None
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*(m|k|M)?\s*", str(value)[:64], re.ASCII)
    if not match:
        return None
    scale = {"m": 0.001, "k": 1e3, "M": 1e6}.get(match.group(2) or "", 1.0)
    return float(match.group(1)) * scale


def node_pool_accelerator(props: Mapping[str, Any]) -> str | None:
    """What in a NodePool asks for accelerators besides instance types: a GPU limit, an accelerated category, a
    GPU requirement."""
    for name in GPU_RESOURCES:
        limit = quantity(_limit(props, name))
        if isinstance(limit, float) and limit > 0:
            return f"spec.limits {name}={limit:g}"
    categories = _allowed(props, (CATEGORY_LABEL,)) or []
    if any(isinstance(c, str) and c in ACCELERATED_CATEGORIES for c in categories):
        return f"{CATEGORY_LABEL} In {categories}"
    for req in _requirements(props):
        if isinstance(req, Mapping) and req.get("key") in GPU_LABELS and req.get("operator") in ("In", "Gt", "Exists"):
            return f"a {req.get('key')} {req.get('operator')} requirement"
    return None  # accelerated families and instance types are its types, judged as such


def _limit(props: Mapping[str, Any], name: str) -> Any:
    """One of ``spec.limits`` (its keys hold dots: ``nvidia.com/gpu``)."""
    limits = read(props, "spec.limits")
    if limits is UNKNOWN:
        return UNKNOWN
    return limits.get(name) if isinstance(limits, Mapping) else None


def node_pool_capacity(props: Mapping[str, Any]) -> Any:
    """The most nodes its limits allow: ``spec.limits.cpu`` over the fewest vCPUs, ``nvidia.com/gpu`` over the
    fewest GPUs among the allowed instance types, the smaller of the two; ``UNKNOWN`` without a limit or without
    concrete instance types (families and categories cannot be sized from the catalog)."""
    types = _allowed(props, INSTANCE_TYPE_LABELS)
    if not types or any(not isinstance(t, str) for t in types):
        return UNKNOWN
    hardware = [hardware_of("aws", t) for t in types]
    if any(hw is None for hw in hardware):
        return UNKNOWN
    bounds = []
    for name in ("cpu", "nvidia.com/gpu"):
        given = _limit(props, name)
        if given is not None and given is not UNKNOWN and quantity(given) is None:
            return Uncountable(f"spec.limits.{name}", given, QUANTITY)  # Kubernetes refuses the pool
    cpu = quantity(_limit(props, "cpu"))
    if isinstance(cpu, float):
        bounds.append(math.ceil(cpu / min(hw[0] for hw in hardware if hw)))
    gpus = quantity(_limit(props, "nvidia.com/gpu"))
    gpu_counts = [hw[1] for hw in hardware if hw and hw[1] > 0]
    if isinstance(gpus, float) and gpu_counts and len(gpu_counts) == len(hardware):
        bounds.append(math.ceil(gpus / min(gpu_counts)))
    return float(min(bounds)) if bounds else UNKNOWN


def node_pool_market(props: Mapping[str, Any]) -> Market:
    allowed = _allowed(props, (CAPACITY_LABEL,))
    if allowed is None:
        # Karpenter's default requirement is on-demand (NodePool spec.template.spec.requirements).
        return Market(ON_DEMAND, f"no {CAPACITY_LABEL} requirement (Karpenter's default: on-demand)")
    if UNKNOWN in allowed:
        return Market(UNKNOWN)
    detail = f"{CAPACITY_LABEL} In {allowed}"
    if set(allowed) == {"spot"}:
        return Market(SPOT, detail)
    return Market(MIXED if "spot" in allowed else ON_DEMAND, detail)


UNBOUNDED = (
    "a NodePool keeps launching nodes while pods are pending: expireAfter (spec.template.spec.expireAfter, "
    "default 720h) and disruption only replace nodes, they never end the pool, and no cloud-side schedule can "
    f"remove a Kubernetes object ({NODEPOOL_DOC}); accepted: delete the NodePool (or set its limits to 0) at "
    "the deadline from outside the cluster and name it in acceptUnbounded after review"
)

for _token in NODE_POOLS:
    register(ComputeForm(
        token=_token, cloud="aws", label="Karpenter NodePool", type_reader=node_pool_types,
        accelerator=node_pool_accelerator,
        templates=(TemplateRef("spec.template.spec.nodeClassRef", None, "name", "spec", NODE_CLASSES),),
        capacity=node_pool_capacity,
        unsized="its nodes are bounded only by spec.limits (cpu, nvidia.com/gpu) over the smallest allowed "
        "instance type; without limits, or allowing families or categories instead of instance types, the "
        "catalog cannot count them",
        market=node_pool_market, spot_how=f"a {CAPACITY_LABEL} requirement In ['spot']",
        tags="", unbounded=UNBOUNDED,
        decoys=(("spec.template.spec.expireAfter", "expireAfter replaces each node when it ages out"),),
        identity=("metadata.name",),
        source=f"{NODEPOOL_DOC}; pulumi_kubernetes apiextensions.CustomResource",
    ))

for _token in NODE_CLASSES:
    register(ComputeForm(
        token=_token, cloud="aws", label="Karpenter EC2NodeClass", role=TEMPLATE, instance_types=(),
        metadata=Metadata(tokens="spec.metadataOptions.httpTokens", endpoint="spec.metadataOptions.httpEndpoint",
                          hop_limit="spec.metadataOptions.httpPutResponseHopLimit",
                          how="spec.metadataOptions.httpTokens: required",
                          unset=f"Karpenter's default is required ({NODECLASS_DOC})", default_required=True),
        user_data=(UserData("spec.userData"),),
        disks=(Disk("spec.blockDeviceMappings", "spec.blockDeviceMappings.*", "ebs.encrypted", "ebs.kmsKeyID",
                    name_key="deviceName", only_with="ebs"),),
        tags="", instance_tags=lambda props: dict(t) if isinstance(t := read(props, "spec.tags"), Mapping) else {},
        identity=("metadata.name",),
        source=NODECLASS_DOC,
    ))
