"""Deterministic physical names: known at preview, unique per stack, valid on both clouds."""

from __future__ import annotations

import hashlib
import re

import pulumi

UNKNOWN_ORGANIZATION_PLACEHOLDER = "org-unknown"
"""Stands for the hash in every name when the organization is not known (an offline review without ``--org`` or
a configured backend): the name says it is not the one ``pulumi up`` creates, rather than hashing a made-up
organization. Pulumi itself always knows it (3.x: ``organization`` on a self-managed backend)."""
_UNKNOWN_ORGANIZATIONS = (None, "", "None", "<unknown organization>")


def stack_hash(length: int = 6) -> str:
    """A short hash of organization/project/stack: unique per stack, stable across runs."""
    organization = pulumi.get_organization()
    if organization in _UNKNOWN_ORGANIZATIONS:
        return UNKNOWN_ORGANIZATION_PLACEHOLDER
    ident = f"{organization}/{pulumi.get_project()}/{pulumi.get_stack()}"
    return hashlib.sha256(ident.encode()).hexdigest()[:length]


def slug(text: str, limit: int) -> str:
    cleaned = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    return re.sub(r"-{2,}", "-", cleaned)[:limit].strip("-")


def bucket_name(project: str, base: str) -> str:
    """``gpulease-<project>-<experiment>-<hash>``, at most 63 characters."""
    suffix = stack_hash()
    head = slug(f"gpulease-{project}-{base}", 63 - len(suffix) - 1)
    return f"{head}-{suffix}"


def scoped_name(base: str, limit: int = 64) -> str:
    """A name for account-wide resources (roles, schedules): ``gpl-<hash>-<base>``."""
    return slug(f"gpl-{stack_hash()}-{base}", limit)


def bootstrap_bucket_name(project: str, base: str) -> str:
    """``gpulease-boot-<project>-<stack>-<hash>``: never the checkpoint bucket's name (that one has no ``boot-``)."""
    suffix = stack_hash()
    return f"{slug(f'gpulease-boot-{project}-{base}', 63 - len(suffix) - 1)}-{suffix}"
