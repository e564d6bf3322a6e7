"""Which bucket a stack's ``push`` and ``pull`` use, found in this order:

1. ``--bucket NAME`` (with the stack file's cloud and region): nothing to look up;
2. the Pulumi CLI, when it is installed: ``pulumi stack output --json --stack STACK`` in the stack's project, its
   ``bucket`` output (what the last ``pulumi up`` created);
3. offline: the stack rendered under mocks, as ``gpulease plan`` does, with the Pulumi organization the stack
   lives in (``--org``): the bucket's name is ``gpulease-<project>-<experiment>-<hash>`` where the hash covers
   ``<organization>/<project>/<stack>`` (``components/naming.py``), so the organization must be the real one:
   found as ``gpulease plan`` finds it (``gpulease/review/organization.py``: ``--org``, the configured backend,
   ``organization`` on a self-managed one); when it is not known, the command refuses rather than guess.

The stack file always gives the cloud and the region (``aws:region`` / ``alicloud:region``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpulease.core.child_process import run_bounded
from gpulease.core.errors import UserError
from gpulease.review import stacks
from gpulease.review.engine import render_target
from gpulease.review.organization import DIY_ORGANIZATION
from gpulease.review.organization import resolve as resolve_organization

DEFAULT_ORGANIZATION = DIY_ORGANIZATION
PULUMI_TIMEOUT_SECONDS = 120


@dataclass(frozen=True)
class StackBucket:
    stack: str
    cloud: str
    region: str
    bucket: str
    found_by: str
    """``--bucket``, ``pulumi stack output`` or ``offline rendering (organization X)``."""
    reads: tuple[Path, ...] = ()
    """The files the command read to find the bucket (the stack file, the project file): a pull never writes them."""


def _stack_file(target: str) -> tuple[Path, Path]:
    found = stacks.resolve(target)
    if len(found) != 1:
        raise UserError(f"{target}: name one stack (found {len(found)} stack files)")
    return found[0]


def cloud_and_region(stack: str, config: dict[str, Any]) -> tuple[str, str]:
    if config.get("alicloud:region"):
        return "alicloud", str(config["alicloud:region"])
    if config.get("aws:region"):
        return "aws", str(config["aws:region"])
    raise UserError(f"stack {stack}: the stack file sets neither aws:region nor alicloud:region")


def pulumi_outputs(project_dir: Path, stack: str, pulumi: str) -> dict[str, Any]:
    """The stack's outputs as the Pulumi CLI reports them (``pulumi stack output --json``)."""
    try:
        done = run_bounded([pulumi, "stack", "output", "--json", "--stack", stack, "--cwd", str(project_dir)],
                           timeout=PULUMI_TIMEOUT_SECONDS)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UserError(f"stack {stack}: `pulumi stack output` did not answer: {exc}") from None
    if done.returncode != 0:
        detail = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise UserError(f"stack {stack}: `pulumi stack output` failed: {detail}")
    try:
        outputs = json.loads(done.stdout or "{}")
    except json.JSONDecodeError:
        raise UserError(f"stack {stack}: `pulumi stack output --json` did not print JSON") from None
    return outputs if isinstance(outputs, dict) else {}


def locate(
    target: str, *, bucket: str | None = None, use_pulumi: bool | None = None,
    organization: str | None = None,
) -> StackBucket:
    """The bucket of ``target`` (a stack name or stack file). ``use_pulumi`` None: when the CLI is installed.
    ``organization`` None: found as ``gpulease plan`` finds it (``gpulease.review.organization``)."""
    project_dir, stack_file = _stack_file(target)
    stack = stacks.stack_name(stack_file)
    config = stacks.load_stack_config(stack_file)
    cloud, region = cloud_and_region(stack, config)
    reads = (stack_file, project_dir / "Pulumi.yaml", project_dir / "Pulumi.yml")
    if bucket:
        return StackBucket(stack, cloud, region, bucket, "--bucket", reads)
    pulumi = shutil.which("pulumi")
    if use_pulumi or (use_pulumi is None and pulumi):
        if not pulumi:
            raise UserError("--pulumi: the Pulumi CLI is not installed (or not on PATH)")
        outputs = pulumi_outputs(project_dir, stack, pulumi)
        if not outputs.get("bucket"):
            raise UserError(f"stack {stack}: its outputs name no bucket (was it deployed? `pulumi up` first)")
        return StackBucket(stack, cloud, region, str(outputs["bucket"]), "pulumi stack output", reads)
    org = resolve_organization(project_dir, organization)
    if not org.known:
        raise UserError(f"stack {stack}: the bucket's name hashes the stack's Pulumi organization, which is not "
                        f"known here ({org.found_by}); accepted: --org NAME ({DEFAULT_ORGANIZATION!r} on a "
                        "self-managed backend), --bucket NAME, or --pulumi")
    organization = org.name
    rendering = render_target(project_dir, stack_file, organization=organization)
    if rendering.error:
        raise UserError(f"stack {stack}: {rendering.error}")
    name = rendering.outputs.get("bucket")
    if not name:
        raise UserError(f"stack {stack}: it declares no bucket of its own")
    return StackBucket(stack, cloud, region, str(name), f"offline rendering ({org.describe()})", reads)
