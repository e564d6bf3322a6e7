"""The Pulumi organization a stack lives in, found in one place for every command (``plan``, ``cost``, ``push``,
``pull``), because the stack's physical names hash it (``components/naming.py``): a wrong organization shows
names ``pulumi up`` will never create.

In this order:

1. ``--org NAME`` on the command line;
2. the backend the Pulumi CLI would use: ``PULUMI_BACKEND_URL``, else the project's ``backend.url`` in
   Pulumi.yaml, else the one ``pulumi login`` last chose (``~/.pulumi/credentials.json``, ``current``);
   - a self-managed (DIY) backend (``file://``, ``s3://``, ``gs://``, ``azblob://``): ``organization``, the fixed
     name Pulumi 3.x gives every stack there (pulumi/pulumi#10820, "Make getOrganization total, default to
     'organization'"; https://github.com/pulumi/pulumi/pull/10820);
   - Pulumi Cloud (``https://…``): the default organization set with ``pulumi org set-default``
     (``~/.pulumi/config.json``, ``backends.<url>.defaultOrg``, https://github.com/pulumi/pulumi/pull/8352), else
     the account ``pulumi login`` stored (``credentials.json``, ``accounts.<url>.username``: a user's own
     organization is named after them);
3. otherwise unknown: the review renders with ``UNKNOWN`` and every name that hashes it carries the placeholder
   ``org-unknown`` instead of a hash (``components/naming.py``), and says so; ``pull --offline`` refuses.

``PULUMI_HOME`` moves ``~/.pulumi`` as it does for the CLI. Files that cannot be read count as absent.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gpulease.core.errors import UserError
from gpulease.core.inputfile import StrictLoader

UNKNOWN = "<unknown organization>"
"""What ``pulumi.get_organization()`` answers in a review whose organization is not known."""
DIY_ORGANIZATION = "organization"
DIY_SCHEMES = ("file://", "s3://", "gs://", "azblob://")
ORG_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}\Z")
MAX_SETTINGS_BYTES = 1 << 20


class OrganizationError(UserError):
    """``--org`` that is not an organization name."""


@dataclass(frozen=True)
class Organization:
    name: str
    """The organization, or ``UNKNOWN``."""
    found_by: str
    """Where it came from, for the reports: ``--org``, ``DIY backend file://…``, ``pulumi org set-default``…"""

    @property
    def known(self) -> bool:
        return self.name != UNKNOWN

    def describe(self) -> str:
        if not self.known:
            return ("organization unknown offline (no --org, no Pulumi backend configured): names that hash it "
                    "show org-unknown; give --org NAME")
        return f"organization {self.name}, from {self.found_by}"


def check_name(text: str) -> str:
    """``--org``'s value: a Pulumi organization name (letters, digits, ``-``, ``_``, ``.``; no path)."""
    if not ORG_NAME.match(text) or text in (".", "..") or ".." in text:
        raise OrganizationError(f"--org {text!r}: not an organization name; accepted: letters, digits, '-', '_' "
                                f"and '.', e.g. acme or {DIY_ORGANIZATION} (a self-managed backend's)")
    return text


def _read_json(path: Path) -> dict[str, Any]:
    try:
        if not path.is_file() or path.stat().st_size > MAX_SETTINGS_BYTES:
            return {}
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _project_backend(project_dir: Path) -> str | None:
    from gpulease.review.stacks import project_file

    path = project_file(project_dir) or project_dir / "Pulumi.yaml"
    try:
        if not path.is_file() or path.stat().st_size > MAX_SETTINGS_BYTES:
            return None
        doc = yaml.load(path.read_text(encoding="utf-8"), Loader=StrictLoader)
    except Exception:
        return None  # the project loader reports a broken Pulumi.yaml in its own words
    backend = doc.get("backend") if isinstance(doc, dict) else None
    url = backend.get("url") if isinstance(backend, dict) else None
    return url if isinstance(url, str) and url else None


def pulumi_home(env: dict[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    return Path(env["PULUMI_HOME"]) if env.get("PULUMI_HOME") else Path.home() / ".pulumi"


def resolve(project_dir: Path, org: str | None = None, env: dict[str, str] | None = None) -> Organization:
    """The organization of the project's stacks (see the module's docstring for the order)."""
    if org:
        return Organization(check_name(org), "--org")
    env = dict(os.environ) if env is None else env
    home = pulumi_home(env)
    credentials = _read_json(home / "credentials.json")
    url, where = env.get("PULUMI_BACKEND_URL"), "PULUMI_BACKEND_URL"
    if not url:
        url, where = _project_backend(project_dir), "Pulumi.yaml backend.url"
    if not url and isinstance(credentials.get("current"), str) and credentials["current"]:
        url, where = credentials["current"], "pulumi login"
    if not url:
        return Organization(UNKNOWN, "no --org and no Pulumi backend configured")
    url = url.rstrip("/")
    if url.startswith(DIY_SCHEMES):
        return Organization(DIY_ORGANIZATION, f"self-managed backend {url} ({where})")
    backends = _read_json(home / "config.json").get("backends")
    entry = backends.get(url) if isinstance(backends, dict) else None
    default = entry.get("defaultOrg") if isinstance(entry, dict) else None
    if isinstance(default, str) and ORG_NAME.match(default):
        return Organization(default, f"pulumi org set-default for {url}")
    accounts = credentials.get("accounts")
    account = accounts.get(url) if isinstance(accounts, dict) else None
    user = account.get("username") if isinstance(account, dict) else None
    if isinstance(user, str) and ORG_NAME.match(user):
        return Organization(user, f"the account logged in to {url}")
    return Organization(UNKNOWN, f"backend {url} ({where}) without a known organization")


def organization_note(found: Iterable[Organization]) -> str | None:
    """One line for the reports when some names hash an organization that is not known, else None."""
    unknown = [o for o in found if not o.known]
    return unknown[0].describe() if unknown else None
