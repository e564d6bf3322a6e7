"""The data an instance stages (``data.sources``, ``components/spec/workflow.py``), read back from the settings in
its user-data (cloud-init ``write_files``: ``/etc/gpulease/settings.json``, gzipped and base64-encoded as both
clouds take it):

- data-source-no-credentials (mandatory): no source URI (nor the hub token's secret reference) looks like it
  carries a credential: ``user:password@``, a pre-signed or tokenised query, an access key id or a hub token. User-
  data is readable by anyone who may describe the instance and stays in the stack's state; the instance reads
  buckets with its role and a private hub token from a secret.
- data-source-same-region (advisory): a bucket source in another region than the instance. Reading it crosses
  regions: inter-region transfer is billed per GB (S3: "Data Transfer OUT From Amazon S3 To" another region,
  https://aws.amazon.com/s3/pricing/ ; OSS: outbound traffic over the internet, since an internal endpoint serves
  its own region only, https://www.alibabacloud.com/help/en/oss/user-guide/regions-and-endpoints), and slower.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import json
import re
from typing import Any

import yaml
from pulumi_policy import ReportViolation, ResourceValidationArgs, ResourceValidationPolicy

from gpulease.core import datasources as ds
from gpulease.core import resources as rt

from . import common as c

SETTINGS_PATH = "/etc/gpulease/settings.json"
# libyaml's safe loader where PyYAML has it (the pinned wheels do): the same documents as yaml.safe_load, parsed
# about ten times faster; two rules read every instance's user-data, which dominated judging a 100-run sweep.
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
USER_DATA_KEYS = ("userDataBase64", "userData")


def staged_settings(props: Any) -> dict[str, Any] | None:
    """The gpulease settings in an instance's user-data, or None (unknown, absent, not gpulease's); read once per
    request for both rules of this module (``common.memoized``; the rules only read it)."""
    return c.memoized("staged_settings", (props,), lambda: _staged_settings(props))


def _staged_settings(props: Any) -> dict[str, Any] | None:
    for key in USER_DATA_KEYS:
        raw = c.known(props, key)
        if raw is c.UNKNOWN:
            return None
        if not isinstance(raw, str) or not raw:
            continue
        try:
            data = base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError):
            data = raw.encode()
        if data[:2] == b"\x1f\x8b":
            try:
                data = gzip.decompress(data)
            except (OSError, EOFError):
                return None
        try:
            document = yaml.load(data.decode("utf-8", "replace"), Loader=_SAFE_LOADER)
        except yaml.YAMLError:
            return None
        files = document.get("write_files") if isinstance(document, dict) else None
        for entry in files if isinstance(files, list) else []:
            if isinstance(entry, dict) and entry.get("path") == SETTINGS_PATH:
                try:
                    settings = json.loads(str(entry.get("content") or ""))
                except ValueError:
                    return None
                return settings if isinstance(settings, dict) else None
    return None


def _sources(settings: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in settings.get("data_sources") or [] if isinstance(s, dict) and isinstance(s.get("uri"), str)]


def _no_credentials(args: ResourceValidationArgs, report: ReportViolation) -> None:
    settings = staged_settings(args.props)
    if settings is None:
        return
    what = c.display(args.resource_type, args.name)
    extra = [str(p) for p in c.config_value(args.get_config(), "extraPatterns", [])]
    for i, source in enumerate(_sources(settings)):
        problem = ds.credential_problem(source["uri"]) or next(
            (f"it matches the configured pattern {p!r}" for p in extra if re.search(p, source["uri"])), None)
        if problem:
            shown = source["uri"].split("://", 1)[0] + "://…"
            report(f"{what} stages data source [{i}] ({shown}) whose URI looks like it carries a credential: {problem}; "
                   "accepted: a URI without one (the instance reads buckets with its role, a private hub token from "
                   "data.hubTokenSecret)")
    secret = settings.get("hub_token_secret")
    if isinstance(secret, str) and ds.credential_problem(secret):
        report(f"{what}: data.hubTokenSecret looks like a token itself; accepted: the name of the secret holding it")


def _same_region(args: ResourceValidationArgs, report: ReportViolation) -> None:
    settings = staged_settings(args.props)
    if settings is None:
        return
    region = settings.get("region")
    accepted = {str(r) for r in c.config_value(args.get_config(), "acceptedRegions", [])}
    what = c.display(args.resource_type, args.name)
    for i, source in enumerate(_sources(settings)):
        other = source.get("region")
        if other and region and other != region and other not in accepted and source["uri"].split("://", 1)[0] in ds.BUCKET_SCHEMES:
            report(f"{what} stages data source [{i}] {source['uri']} from {other}, another region than the instance's "
                   f"({region}): inter-region transfer is billed per GB and slower; accepted: a copy of the data in "
                   f"a bucket in {region}")


INSTANCE_TYPES = (rt.AWS_INSTANCE, rt.ALI_INSTANCE)

data_source_no_credentials = c.judges(ResourceValidationPolicy(
    name="data-source-no-credentials",
    description="No data source URI an instance stages carries a credential (it would be in user-data and state).",
    validate=_no_credentials,
    enforcement_level=c.level("mandatory"),
    config_schema=c.schema({
        "extraPatterns": {"type": "array", "items": {"type": "string", "format": "regex"}, "default": [],
                          "description": "More regular expressions a source URI must not match (an in-house token)."},
    }),
), INSTANCE_TYPES)

data_source_same_region = c.judges(ResourceValidationPolicy(
    name="data-source-same-region",
    description="Bucket sources an instance stages are in its own region (no inter-region transfer charges).",
    validate=_same_region,
    enforcement_level=c.level("advisory"),
    config_schema=c.schema({
        "acceptedRegions": {"type": "array", "items": {"type": "string"}, "default": [],
                            "description": "Source bucket regions accepted without a finding (a transfer you accept)."},
    }),
), INSTANCE_TYPES)

POLICIES = [data_source_no_credentials, data_source_same_region]
