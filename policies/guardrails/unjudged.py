"""unjudged-gpu-compute: nothing with a GPU passes silently, whatever resource type carries it.

``unjudged-gpu-compute`` (resource, mandatory): a resource of a type the compute-form registry does not know
(``gpulease.core.compute``) whose inputs ask for GPU or accelerator compute — an ``instanceType``,
``instanceTypes``, ``instanceClass`` or a nested ``computeResources.instanceTypes`` naming an accelerated type or
family of either cloud (``p4d.24xlarge``, ``ml.p4d.24xlarge``, ``ecs.gn7i-c8g1.2xlarge``), a Kubernetes node
requirement or selector on one (``node.kubernetes.io/instance-type``, ``karpenter.k8s.aws/instance-family``), or
a GPU resource request (``nvidia.com/gpu``) — is reported as GPU compute the pack cannot judge, naming the
resource, its type token and the input path: none of the other rules (deadline, market, budget) reads it.

An EventBridge Scheduler schedule whose universal target calls a launching API (``ec2:runInstances``,
``ec2:createFleet``, ``sagemaker:createTrainingJob`` ...) with a GPU type in its JSON ``input``, or with no type
the pack can see, or a resizing API (``autoscaling:updateAutoScalingGroup``) raising a size above 0, and a
``pulumi_command`` command running a launching CLI call or naming an accelerated type, are reported the same
way (``gpulease.core.compute.launch_calls``): what they create is no resource of the stack.

A CloudFormation stack (``aws:cloudformation/stack:Stack``) is read through its template
(``gpulease.core.compute.cloudformation``): the compute forms among its resources are judged by the other rules,
any other resource of it is scanned the same way, and a template the pack cannot read (a ``templateUrl``, a body
that is neither JSON nor YAML) is reported as a template the pack cannot judge.

``acceptUnjudged`` names resources accepted after review, each by its full URN or as ``<type token>::<name>`` (the
URN's tail); a bare name matches nothing. Types the registry knows, the multi-language components whose children
the pack judges (``gpulease.core.compute.components``) and types known to cost nothing
(``gpulease.core.resources.FREE_TYPES``) are not scanned; the scan walks a resource's inputs once.
"""

from __future__ import annotations

