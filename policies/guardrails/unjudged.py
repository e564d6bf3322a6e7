"""unjudged-gpu-compute: nothing with a GPU passes silently, whatever resource type carries it.

``unjudged-gpu-compute`` (resource, mandatory): a resource of a type the compute-form registry does not know
(``gpulease.core.compute``) whose inputs ask for GPU or accelerator compute — an ``instanceType``,
``instanceTypes``, ``instanceClass`` or a nested ``computeResources.instanceTypes`` naming an accelerated type or
family of either cloud (``p4d.24xlarge``, ``ml.p4d.24xlarge``, ``ecs.gn7i-c8g1.2xlarge``), a Kubernetes node
requirement or selector on one (``node.kubernetes.io/instance-type``, ``karpenter.k8s.aws/instance-family``), or
a GPU resource request (``nvidia.com/gpu``) — is reported as GPU compute the pack cannot judge, naming the
resource, its type token and the input path: none of the other rules (deadline, market, budget) reads it.
``acceptUnjudged`` names resources accepted after review. Types the registry knows and types known to cost
nothing (``gpulease.core.resources.FREE_TYPES``) are not scanned; the scan walks a resource's inputs once.
"""

from __future__ import annotations

from pulumi_policy import ReportViolation, ResourceValidationArgs, ResourceValidationPolicy

from gpulease.core import resources as rt
from gpulease.core.compute import form_of
from gpulease.core.compute.scan import gpu_mentions

from . import common as c


def scanned(type_: str) -> bool:
    """The types the scan reads: every type with no compute form that may cost something."""
    return form_of(type_) is None and not type_.startswith("pulumi:") and not rt.is_free_type(type_)


def _unjudged(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if not scanned(args.resource_type):
        return
    if args.name in set(c.config_value(args.get_config(), "acceptUnjudged", [])):
        return
    hits = gpu_mentions(c.plain(args.props))
    if not hits:
        return
    where = "; ".join(f"{what} at {path}" for path, what in hits)
    report(f"GPU compute the pack cannot judge: {c.display(args.resource_type, args.name)} ({args.resource_type}) "
           f"asks for {where}; no compute form reads this type, so its deadline, market and cost go unchecked; "
           "accepted: a form the pack judges (docs/compute-forms.md), or the resource's name in acceptUnjudged "
           "after review")


unjudged_gpu_compute = c.judges(ResourceValidationPolicy(
    name="unjudged-gpu-compute",
    description="A resource of a type the pack has no compute form for must not ask for GPUs unreviewed.",
    validate=_unjudged,
    enforcement_level=c.level("mandatory"),
    config_schema=c.schema(
        {
            "acceptUnjudged": {"type": "array", "items": {"type": "string"}, "default": [],
                               "description": "Resource names accepted after review although the pack cannot "
                               "judge their GPU compute."},
        }
    ),
), scanned)

POLICIES = [unjudged_gpu_compute]
