"""The resources inside an ``aws:cloudformation/stack:Stack`` template, read as the compute forms read any other.

A CloudFormation stack creates what its template lists (a self-managed EKS node group of ``pulumi_eks``'s
``NodeGroup`` is an ``AWS::AutoScaling::AutoScalingGroup`` in one). ``template_resources`` parses the
``templateBody`` (JSON or YAML, CloudFormation's short tags such as ``!Ref`` and ``!Sub`` read as their long
forms, https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/intrinsic-function-reference.html) and gives
each resource in the engine form of its ``pulumi_aws_native`` twin: the type ``AWS::AutoScaling::AutoScalingGroup``
as ``aws-native:autoscaling:AutoScalingGroup``, the properties camelCased (``VPCZoneIdentifier`` ->
``vpcZoneIdentifier``), which is how ``pulumi_aws_native`` names CloudFormation's own properties. A ``Ref`` to a
template parameter reads the stack's ``parameters`` input, then the parameter's ``Default``; a ``Ref`` to another
resource of the template names it, so a group finds its launch template; any other intrinsic function is a value
not known before the stack runs.

A template the pack cannot read (a ``templateUrl``, a body that is not JSON or YAML, or not a template) is an
``Unreadable`` with the reason; the rules report it, never pass it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from gpulease.core.compute.paths import UNKNOWN

STACK = "aws:cloudformation/stack:Stack"
"""``pulumi_aws``'s CloudFormation stack (inputs ``templateBody``, ``templateUrl``, ``parameters``)."""
MAX_BODY = 1_000_000
"""CloudFormation accepts template bodies up to 51,200 bytes and templates from S3 up to 1 MB
(https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/cloudformation-limits.html); a longer body is
not a template it runs."""
MAX_DEPTH = 64
MAX_NODES = 200_000
"""The most values read out of one template: YAML aliases can make a short body stand for a huge tree."""
REF_PREFIX = "cloudformation-ref:"


@dataclass(frozen=True)
class Embedded:
    """One resource of a template: its logical id, its ``pulumi_aws_native`` type token and camelCased props."""

    logical_id: str
    token: str
    cloudformation_type: str
    props: Mapping[str, Any]


@dataclass(frozen=True)
class Unreadable:
    reason: str


