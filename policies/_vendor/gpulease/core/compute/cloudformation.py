"""The resources inside an ``aws:cloudformation/stack:Stack`` template, read as the compute forms read any other.

A CloudFormation stack creates what its template lists (a self-managed EKS node group of ``pulumi_eks``'s
``NodeGroup`` is an ``AWS::AutoScaling::AutoScalingGroup`` in one). ``template_resources`` parses the
``templateBody`` (JSON or YAML, CloudFormation's short tags such as ``!Ref`` and ``!Sub`` read as their long
forms, https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/intrinsic-function-reference.html) and gives
each resource in the engine form of its ``pulumi_aws_native`` twin: the type ``AWS::AutoScaling::AutoScalingGroup``
as ``aws-native:autoscaling:AutoScalingGroup``, the properties camelCased (``VPCZoneIdentifier`` ->
``vpcZoneIdentifier``), which is how ``pulumi_aws_native`` names CloudFormation's own properties. A ``Ref`` to a
template parameter reads the stack's ``parameters`` input, then the parameter's ``Default``; a ``Ref`` to another
resource of the template names it, so a group finds its launch template. An intrinsic function whose possible
values the template lists is read as those values (``Fn::If`` both branches, ``Fn::FindInMap`` the mapping's
values, ``Fn::Select`` from a literal list, a ``Ref`` to a parameter with no value but ``AllowedValues``, a
``Fn::Sub`` or ``Fn::Join`` of literal text): one value is the value, several are the resource's ``choices`` at
that input path (the rules judge every one of them). Any other intrinsic (``Fn::GetAtt``, ``Fn::ImportValue``, a
pseudo parameter, a parameter with neither value nor ``AllowedValues``) is a value the pack never sees, not even
when the stack runs: its path is among the resource's ``opaque`` paths and the value reads ``UNKNOWN``.

A template the pack cannot read (a ``templateUrl``, a body that is not JSON or YAML, or not a template, a key
given twice, a ``Transform`` or ``Fn::Transform`` macro that rewrites the template when it runs, a nested stack
whose template lives elsewhere, ``Properties`` that are an intrinsic) is an ``Unreadable`` with the reason; the
rules report it, never pass it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from gpulease.core.compute.paths import UNKNOWN

STACK = "aws:cloudformation/stack:Stack"
"""``pulumi_aws``'s CloudFormation stack (inputs ``templateBody``, ``templateUrl``, ``parameters``)."""
MAX_BODY = 51_200
"""CloudFormation accepts a template body in a request up to 51,200 bytes (templates from S3 up to 1 MB,
https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/cloudformation-limits.html); a longer body, in
UTF-8 bytes, is not a template it runs."""
NESTED = frozenset({"AWS::CloudFormation::Stack", "AWS::Serverless::Application"})
"""Resources that create a stack from a template elsewhere (``TemplateURL``, ``Location``): not readable here."""
MAX_CHOICES = 64
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
    choices: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    """Per dotted input path (camelCased, list indices as numbers), the values an intrinsic there may take."""
    opaque: frozenset[str] = frozenset()
    """The dotted input paths whose intrinsic the pack cannot resolve, offline or when the stack runs."""


@dataclass(frozen=True)
class Unreadable:
    reason: str


class _TooLargeError(Exception):
    pass