from pulumi_policy import (
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from gpulease.core import resources as rt
from gpulease.core.compute import UNKNOWN, ComputeUnit, form_of
from gpulease.core.compute.cloudformation import STACK, Unreadable, template_resources
from gpulease.core.compute.components import MODELLED_COMPONENTS
from gpulease.core.compute.launch_calls import COMMANDS, SCHEDULE, command_launch, schedule_launch
from gpulease.core.compute.scan import gpu_mentions

from . import common as c

ACCEPTED = ("accepted: a form the pack judges (docs/compute-forms.md), or the resource in acceptUnjudged after "
            "review, by its URN or as '<type token>::<name>'")


def scanned(type_: str) -> bool:
    """The types the scan reads: every type with no compute form that may cost something."""
    return (form_of(type_) is None and not type_.startswith("pulumi:") and not rt.is_free_type(type_)
            and type_ not in MODELLED_COMPONENTS)


def read(type_: str) -> bool:
    """The types this rule reads: the scanned ones, schedules (a launching call) and commands."""
    return scanned(type_) or type_ == SCHEDULE or type_ in COMMANDS


def accepted(config: object, urn: str, type_: str, name: str) -> bool:
    """Whether ``acceptUnjudged`` names this resource: its full URN, or its URN's tail ``<type token>::<name>``
    (parent types included, ``common.urn_tail``)."""
    return c.listed(config, "acceptUnjudged", urn)  # type: ignore[arg-type]


def _stack(args: ResourceValidationArgs, report: ReportViolation, what: str) -> None:
    found = template_resources(c.plain(args.props), args.urn)
    if found is None:
        return  # the body is not known yet during a preview: judged once it is
    if isinstance(found, Unreadable):
        report(f"GPU compute the pack cannot judge: {what} ({STACK}) may create instances, but {found.reason}; "
               f"accepted: a templateBody of JSON or YAML the pack reads, or the stack in acceptUnjudged after "
               "review, by its URN or as '<type token>::<name>'")
        return
    for inner in found:
        if form_of(inner.token) is not None or rt.is_free_type(inner.token):
            continue
        chosen = {where.rsplit(".", 1)[-1]: list(values) for where, values in inner.choices.items()}
        if hits := gpu_mentions(inner.props) or gpu_mentions(chosen):
            where = "; ".join(f"{found_} at {path}" for path, found_ in hits)
            report(f"GPU compute the pack cannot judge: {what} ({STACK}) creates {inner.logical_id} "
                   f"({inner.cloudformation_type}), which asks for {where}; no compute form reads this type, so its "
                   f"deadline, market and cost go unchecked; {ACCEPTED}")


def _launch(args: ResourceValidationArgs, report: ReportViolation, what: str) -> None:
    props = c.plain(args.props)
    why = schedule_launch(props) if args.resource_type == SCHEDULE else command_launch(props)
    if why is not None:
        report(f"compute the pack cannot judge: {what} ({args.resource_type}) {why}; the instances it creates are "
               f"no resource of the stack, so their deadline, market and cost go unchecked; {ACCEPTED}")


def _unjudged(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if not read(args.resource_type):
        return
    if accepted(args.get_config(), args.urn, args.resource_type, args.name):
        return
    what = c.display(args.resource_type, args.name)
    if not scanned(args.resource_type):
        _launch(args, report, what)
        return
    if args.resource_type == STACK:
        _stack(args, report, what)
        return
    hits = gpu_mentions(c.plain(args.props))
    if not hits:
        return
    where = "; ".join(f"{found} at {path}" for path, found in hits)
    report(f"GPU compute the pack cannot judge: {what} ({args.resource_type}) asks for {where}; no compute form "
           f"reads this type, so its deadline, market and cost go unchecked; {ACCEPTED}")


unjudged_gpu_compute = c.judges(ResourceValidationPolicy(
    name="unjudged-gpu-compute",
    description="A resource of a type the pack has no compute form for must not ask for GPUs unreviewed.",
    validate=_unjudged,
    enforcement_level=c.level("mandatory"),
    config_schema=c.schema(
        {
            "acceptUnjudged": {"type": "array", "items": {"type": "string"}, "default": [],
                               "description": "Resources accepted after review although the pack cannot judge "
                               "their GPU compute: each a full URN or '<type token>::<name>'."},
        }
    ),
), read)



def unseen(unit: ComputeUnit) -> str | None:
    """Why the pack cannot see what ``unit`` launches: it names a template that is not in the stack (an external
    launch template by id or name, an endpoint configuration by name) and no type of its own, or it is a form
    whose requirements allow any type (a Karpenter NodePool without an instance-type or family requirement).
    None when the types are visible, or only not known yet during a preview."""
    if unit.types_opaque and not unit.accelerated:
        return ("its instance type is a CloudFormation intrinsic function the pack cannot resolve (a pseudo "
                "parameter, Fn::GetAtt, Fn::ImportValue, a parameter with neither value nor AllowedValues), so the "
                "type it runs is not visible, not even when the stack runs")
    if unit.accelerated:
        return None
    if unit.open_selection is not None:
        return unit.open_selection
    if unit.types:
        return None
    named = [t for t in unit.templates_named if t is not UNKNOWN]
    if named:
        return (f"it launches from {', '.join(map(repr, named))}, which is not in this stack, so the instance types "
                "it runs are not visible")
    if unit.types_unknown:
        return None
    if unit.form.type_reader is not None:
        return ("no requirement restricts its instance types (node.kubernetes.io/instance-type or "
                "karpenter.k8s.aws/instance-family In [...]), so it may launch any type, GPUs included")
    return None


def _unseen_types(args: StackValidationArgs, report: ReportViolation) -> None:
    config = args.get_config()
    for unit, resource in c.units(args.resources):
        why = unseen(unit)
        if why is None or accepted(config, resource.urn, resource.resource_type, resource.name):
            continue
        report(f"compute the pack cannot judge: {c.display(unit.resource.type, unit.resource.name)} "
               f"({unit.form.label}): {why}; its deadline, market and cost cannot be checked; accepted: an "
               "instance type (or a template in the stack naming one) the pack reads, or the resource in "
               "acceptUnjudged after review, by its URN or as '<type token>::<name>'", resource.urn)


unseen_compute_types = c.judges(StackValidationPolicy(
    name="unseen-compute-types",
    description="A compute form whose instance types the pack cannot see may launch GPUs: reported, never passed.",
    validate=_unseen_types,
    enforcement_level=c.level("mandatory"),
    config_schema=c.schema(
        {
            "acceptUnjudged": {"type": "array", "items": {"type": "string"}, "default": [],
                               "description": "Resources accepted after review although the pack cannot see "
                               "their instance types: each a full URN or '<type token>::<name>'."},
        }
    ),
), c.UNIT_TYPES)

POLICIES = [unjudged_gpu_compute, unseen_compute_types]