class _TooLargeError(Exception):
    pass


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader with CloudFormation's short tags: ``!Ref x`` is ``{"Ref": x}``, ``!GetAtt a.b`` is
    ``{"Fn::GetAtt": ["a", "b"]}``, ``!Sub ...`` is ``{"Fn::Sub": ...}`` and so on."""


def _short_tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> dict[str, Any]:
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
    if suffix == "Ref":
        return {"Ref": value}
    if suffix == "GetAtt" and isinstance(value, str):
        value = value.split(".", 1)
    return {f"Fn::{suffix}": value}


_Loader.add_multi_constructor("!", _short_tag)


def camel(name: str) -> str:
    """A CloudFormation property name as ``pulumi_aws_native`` spells it: ``VPCZoneIdentifier`` ->
    ``vpcZoneIdentifier``, ``DesiredCapacity`` -> ``desiredCapacity``, ``HttpTokens`` -> ``httpTokens``."""
    match = re.match(r"^([A-Z]+)(?=[A-Z][a-z]|$)", name)
    if match and len(match.group(1)) > 1:
        head = match.group(1)
        return head.lower() + name[len(head):]
    return name[:1].lower() + name[1:]


def token_of(cloudformation_type: str) -> str | None:
    """``AWS::EC2::Instance`` -> ``aws-native:ec2:Instance``; None for what is not ``AWS::<service>::<type>``."""
    parts = cloudformation_type.split("::")
    if len(parts) != 3 or parts[0] != "AWS" or not all(parts):
        return None
    return f"aws-native:{parts[1].lower()}:{parts[2]}"


def parse(body: str) -> Mapping[str, Any] | Unreadable:
    """The template as a mapping (JSON first, then YAML with the short tags), or why it cannot be read."""
    if len(body) > MAX_BODY:
        return Unreadable(f"its templateBody is {len(body):,} characters, more than CloudFormation's "
                          f"{MAX_BODY:,}")
    try:
        doc = json.loads(body)
    except ValueError:
        try:
            doc = yaml.load(body, Loader=_Loader)
        except (yaml.YAMLError, ValueError, TypeError, RecursionError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            return Unreadable(f"its templateBody is neither JSON nor YAML ({first})")
    except RecursionError:
        return Unreadable("its templateBody nests deeper than the reader follows")
    if not isinstance(doc, Mapping) or not isinstance(doc.get("Resources"), Mapping):
        return Unreadable("its templateBody has no Resources mapping")
    return doc


class _Resolver:
    def __init__(self, doc: Mapping[str, Any], parameters: Mapping[str, Any], ref_base: str):
        self.resources = doc.get("Resources") or {}
        self.declared = doc.get("Parameters") if isinstance(doc.get("Parameters"), Mapping) else {}
        self.parameters = parameters
        self.ref_base = ref_base
        self.nodes = 0

    def ref(self, name: Any) -> Any:
        if not isinstance(name, str):
            return UNKNOWN
        if name in self.parameters:
            return self.parameters[name]
        declared = self.declared.get(name)
        if isinstance(declared, Mapping) and "Default" in declared:
            return declared["Default"]
        if name in self.resources:
            return f"{REF_PREFIX}{self.ref_base}/{name}"
        return UNKNOWN  # a pseudo parameter (AWS::Region ...) or a parameter with no value: known when it runs

    def value(self, node: Any, depth: int = 0, *, keys: bool = False) -> Any:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise _TooLargeError
        if depth > MAX_DEPTH:
            return UNKNOWN
        if isinstance(node, Mapping):
            if len(node) == 1:
                (key, arg), = node.items()
                if key == "Ref":
                    return self.ref(arg)
                if isinstance(key, str) and (key.startswith("Fn::") or key == "Condition"):
                    return UNKNOWN
            return {(camel(k) if keys and isinstance(k, str) else k): self.value(v, depth + 1, keys=keys)
                    for k, v in node.items()}
        if isinstance(node, list):
            return [self.value(v, depth + 1, keys=keys) for v in node]
        if isinstance(node, bool) or node is None:
            return node
        if isinstance(node, int | float):
            return node
        return node if isinstance(node, str) else str(node)


def template_resources(props: Mapping[str, Any], ref_base: str) -> list[Embedded] | Unreadable | None:
    """The resources a stack's template creates, each in its ``pulumi_aws_native`` form; ``Unreadable`` when the
    template cannot be read; None while the body is not known yet (a preview before what it names exists)."""
    body = props.get("templateBody")
    if body is UNKNOWN:
        return None
    if body in (None, ""):
        url = props.get("templateUrl")
        if url is UNKNOWN:
            return None
        if url:
            return Unreadable(f"its template is at templateUrl {url!r}, which an offline review cannot read")
        return Unreadable("it has neither templateBody nor templateUrl")
    if not isinstance(body, str):
        return Unreadable("its templateBody is not text")
    doc = parse(body)
    if isinstance(doc, Unreadable):
        return doc
    parameters = props.get("parameters") if isinstance(props.get("parameters"), Mapping) else {}
    resolver = _Resolver(doc, parameters, ref_base)
    try:
        return _read(doc, resolver, ref_base)
    except _TooLargeError:
        return Unreadable(f"its template expands to more than {MAX_NODES:,} values (YAML aliases)")


def _read(doc: Mapping[str, Any], resolver: _Resolver, ref_base: str) -> list[Embedded] | Unreadable:
    out: list[Embedded] = []
    for logical_id, resource in doc["Resources"].items():
        if not isinstance(resource, Mapping) or not isinstance(resource.get("Type"), str):
            return Unreadable(f"its template's resource {str(logical_id)!r} has no Type")
        cfn_type = resource["Type"]
        raw = resource.get("Properties") if isinstance(resource.get("Properties"), Mapping) else {}
        token = token_of(cfn_type) or cfn_type
        converted = resolver.value(raw, keys=True)
        converted = _raw_tags(converted, raw, resolver)
        converted.setdefault("id", f"{REF_PREFIX}{ref_base}/{logical_id}")
        out.append(Embedded(str(logical_id), token, cfn_type, converted))
    return out


def _raw_tags(converted: dict[str, Any], raw: Mapping[str, Any], resolver: _Resolver) -> dict[str, Any]:
    """Tags keep their keys and values as written (only the ``Key``/``Value`` names are camelCased)."""
    tags = raw.get("Tags")
    if isinstance(tags, list):
        converted["tags"] = [
            {camel(k) if isinstance(k, str) else k: resolver.value(v) for k, v in t.items()}
            if isinstance(t, Mapping) else t for t in tags]
    elif isinstance(tags, Mapping):
        converted["tags"] = {k: resolver.value(v) for k, v in tags.items()}
    return converted
