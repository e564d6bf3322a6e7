"""What a stack says about each of its buckets, gathered from the bucket and the resources configuring it.

Both clouds split a bucket's settings across resources (AWS: ``BucketVersioning``,
``BucketLifecycleConfiguration``, ``BucketPublicAccessBlock``, ``BucketAcl``; Alibaba: ``BucketVersioning``,
``BucketPublicAccessBlock``, ``BucketAcl``, ``BucketServerSideEncryption``) or take them inline. A setting
resource belongs to a bucket when its ``bucket`` input names it, or, when that name is not known during
preview, when its ``bucket`` input depends on the bucket resource.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpulease.core import resources as rt

from . import common as c

SETTING_TYPES = (
    rt.AWS_BUCKET_PUBLIC_ACCESS_BLOCK, rt.AWS_ACCOUNT_PUBLIC_ACCESS_BLOCK, rt.AWS_BUCKET_ACL, rt.AWS_BUCKET_VERSIONING,
    rt.AWS_BUCKET_LIFECYCLE, rt.ALI_BUCKET_PUBLIC_ACCESS_BLOCK, rt.ALI_ACCOUNT_PUBLIC_ACCESS_BLOCK, rt.ALI_BUCKET_ACL,
    rt.ALI_BUCKET_VERSIONING, rt.ALI_BUCKET_ENCRYPTION,
)
"""Every type ``bucket_facts`` reads besides the buckets themselves."""
BUCKET_FACT_TYPES = (*rt.BUCKET_TYPES, *SETTING_TYPES)

PUBLIC_ACLS = ("public-read", "public-read-write", "authenticated-read")
AWS_BLOCK_FLAGS = ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")


@dataclass
class BucketFacts:
    resource: Any
    name: Any
    versioned: bool | None = None
    lifecycle: bool | None = None
    public_acls: list[str] = field(default_factory=list)
    access_blocked: bool | None = None
    block_present: bool = False
    """A public access block for the bucket (or the account) is in the stack, whatever its flags say."""
    block_gaps: list[str] = field(default_factory=list)
    encrypted: bool | None = None
    aborts_uploads: bool | None = None


def _belongs(setting: Any, bucket: Any, name: Any) -> bool:
    target = c.known(setting.props, "bucket")
    if isinstance(target, str) and isinstance(name, str):
        return target == name
    return bucket.urn in {d.urn for d in setting.property_dependencies.get("bucket", [])}


def _aws_blocks_all(props: Any) -> tuple[bool | None, list[str]]:
    values = {flag: c.known(props, flag) for flag in AWS_BLOCK_FLAGS}
    if any(val is c.UNKNOWN for val in values.values()):
        return None, []
    gaps = [flag for flag, val in values.items() if not rt.flag(val)]
    return not gaps, gaps


def _ali_blocks(props: Any) -> tuple[bool | None, list[str]]:
    flag = c.known(props, "blockPublicAccess")
    if flag is c.UNKNOWN:
        return None, []
    return (True, []) if rt.flag(flag) else (False, ["blockPublicAccess"])


def _enabled_rules(rules: list[Any], key: str, on: Any) -> bool:
    return any(c.known(rule, key) == on for rule in rules if rule is not c.UNKNOWN)


def _aborts(rules: list[Any], enabled_key: str, on: Any, abort_key: str) -> bool:
    return any(
        c.known(rule, enabled_key) == on and c.known(rule, abort_key) not in (None, [], {})
        for rule in rules
        if rule is not c.UNKNOWN
    )


def bucket_facts(resources: list, account_level: bool = True) -> list[BucketFacts]:
    """One ``BucketFacts`` per AWS or Alibaba bucket in the stack; ``account_level``: whether an account-wide
    public access block in the stack counts for every bucket."""
    settings = [r for r in resources if r.resource_type not in rt.BUCKET_TYPES]
    account_block_aws = [r for r in resources if account_level and r.resource_type == rt.AWS_ACCOUNT_PUBLIC_ACCESS_BLOCK]
    account_block_ali = [r for r in resources if account_level and r.resource_type == rt.ALI_ACCOUNT_PUBLIC_ACCESS_BLOCK]
    out = []
    for bucket in resources:
        if bucket.resource_type not in rt.BUCKET_TYPES:
            continue
        props = bucket.props
        name = c.known(props, "bucket")
        facts = BucketFacts(resource=bucket, name=name)
        acl = c.known(props, "acl")
        if acl in PUBLIC_ACLS:
            facts.public_acls.append(f"acl={acl}")
        mine = [s for s in settings if c.known(s.props, "bucket") is not None and _belongs(s, bucket, name)]
        if bucket.resource_type in rt.AWS_BUCKETS:
            facts.versioned = rt.flag(c.known(props, "versioning", "enabled")) or any(
                c.known(s.props, "versioningConfiguration", "status") == "Enabled"
                for s in mine
                if s.resource_type == rt.AWS_BUCKET_VERSIONING
            )
            facts.lifecycle = _enabled_rules(c.items(props, "lifecycleRules"), "enabled", True) or any(
                _enabled_rules(c.items(s.props, "rules"), "status", "Enabled")
                for s in mine
                if s.resource_type == rt.AWS_BUCKET_LIFECYCLE
            )
            facts.aborts_uploads = _aborts(c.items(props, "lifecycleRules"), "enabled", True,
                                           "abortIncompleteMultipartUploadDays") or any(
                _aborts(c.items(s.props, "rules"), "status", "Enabled", "abortIncompleteMultipartUpload")
                for s in mine
                if s.resource_type == rt.AWS_BUCKET_LIFECYCLE
            )
            blocks = [_aws_blocks_all(s.props) for s in mine if s.resource_type == rt.AWS_BUCKET_PUBLIC_ACCESS_BLOCK]
            blocks += [_aws_blocks_all(a.props) for a in account_block_aws]
            acl_type = rt.AWS_BUCKET_ACL
        else:
            facts.versioned = c.known(props, "versioning", "status") == "Enabled" or any(
                c.known(s.props, "status") == "Enabled" for s in mine if s.resource_type == rt.ALI_BUCKET_VERSIONING
            )
            facts.lifecycle = _enabled_rules(c.items(props, "lifecycleRules"), "enabled", True)
            facts.aborts_uploads = _aborts(c.items(props, "lifecycleRules"), "enabled", True, "abortMultipartUploads")
            blocks = [_ali_blocks(s.props) for s in mine if s.resource_type == rt.ALI_BUCKET_PUBLIC_ACCESS_BLOCK]
            blocks += [_ali_blocks(a.props) for a in account_block_ali]
            acl_type = rt.ALI_BUCKET_ACL
            facts.encrypted = bool(c.known(props, "serverSideEncryptionRule", "sseAlgorithm")) or any(
                s.resource_type == rt.ALI_BUCKET_ENCRYPTION and bool(c.known(s.props, "sseAlgorithm")) for s in mine
            )
        facts.public_acls += [
            f"BucketAcl {s.name!r} acl={c.known(s.props, 'acl')}"
            for s in mine
            if s.resource_type == acl_type and c.known(s.props, "acl") in PUBLIC_ACLS
        ]
        facts.block_present = bool(blocks)
        if any(ok for ok, _ in blocks):
            facts.access_blocked = True
        elif any(ok is None for ok, _ in blocks):
            facts.access_blocked = None
        else:
            facts.access_blocked = False
            facts.block_gaps = sorted({gap for _, gaps in blocks for gap in gaps})
        out.append(facts)
    return out
