"""Unique, reproducible ephemeral stack names: ``ci-<run id>-<short sha>``.

In GitHub Actions the name comes from ``GITHUB_RUN_ID`` (plus ``GITHUB_RUN_ATTEMPT`` on a re-run) and
``GITHUB_SHA``, so the workflow's clean-up step can compute the same name after the run step was killed.
Elsewhere the run id is generated (UTC time and a random suffix) and the sha comes from ``git``.
"""

from __future__ import annotations

import re
import secrets
import subprocess
from collections.abc import Callable, Mapping
from datetime import UTC, datetime

from gpulease.core.errors import UserError

PREFIX = "ci-"
STACK_NAME = re.compile(r"^ci-[a-z0-9]+(-[a-z0-9]+)*\Z")


def _clean(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "", text.lower())


def git_short_sha() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short=7", "HEAD"], capture_output=True, text=True, timeout=5, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def ci_run_id(env: Mapping[str, str]) -> str | None:
    """The CI run's id, ``<run>`` or ``<run>-<attempt>`` on a re-run; None outside GitHub Actions."""
    run_id = _clean(env.get("GITHUB_RUN_ID", ""))
    if not run_id:
        return None
    attempt = _clean(env.get("GITHUB_RUN_ATTEMPT", "1")) or "1"
    return run_id if attempt == "1" else f"{run_id}-{attempt}"


def ephemeral_stack_name(
    env: Mapping[str, str],
    *,
    sha: Callable[[], str | None] = git_short_sha,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
    token: Callable[[], str] = lambda: secrets.token_hex(4),
) -> str:
    run = ci_run_id(env) or f"{now().strftime('%Y%m%d%H%M%S')}{token()}"
    short = _clean(env.get("GITHUB_SHA", ""))[:7] or _clean(sha() or "")[:7] or "nosha"
    return f"{PREFIX}{run}-{short}"


def current_run_stack_name(env: Mapping[str, str], sha: Callable[[], str | None] = git_short_sha) -> str:
    """The name ``ephemeral run`` used in this CI run (for the clean-up step); needs ``GITHUB_RUN_ID``."""
    if not ci_run_id(env):
        raise UserError("--current-run needs GITHUB_RUN_ID (and GITHUB_SHA) from GitHub Actions; name the stack instead")
    return ephemeral_stack_name(env, sha=sha)


def ci_run_label(env: Mapping[str, str], stack: str) -> str:
    """The value of the ci-run tag: a link-like id of the CI run, or the stack name outside CI."""
    run = ci_run_id(env)
    repo = env.get("GITHUB_REPOSITORY", "")
    if run and re.match(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+\Z", repo):
        return f"{repo}/actions/runs/{run}"
    return stack


def is_ephemeral(stack: str) -> bool:
    return stack.startswith(PREFIX)