class _DuplicateKeyError(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[Any, Any]]) -> dict[Any, Any]:
    out: dict[Any, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKeyError(f"the key {str(key)!r} is given twice")
        out[key] = value
    return out


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


def _unique_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    keys = [loader.construct_object(k, deep=True) for k, _ in node.value]
    seen: set[Any] = set()
    for key in keys:
        if isinstance(key, str | int | float | bool) and key in seen:
            raise _DuplicateKeyError(f"the key {str(key)!r} is given twice")
        seen.add(key)
    return loader.construct_mapping(node, deep=True)


_Loader.add_multi_constructor("!", _short_tag)
_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _unique_mapping)


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
    size = len(body.encode("utf-8", "surrogatepass"))
    if size > MAX_BODY:
        return Unreadable(f"its templateBody is {size:,} bytes, more than the {MAX_BODY:,} CloudFormation accepts")
    try:
        doc = json.loads(body, object_pairs_hook=_no_duplicates)
    except _DuplicateKeyError as exc:
        return Unreadable(f"its templateBody is ambiguous: {exc}")
    except ValueError:
        try:
            doc = yaml.load(body, Loader=_Loader)
        except _DuplicateKeyError as exc:
            return Unreadable(f"its templateBody is ambiguous: {exc}")
        except (yaml.YAMLError, ValueError, TypeError, RecursionError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            return Unreadable(f"its templateBody is neither JSON nor YAML ({first})")
    except RecursionError:
        return Unreadable("its templateBody nests deeper than the reader follows")
    if not isinstance(doc, Mapping) or not isinstance(doc.get("Resources"), Mapping):
        return Unreadable("its templateBody has no Resources mapping")
    if doc.get("Transform") is not None:
        return Unreadable(f"its template uses Transform {doc['Transform']!r}, a macro that rewrites the template "
                          "when the stack runs")
    return doc


class _TransformError(Exception):
    """An ``Fn::Transform`` inside a resource: a macro rewrites it when the stack runs."""


class _OpaqueError(Exception):
    """An intrinsic function whose value the pack cannot enumerate."""


class _Resolver:
    def __init__(self, doc: Mapping[str, Any], parameters: Mapping[str, Any], ref_base: str):
        self.resources = doc.get("Resources") or {}
        self.declared = doc.get("Parameters") if isinstance(doc.get("Parameters"), Mapping) else {}
        self.mappings = doc.get("Mappings") if isinstance(doc.get("Mappings"), Mapping) else {}
        self.parameters = parameters
        self.ref_base = ref_base
        self.nodes = 0
        self.choices: dict[str, tuple[Any, ...]] = {}
        self.opaque: set[str] = set()

    def ref(self, name: Any) -> list[Any]:
        """The values a ``Ref`` may take (raises ``_OpaqueError`` when the pack cannot know them)."""
        if not isinstance(name, str):
            raise _OpaqueError
        if name == "AWS::NoValue":
            return []
        if name in self.parameters:
            return [self.parameters[name]]
        declared = self.declared.get(name)
        if isinstance(declared, Mapping) and "Default" in declared:
            return [declared["Default"]]
        if isinstance(declared, Mapping) and isinstance(declared.get("AllowedValues"), list) and declared["AllowedValues"]:
            return list(declared["AllowedValues"])
        if name in self.resources:
            return [f"{REF_PREFIX}{self.ref_base}/{name}"]
        raise _OpaqueError  # a pseudo parameter (AWS::Region ...) or a parameter with no value: never seen here

    def candidates(self, node: Any, depth: int) -> list[Any]:
        """Every value ``node`` may take once CloudFormation evaluates it (``_OpaqueError`` when not enumerable)."""
        if depth > MAX_DEPTH:
            raise _OpaqueError
        intrinsic = _intrinsic(node)
        if intrinsic is None:
            return [node]
        key, arg = intrinsic
        if key == "Ref":
            found = self.ref(arg)
        elif key == "Fn::If" and isinstance(arg, list) and len(arg) == 3:
            found = self.candidates(arg[1], depth + 1) + self.candidates(arg[2], depth + 1)
        elif key == "Fn::FindInMap" and isinstance(arg, list) and len(arg) >= 3:
            found = self._in_map(arg, depth)
        elif key == "Fn::Select" and isinstance(arg, list) and len(arg) == 2 and isinstance(arg[1], list):
            try:
                index = self.candidates(arg[0], depth + 1)
            except _OpaqueError:
                index = []  # any element may be the one
            picked = [arg[1][int(i)] for i in index if isinstance(i, int | str) and str(i).isdigit()
                      and int(i) < len(arg[1])]
            found = [v for item in (picked if index and len(picked) == len(index) else arg[1])
                     for v in self.candidates(item, depth + 1)]
        elif key == "Fn::Sub" and (text := arg[0] if isinstance(arg, list) and arg else arg) is not None:
            if not isinstance(text, str) or "${" in text.replace("${!", ""):
                raise _OpaqueError
            found = [text.replace("${!", "${")]
        elif key == "Fn::Join" and isinstance(arg, list) and len(arg) == 2 and isinstance(arg[1], list):
            parts = [self.candidates(p, depth + 1) for p in arg[1]]
            if not isinstance(arg[0], str) or any(len(p) != 1 or not isinstance(p[0], str) for p in parts):
                raise _OpaqueError
            found = [arg[0].join(p[0] for p in parts)]
        else:
            raise _OpaqueError
        if len(found) > MAX_CHOICES:
            raise _OpaqueError
        return found

    def _in_map(self, arg: list[Any], depth: int) -> list[Any]:
        found: list[Any] = []
        for name in self.candidates(arg[0], depth + 1):
            table = self.mappings.get(name) if isinstance(name, str) else None
            if not isinstance(table, Mapping):
                raise _OpaqueError
            for top in self._keys(arg[1], table, depth):
                row = table[top]
                if not isinstance(row, Mapping):
                    raise _OpaqueError
                found += [row[k] for k in self._keys(arg[2], row, depth)]
        return found

    def _keys(self, node: Any, table: Mapping[str, Any], depth: int) -> list[Any]:
        """The keys of ``table`` a ``Fn::FindInMap`` key may name: all of them when it is not enumerable."""
        try:
            wanted = self.candidates(node, depth + 1)
        except _OpaqueError:
            return list(table)
        hits = [k for k in wanted if isinstance(k, str) and k in table]
        return hits if hits and len(hits) == len(wanted) else list(table)

    def value(self, node: Any, depth: int = 0, *, keys: bool = False, path: str = "") -> Any:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise _TooLargeError
        if depth > MAX_DEPTH:
            self.opaque.add(path)
            return UNKNOWN
        if isinstance(node, Mapping) and "Fn::Transform" in node:
            raise _TransformError
        if _intrinsic(node) is not None:
            try:
                found = self.candidates(node, depth)
            except _OpaqueError:
                self.opaque.add(path)
                return UNKNOWN
            if not found:
                return None
            if len(found) == 1:
                return found[0] if _intrinsic(found[0]) is None else self.value(found[0], depth + 1, path=path)
            self.choices[path] = tuple(found)
            return UNKNOWN
        if isinstance(node, Mapping):
            out = {}
            for k, v in node.items():
                name = camel(k) if keys and isinstance(k, str) else k
                out[name] = self.value(v, depth + 1, keys=keys, path=f"{path}.{name}" if path else str(name))
            return out
        if isinstance(node, list):
            return [self.value(v, depth + 1, keys=keys, path=f"{path}.{i}" if path else str(i))
                    for i, v in enumerate(node)]
        if isinstance(node, bool) or node is None:
            return node
        if isinstance(node, int | float):
            return node
        return node if isinstance(node, str) else str(node)


def _intrinsic(node: Any) -> tuple[str, Any] | None:
    """``(function, argument)`` when ``node`` is an intrinsic function call (or a ``Condition``)."""
    if isinstance(node, Mapping) and len(node) == 1:
        (key, arg), = node.items()
        if key == "Ref" or (isinstance(key, str) and (key.startswith("Fn::") or key == "Condition")):
            return key, arg
    return None


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
        if cfn_type in NESTED:
            return Unreadable(f"its template's resource {str(logical_id)!r} is a nested stack ({cfn_type}) whose "
                              "template lives elsewhere, which the pack cannot read")
        given = resource.get("Properties")
        if given is not None and (not isinstance(given, Mapping) or _intrinsic(given) is not None):
            return Unreadable(f"its template's resource {str(logical_id)!r} has Properties that are not a plain "
                              "mapping (an intrinsic function such as Fn::Transform), which the pack cannot read")
        raw = given or {}
        token = token_of(cfn_type) or cfn_type
        resolver.choices, resolver.opaque = {}, set()
        try:
            converted = resolver.value(raw, keys=True)
            converted = _raw_tags(converted, raw, resolver)
        except _TransformError:
            return Unreadable(f"its template's resource {str(logical_id)!r} uses Fn::Transform, a macro that "
                              "rewrites the properties when the stack runs")
        converted.setdefault("id", f"{REF_PREFIX}{ref_base}/{logical_id}")
        out.append(Embedded(str(logical_id), token, cfn_type, converted, dict(resolver.choices),
                            frozenset(resolver.opaque)))
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
