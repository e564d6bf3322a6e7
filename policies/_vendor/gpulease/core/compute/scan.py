"""Find GPU or accelerator compute in the inputs of a resource of a type the registry does not know.

A resource of an unknown type that names a GPU type (an ``instanceType``, ``instanceTypes``, ``instanceClass``,
a nested ``computeResources.instanceTypes``), a Kubernetes node requirement or selector on an accelerated instance
type or family (``node.kubernetes.io/instance-type``, ``karpenter.k8s.aws/instance-family`` ...), or a GPU
resource request (``nvidia.com/gpu`` ...) is compute the pack cannot judge. ``gpu_mentions`` walks the inputs
once, depth-first, and stops at the first few hits; a resource without any of these keys costs one pass over
its keys. A text input holding JSON is read as what it holds; WorkSpaces' ``GRAPHICS*`` compute types count as GPU
compute; a name/value setting (Elastic Beanstalk's option settings) whose name is a type input is read as that input. Inputs nested deeper than ``MAX_DEPTH`` are a hit of their own ("too deep to scan"): what the scan
cannot read is never passed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gpulease.core.compute.accelerators import is_accelerated_family
from gpulease.core.compute.kubernetes_forms import (
    ACCELERATED_CATEGORIES,
    CATEGORY_LABEL,
    FAMILY_LABEL,
    GPU_LABELS,
    GPU_RESOURCES,
    INSTANCE_TYPE_LABELS,
    quantity,
)
from gpulease.core.compute.paths import MAX_JSON, UNKNOWN, embedded_json  # noqa: F401  (read by the forms, rules)

TYPE_KEYS = frozenset({
    "instanceType", "instanceTypes", "instanceClass", "instanceFamily", "instanceFamilies", "acceleratorType",
    "acceleratorTypes", "gpuType", "instance_type", "instance_types",
})
"""Input names whose value is an instance type (or a list of them); besides these, every name ending in one of
``TYPE_SUFFIXES`` (``ec2InstanceType``, ``masterInstanceType``, ``dedicatedHostType``)."""
TYPE_SUFFIXES = ("InstanceType", "InstanceTypes", "InstanceClass", "HostType", "_instance_type", "_instance_types")


def _type_key(key: str) -> bool:
    return key in TYPE_KEYS or key.endswith(TYPE_SUFFIXES)
NODE_LABELS = frozenset((*INSTANCE_TYPE_LABELS, FAMILY_LABEL))
COUNT_KEYS = frozenset({*GPU_RESOURCES, "gpu", "gpuCount", "gpuAmount", "acceleratorCount"})
"""Names whose positive number asks for accelerators (a container's GPU request or limit, an ECI-style count)."""
SKIPPED = frozenset({"tags", "tagsAll", "labels", "annotations"})
"""Free text: what tags say is no request for hardware."""
GRAPHICS_KEYS = frozenset({"computeTypeName", "ComputeTypeName"})
"""WorkSpaces' hardware bundle: ``GRAPHICS``, ``GRAPHICSPRO``, ``GRAPHICS_G4DN``, ``GRAPHICSPRO_G4DN`` run on GPUs
(https://docs.aws.amazon.com/workspaces/latest/api/API_ComputeType.html)."""
MAX_DEPTH = 64
"""Deeper inputs are not walked: the scan reports them as too deep to scan (never passed)."""
MAX_HITS = 3


def type_key(key: str) -> bool:
    """Whether an input of this name holds an instance type (or a list of them)."""
    return _type_key(key)


def _accelerated_value(value: Any) -> list[str]:
    values = value if isinstance(value, list | tuple) else [value]
    return [v for v in values if isinstance(v, str) and is_accelerated_family(v)]


def _requirement(node: Mapping[str, Any]) -> str | None:
    """A Kubernetes requirement / match expression ``{key, operator, values}`` that selects accelerators."""
    key = node.get("key")
    if not isinstance(key, str):
        return None
    values = node.get("values") if isinstance(node.get("values"), list) else []
    if key in NODE_LABELS:
        hits = _accelerated_value(values)
        return f"{key} {node.get('operator', 'In')} {hits}" if hits else None
    if key == CATEGORY_LABEL and any(v in ACCELERATED_CATEGORIES for v in values if isinstance(v, str)):
        return f"{key} {node.get('operator', 'In')} {values}"
    if key in GPU_LABELS and node.get("operator") in ("In", "Gt", "Exists"):
        return f"{key} {node.get('operator')} {values}"
    return None


SETTING_NAMES = ("name", "optionName", "OptionName")
SETTING_VALUES = ("value", "Value")
"""A setting given as a name/value pair: Elastic Beanstalk's option settings name the instance type as
``{namespace: "aws:autoscaling:launchconfiguration", name: "InstanceType", value: "p3.2xlarge"}`` or
``{namespace: "aws:ec2:instances", name: "InstanceTypes", value: "p3.2xlarge,g5.xlarge"}`` (a comma-separated list)
(https://docs.aws.amazon.com/elasticbeanstalk/latest/dg/command-options-general.html)."""


def _named_setting(node: Mapping[str, Any]) -> str | None:
    """A name/value setting whose name is an instance type input and whose value names an accelerated type."""
    name = next((node[k] for k in SETTING_NAMES if isinstance(node.get(k), str)), None)
    value = next((node[k] for k in SETTING_VALUES if k in node), None)
    if name is None or not _type_key(name) or not isinstance(value, str | list | tuple):
        return None
    hits = _accelerated_value([v.strip() for v in value.split(",")] if isinstance(value, str) else value)
    return f"{name}={','.join(hits)}" if hits else None


MAY_BE_GPU = "a value unknown offline, which may be a GPU type or count"
"""What ``gpu_mentions(..., unknowns=True)`` reports where a GPU-deciding input is not known during preview."""


PARENT_KEYS = frozenset({
    "containers", "initContainers", "ephemeralContainers", "resources", "limits", "requests", "spec", "template",
    "jobTemplate", "nodeSelector", "affinity", "nodeAffinity", "tolerations", "workerGroupSpecs", "headGroupSpec"})
"""With ``parents``: keys whose value can hold a GPU-deciding key (a container list, resources, limits, a pod
spec or template, a node selector); such a value unknown as a whole (or an unknown element of it) may be GPU."""


def _gpu_label(key: str) -> bool:
    """A label key naming a GPU product or accelerator (``nvidia.com/gpu.product``, ``cloud.google.com/gke-
    accelerator``, ``karpenter.k8s.aws/instance-gpu-name``): an unknown value under it may select GPU nodes."""
    lowered = key.lower()
    return "/" in key and ("gpu" in lowered or "accelerator" in lowered or "neuron" in lowered)


def _unknown_parent(value: Any) -> bool:
    return value is UNKNOWN or (isinstance(value, list | tuple) and any(v is UNKNOWN for v in value))


def _holds_unknown(value: Any) -> bool:
    if value is UNKNOWN:
        return True
    if isinstance(value, Mapping):
        return any(_holds_unknown(v) for v in value.values())
    return isinstance(value, list | tuple) and any(_holds_unknown(v) for v in value)


def _unknown_requirement(node: Mapping[str, Any]) -> bool:
    """A requirement ``{key, operator, values}`` on an instance type, family, category or GPU label whose key or
    values are not known offline."""
    key = node.get("key")
    if key is UNKNOWN:
        return True
    selects = key in NODE_LABELS or key == CATEGORY_LABEL or key in GPU_LABELS
    return selects and _holds_unknown(node.get("values"))


def gpu_mentions(props: Any, *, unknowns: bool = False, parents: bool = False) -> list[tuple[str, str]]:
    """``(path, what)`` for the first few places the inputs ask for GPU or accelerator compute; [] for none.
    With ``unknowns``, a GPU-deciding input (a type key, a node label on instance types or naming a GPU product
    or accelerator, a GPU count, a requirement on those) whose value is not known offline (``UNKNOWN``) is a hit
    too: it may be a GPU. With ``parents`` as well (a Kubernetes workload or custom resource), an unknown value
    under one of ``PARENT_KEYS`` is a hit: it may hold a GPU-deciding key."""
    hits: list[tuple[str, str]] = []
    stack: list[tuple[str, Any, int]] = [("", props, 0)]
    while stack and len(hits) < MAX_HITS:
        path, node, depth = stack.pop()
        if depth > MAX_DEPTH:
            hits.append((path, f"inputs nested more than {MAX_DEPTH} levels deep, too deep to scan"))
            continue
        if isinstance(node, Mapping):
            if "key" in node and (found := _requirement(node)):
                hits.append((path, found))
                continue
            if unknowns and "key" in node and _unknown_requirement(node):
                hits.append((path, MAY_BE_GPU))
                continue
            if (found := _named_setting(node)) is not None:
                hits.append((path, found))
                continue
            for key, child in node.items():
                if not isinstance(key, str) or key in SKIPPED:
                    continue
                where = f"{path}.{key}" if path else key
                if unknowns and (_type_key(key) or key in NODE_LABELS or key in COUNT_KEYS or _gpu_label(key)) \
                        and _holds_unknown(child):
                    hits.append((where, MAY_BE_GPU))
                    continue
                if unknowns and parents and key in PARENT_KEYS and _unknown_parent(child):
                    hits.append((where, MAY_BE_GPU))
                    continue
                if _type_key(key) or key in NODE_LABELS:
                    if found_types := _accelerated_value(child):
                        hits.append((where, ", ".join(found_types)))
                        continue
                elif key in GRAPHICS_KEYS and isinstance(child, str) and child.upper().startswith("GRAPHICS"):
                    hits.append((where, f"{key}={child}"))
                    continue
                elif key in COUNT_KEYS:
                    count = quantity(child)
                    if isinstance(count, float) and count > 0:
                        hits.append((where, f"{key}={count:g}"))
                        continue
                if isinstance(child, Mapping | list | tuple):
                    stack.append((where, child, depth + 1))
                elif (held := embedded_json(child)) is not None:
                    stack.append((f"{where}(JSON)", held, depth + 1))
        elif isinstance(node, Sequence) and not isinstance(node, str | bytes):
            for i, child in enumerate(node):
                if isinstance(child, Mapping | list | tuple):
                    stack.append((f"{path}[{i}]", child, depth + 1))
    return hits
