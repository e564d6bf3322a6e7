"""What an instance exposes from the inside: the metadata service and its user-data.

Both rules read every compute form and template through the registry of ``gpulease.core.compute``: EC2 instances,
spot requests, launch templates and configurations, spot fleets' launch specifications, EKS node groups, Alibaba
ECS instances and instance sets, launch templates, ESS scaling configurations, ACK node pools.

``imdsv2-required`` (resource, mandatory): metadata tokens are required (AWS ``metadataOptions.httpTokens =
required``, Alibaba ``httpTokens = required``), or the endpoint disabled, with a hop limit of at most
``maxHopLimit``. An unset ``httpTokens`` is reported as unset, with what the service then does; a resource that
takes its settings from a template it names leaves the judgement to the template; a form that cannot set them
at all (an EKS node group or an ECS instance set without a launch template, an ESS scaling configuration, a spot
fleet launch specification) is reported with what can.

``no-secrets-in-user-data`` (resource, mandatory): user-data (plain, base64 or gzip) holds no cloud access keys,
private key blocks or common token formats. Instances get credentials from their role; user-data is readable
by anyone who can describe the instance. Extra regular expressions come from ``extraPatterns``.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import re
from functools import lru_cache
from typing import Any

from pulumi_policy import ReportViolation, ResourceValidationArgs, ResourceValidationPolicy

from gpulease.core import resources as rt
from gpulease.core.compute import UNKNOWN, form_of, read, read_all
from gpulease.core.compute.cloudformation import STACK as CLOUDFORMATION_STACK
from gpulease.core.compute.forms import FORMS
from gpulease.core.compute.template_values import not_judged, variants
from gpulease.core.compute.units import embedded

from . import common as c

METADATA_TYPES = tuple(FORMS)


def _names_template(props: object, type_: str) -> bool:
    form = form_of(type_)
    return form is not None and any(read_all(props, ref.path) for ref in form.templates)


def _metadata_problems(type_: str, props: Any, max_hops: int, what: str) -> list[str]:
    """What one compute form or template does wrong with the metadata service (empty when nothing, or unknown)."""
    form = form_of(type_)
    if form is None:
        return []
    meta = form.metadata
    if meta is None:
        gap = form.metadata_gap(props)
        return [f"{what} cannot require metadata tokens: {gap}"] if gap else []
    found: list[str] = []
    tokens = read(props, meta.tokens)
    endpoint = read(props, meta.endpoint) if meta.endpoint else None
    if UNKNOWN in (tokens, endpoint) or endpoint == "disabled":
        return found
    aws = form.cloud == "aws"
    if tokens is None:
        if not meta.default_required and not _names_template(props, type_):  # else its template's
            found.append(f"{what} leaves {meta.tokens} unset: {meta.unset}; accepted: {meta.how}")
    elif tokens != "required":
        allows = "allows IMDSv1" if aws else "allows metadata access without a token"
        found.append(f"{what} {allows} ({meta.tokens}={tokens}); accepted: {meta.how}")
    number = rt.number(read(props, meta.hop_limit)) if meta.hop_limit else None
    if number is not None and number > max_hops:
        found.append(f"{what}: {meta.hop_limit}={number:g} lets more than {max_hops} network hops reach the "
                     "instance credentials")
    return found


def _template_metadata(inner: Any, max_hops: int) -> list[str]:
    """A template's resource judged with every value its intrinsics may give the metadata settings; an intrinsic
    there the pack cannot resolve is reported, never skipped (its value is not seen even when the stack runs)."""
    what = c.display(inner.type, inner.name)
    form = form_of(inner.type)
    meta = form.metadata if form is not None else None
    if meta is None:
        return _metadata_problems(inner.type, inner.props, max_hops, what)
    settings = (meta.tokens, meta.endpoint or "", meta.hop_limit or "")
    chosen, opaque = variants(inner, settings)
    found = [problem for props in (inner.props, *chosen) for problem in _metadata_problems(inner.type, props, max_hops, what)]
    if opaque:
        found.append(not_judged(what, opaque, "whether it requires metadata tokens"))
    return list(dict.fromkeys(found))


def _imdsv2(args: ResourceValidationArgs, report: ReportViolation) -> None:
    max_hops = int(c.config_value(args.get_config(), "maxHopLimit", 2))
    what = c.display(args.resource_type, args.name)
    if args.resource_type == CLOUDFORMATION_STACK:
        # What its template creates (an AWS::EC2::LaunchTemplate, an AWS::EC2::Instance) is judged as the same
        # resource in the stack would be, named as the other rules name it (LaunchTemplate 'stack/LogicalId').
        for inner in embedded(c.registered(args)):
            for problem in _template_metadata(inner, max_hops):
                report(problem)
        return
    for problem in _metadata_problems(args.resource_type, c.plain(args.props), max_hops, what):
        report(problem)


imdsv2_required = c.judges(ResourceValidationPolicy(
    name="imdsv2-required",
    description="Instances require token-based (IMDSv2) metadata access.",
    validate=_imdsv2,
    enforcement_level=c.level("mandatory"),
    config_schema=c.schema(
        {
            "maxHopLimit": {"type": "integer", "minimum": 1, "maximum": 64, "default": 2,
                            "description": "Largest accepted httpPutResponseHopLimit (2 lets containers reach it)."},
        }
    ),
), (*METADATA_TYPES, CLOUDFORMATION_STACK))


# kind -> (literals one of which any match of an ASCII text contains, lower-cased; the pattern). The literals let
# a scan skip a pattern with one substring search instead of running the expression over the whole user-data
# (the secret-key names are what two expressions run for otherwise: "secret" is in most cloud-init). A text that
# is not ASCII is scanned with every pattern: a case-insensitive expression matches letters that lower() keeps
# apart ("ſ" for "s", the Kelvin sign for "k"). A case-insensitive expression starts with its one first letter
# outside the alternation (``a(?:ws_...)``, not ``aws_...|...``): the same matches, but the engine then skips to each
# "a" instead of trying every branch at every character (the two expressions every gpulease user-data runs, since
# its staging script names SecretAccessKey and AccessKeySecret, were most of scanning one).
SECRET_PATTERNS: dict[str, tuple[tuple[str, ...], str]] = {
    "an AWS access key id": (("akia", "asia"), r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    "an AWS secret access key": (
        ("secretaccess", "secret_access"), r"(?i:a(?:ws_?secret_?access_?key))\s*[=:]\s*['\"]?[A-Za-z0-9/+=]{40}"),
    "an Alibaba Cloud AccessKey id": (("ltai",), r"\bLTAI[0-9A-Za-z]{12,21}\b"),
    "an Alibaba Cloud AccessKey secret": (
        ("keysecret", "key_secret", "alicloud_secret_key"),
        r"(?i:a(?:ccess_?key_?secret|li(?:baba_cloud_access_key_secret|cloud_secret_key)))\s*[=:]\s*['\"]?[A-Za-z0-9]{30}"),
    "a private key block": (
        ("private key",), r"-----BEGIN (?:(?:RSA|DSA|EC|OPENSSH|ENCRYPTED|PGP) )?PRIVATE KEY(?: BLOCK)?-----"),
    "a GitHub token": (("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
                       r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{60,})\b"),
    "a Hugging Face token": (("hf_",), r"\bhf_[A-Za-z0-9]{30,}\b"),
    "a Slack token": (("xox",), r"\bxox[abprs]-[A-Za-z0-9-]{10,}\b"),
    "an OpenAI-style API key": (("sk-",), r"\bsk-(?:proj-)?[A-Za-z0-9_-]{32,}\b"),
    "a Weights & Biases API key": (("wandb_api_key",), r"(?i:WANDB_API_KEY)\s*[=:]\s*['\"]?[0-9a-f]{40}\b"),
    "a Pulumi access token": (("pul-",), r"\bpul-[0-9a-f]{40}\b"),
    "a Google API key": (("aiza",), r"\bAIza[0-9A-Za-z_-]{35}\b"),
}


ASCII_FORMS: dict[str, str] = {
    # kind -> the same expression for the lower-cased text of an ASCII text, case-sensitive: a case-insensitive
    # expression cannot start its scan with a plain substring search, so over a whole user-data it tries every "a"
    # (the two that run on every gpulease user-data were most of scanning it). Lower-casing an ASCII text keeps
    # every offset and turns only A-Z into a-z, and each class after the key name takes both cases: the same
    # matches at the same places (``tests/policies/test_instance.py`` compares them).
    "an AWS secret access key": r"aws_?secret_?access_?key\s*[=:]\s*['\"]?[A-Za-z0-9/+=]{40}",
    "an Alibaba Cloud AccessKey secret":
        r"a(?:ccess_?key_?secret|li(?:baba_cloud_access_key_secret|cloud_secret_key))\s*[=:]\s*['\"]?[A-Za-z0-9]{30}",
}


@lru_cache(maxsize=256)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def decoded_texts(raw: str, encoded: bool) -> list[str]:
    """The user-data to scan: as written, or its base64 (and gzip) decoding when it is encoded."""
    compact = "".join(raw.split()) if encoded or len(raw) >= 16 else ""
    if compact and re.fullmatch(r"[A-Za-z0-9+/=]+", compact):
        try:
            data = base64.b64decode(compact, validate=True)
            if data[:2] == b"\x1f\x8b":
                data = gzip.decompress(data)
            return [data.decode("utf-8", errors="replace")]
        except (binascii.Error, ValueError, OSError):
            pass
    return [raw]


def find_secrets(text: str, extra: list[str] | None = None) -> list[str]:
    """``"<kind> on line N"`` for each secret found; the secret itself is never repeated."""
    ascii_text = text.isascii()
    lowered = text.lower()
    if ascii_text:
        candidates = [(kind, ASCII_FORMS[kind], lowered) if kind in ASCII_FORMS else (kind, pattern, text)
                      for kind, (literals, pattern) in SECRET_PATTERNS.items()
                      if any(literal in lowered for literal in literals)]
    else:
        candidates = [(kind, pattern, text) for kind, (_, pattern) in SECRET_PATTERNS.items()]
    candidates += [(f"extraPatterns[{i}]", pattern, text) for i, pattern in enumerate(extra or [])]
    found = []
    for kind, pattern, scanned in candidates:
        for match in _compiled(pattern).finditer(scanned):
            line = text.count("\n", 0, match.start()) + 1
            found.append(f"{kind} on line {line}")
    return found


def _user_data(args: ResourceValidationArgs, report: ReportViolation) -> None:
    form = form_of(args.resource_type)
    if form is None or not form.user_data:
        return
    extra = list(c.config_value(args.get_config(), "extraPatterns", []))
    what = c.display(args.resource_type, args.name)
    props = c.plain(args.props)
    for spec in form.user_data:
        if "*" in spec.path:
            # Each element of the list, numbered by its place in the list (not among those that set user-data).
            head, _, tail = spec.path.partition(".*.")
            values = [read(item, tail) for item in read_all(props, f"{head}.*")]
        else:
            values = read_all(props, spec.path)
        for i, raw in enumerate(values):
            if not isinstance(raw, str) or not raw:
                continue
            found: list[str] = []
            for text in decoded_texts(raw, encoded=spec.encoded):
                found += [f for f in find_secrets(text, extra) if f not in found]
            if found:
                label = spec.path.split(".")[-1] + (f" [{i}]" if "*" in spec.path else "")
                report(f"{what}: {label} holds {', '.join(found)}; accepted: credentials from the instance role (AWS "
                       "instance profile / Alibaba RAM role) or a secrets manager, fetched at boot")


no_secrets_in_user_data = c.judges(ResourceValidationPolicy(
    name="no-secrets-in-user-data",
    description="User-data holds no access keys, private keys or tokens.",
    validate=_user_data,
    enforcement_level=c.level("mandatory"),
    config_schema=c.schema(
        {
            "extraPatterns": {"type": "array", "items": {"type": "string", "format": "regex"}, "default": [],
                              "description": "More regular expressions that must not match the user-data."},
        }
    ),
), (*METADATA_TYPES, CLOUDFORMATION_STACK))

POLICIES = [imdsv2_required, no_secrets_in_user_data]
