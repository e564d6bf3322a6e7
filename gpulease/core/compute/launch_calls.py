"""Compute launched by a call rather than a resource: a schedule calling a launching API, a shell command.

An EventBridge Scheduler schedule with a universal target (``arn:aws:scheduler:::aws-sdk:<service>:<action>``,
https://docs.aws.amazon.com/scheduler/latest/UserGuide/managing-targets-universal.html) calls any AWS API with the
JSON text of its ``target.input`` as the request. When the action launches or starts instances (``LAUNCHING``) or
raises a group's size (``SIZING``), the instances it creates are no resource of the stack: no compute form reads
them, so their deadline, market and cost go unchecked. ``schedule_launch`` says what such a schedule asks for;
``command_launch`` does the same for a ``pulumi_command`` command whose text runs a launching CLI call or names
an accelerated type. Both are reported as compute the pack cannot judge, never passed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from gpulease.core.compute.accelerators import is_accelerated
from gpulease.core.compute.paths import UNKNOWN, number
from gpulease.core.compute.scan import embedded_json, gpu_mentions, type_key

SCHEDULE = "aws:scheduler/schedule:Schedule"
COMMANDS = frozenset({"command:local:Command", "command:remote:Command"})
"""``pulumi_command``'s commands: their ``create``/``update``/``delete`` text runs on the machine running Pulumi."""
UNIVERSAL = "arn:aws:scheduler:::aws-sdk:"
LAUNCHING = frozenset({
    "ec2:runinstances", "ec2:createfleet", "ec2:requestspotinstances", "ec2:requestspotfleet",
    "ec2:startinstances", "ec2:runscheduledinstances", "autoscaling:createautoscalinggroup",
    "sagemaker:createtrainingjob", "sagemaker:createprocessingjob", "sagemaker:createtransformjob",
    "sagemaker:createhyperparametertuningjob", "sagemaker:createendpoint", "sagemaker:updateendpoint",
    "sagemaker:createnotebookinstance", "sagemaker:startnotebookinstance", "eks:createnodegroup",
    "batch:createcomputeenvironment", "emr:runjobflow", "ecs:runtask",
})
"""Actions (service:action, lower case) that create or start instances."""
SIZING = frozenset({
    "autoscaling:updateautoscalinggroup", "autoscaling:setdesiredcapacity",
    "autoscaling:putscheduledupdategroupaction", "eks:updatenodegroupconfig", "batch:updatecomputeenvironment",
    "sagemaker:updateendpointweightsandcapacities", "emr:modifyinstancegroups", "ec2:modifyfleet",
    "ec2:modifyspotfleetrequest",
})
"""Actions that resize existing compute: a launch when they raise a size above 0 (setting it to 0 is a deadline)."""
SIZE_KEY = re.compile(r"(?i)(min|max|desired)(size|capacity|vcpus)|desiredsize|targetcapacity|instancecount")
CLI_LAUNCH = re.compile(
    r"(?i)\b(run-instances|create-fleet|request-spot-instances|request-spot-fleet|start-instances|"
    r"create-auto-scaling-group|update-auto-scaling-group|set-desired-capacity|create-nodegroup|"
    r"create-training-job|create-endpoint|create-notebook-instance|create-compute-environment|"
    r"RunInstances|CreateFleet|RequestSpotInstances|StartInstances|CreateTrainingJob|create-instance|"
    r"CreateInstance)\b")
TYPE_WORD = re.compile(r"(?i)\b(?:ml\.|ecs\.)?[a-z][a-z0-9-]*\.[0-9a-z]*x?large\b|\becs\.[a-z0-9-]+\.[0-9a-z]+\b")


def action_of(arn: Any) -> str | None:
    """``ec2:runinstances`` for ``arn:aws:scheduler:::aws-sdk:ec2:runInstances``; None for another target."""
    if not isinstance(arn, str) or not arn.startswith(UNIVERSAL):
        return None
    return arn[len(UNIVERSAL):].lower() or None


def _raised(node: Any, depth: int = 0) -> str | None:
    if depth > 16:
        return "inputs nested too deep to read"
    if isinstance(node, Mapping):
        for key, value in node.items():
            size = number(value) if isinstance(key, str) and SIZE_KEY.fullmatch(key) else None
            if size is UNKNOWN or (isinstance(size, float) and size > 0):
                return f"{key}={value}"
            if isinstance(value, Mapping | list) and (found := _raised(value, depth + 1)):
                return found
    if isinstance(node, list):
        return next((found for v in node if (found := _raised(v, depth + 1))), None)
    return None


def _types(node: Any, depth: int = 0) -> list[str]:
    if depth > 16:
        return []
    if isinstance(node, Mapping):
        out = []
        for key, value in node.items():
            if isinstance(key, str) and type_key(key) and isinstance(value, str | list):
                out += [value] if isinstance(value, str) else [v for v in value if isinstance(v, str)]
            elif isinstance(value, Mapping | list):
                out += _types(value, depth + 1)
        return out
    if isinstance(node, list):
        return [t for v in node for t in _types(v, depth + 1)]
    return []


def schedule_launch(props: Mapping[str, Any]) -> str | None:
    """What a schedule's launching call asks for, as a finding's middle part; None when it launches nothing."""
    target = props.get("target") if isinstance(props.get("target"), Mapping) else {}
    action = action_of(target.get("arn"))
    if action is None or (action not in LAUNCHING and action not in SIZING):
        return None
    call = str(target["arn"])[len(UNIVERSAL):]
    shown = call
    text = target.get("input")
    if text is UNKNOWN or text is None:  # None: the engine form drops a value unknown during preview
        if action in SIZING:  # a deadline's resize names an id known only at the update, where it is judged again
            return None
        return f"calls {shown} with an input not known before the update runs"
    request = embedded_json(text) if isinstance(text, str) else text if isinstance(text, Mapping) else None
    if request is None:
        return f"calls {shown} with an input that is not a JSON object the pack reads"
    if action in SIZING:
        raised = _raised(request)
        return f"calls {shown} setting {raised}, a size the cost and deadline rules do not read" if raised else None
    if hits := gpu_mentions(request):
        return f"calls {shown} asking for " + "; ".join(f"{what} at target.input.{path}" for path, what in hits)
    if _types(request):
        return None  # types it names, none of them accelerated
    return f"calls {shown}, whose input names no instance type the pack can see"


def _texts(node: Any, depth: int = 0) -> list[str]:
    if depth > 16:
        return []
    if isinstance(node, str):
        return [node]
    if isinstance(node, Mapping):
        return [t for v in node.values() for t in _texts(v, depth + 1)]
    if isinstance(node, list):
        return [t for v in node for t in _texts(v, depth + 1)]
    return []


def command_launch(props: Mapping[str, Any]) -> str | None:
    """What a command's text launches (a CLI launching call, an accelerated type it names); None for neither."""
    for text in _texts({k: v for k, v in props.items() if k not in ("connection",)}):
        if found := CLI_LAUNCH.search(text):
            return f"runs {found.group(0)!r}, which creates compute no resource of the stack describes"
        if typed := [w for w in TYPE_WORD.findall(text) if is_accelerated(w)]:
            return f"names {typed[0]!r} in its commands, compute no resource of the stack describes"
    return None
