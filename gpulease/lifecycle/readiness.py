"""``gpulease check``: is this machine and this account ready for ``gpulease up``? Read-only, every call bounded.

One row per question, each with its fix: the Pulumi CLI and its version (``pulumi version``), the backend and the
organization (``pulumi whoami --json``: ``user``, ``url``, ``organizations``, ``tokenInformation``, the fields the
Automation API's ``LocalWorkspace.who_am_i`` reads), the credentials for the stack's cloud (STS
``GetCallerIdentity``: boto3 on AWS, the Alibaba Cloud STS SDK), and the GPU quota (``quotas``). A row is ``ok``
true, false (a fix is needed) or None (could not be told, e.g. no stack named)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from components.spec import prompted
from components.spec.load import StackSpec, load_stack_spec
from gpulease.core.catalog import CatalogError
from gpulease.core.child_process import run_bounded
from gpulease.core.shown import shown_path
from gpulease.core.sizing.resolve import resolve_instance_type
from gpulease.ephemeral.backend import MIN_PULUMI_CLI, _version_tuple
from gpulease.lifecycle import reach
from gpulease.lifecycle.quotas import Need, alicloud_quota, aws_quota
from gpulease.review import stacks

PULUMI_SECONDS = 30
"""Each ``pulumi`` call's bound, the command and every process it started (``gpulease.core.child_process``):
``whoami`` asks the backend, which may be a slow network away."""
INSTALL = "install it: https://www.pulumi.com/docs/install/ (or `curl -fsSL https://get.pulumi.com | sh`)"
# Interactive: a few seconds, not botocore's 60 s per connection attempt.
AWS_TIMEOUTS = {"connect_timeout": 5, "read_timeout": 10, "retries": {"mode": "standard", "max_attempts": 2}}


def row(check: str, ok: bool | None, detail: str, fix: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"check": check, "ok": ok, "detail": detail, "fix": fix, **extra}


def _pulumi(argv: list[str]) -> tuple[int | None, str, str]:
    exe = shutil.which("pulumi", path=os.environ.get("PATH"))
    if exe is None:
        return None, "", "not found"
    try:
        done = run_bounded([exe, *argv], timeout=PULUMI_SECONDS)
    except subprocess.TimeoutExpired:
        return None, "", f"no answer within {PULUMI_SECONDS} s"
    except OSError as exc:
        return None, "", str(exc.strerror or exc)
    return done.returncode, done.stdout, done.stderr


def pulumi_rows() -> list[dict[str, Any]]:
    code, out, err = _pulumi(["version"])
    floor = ".".join(map(str, MIN_PULUMI_CLI))
    if code is None:
        return [row("pulumi", False, f"the Pulumi CLI: {err}", INSTALL),
                row("backend", None, "not asked: no Pulumi CLI", "install the CLI first")]
    version = out.strip()
    found = _version_tuple(version)
    if code != 0 or found is None:
        return [row("pulumi", False, f"`pulumi version` failed: {(err.strip().splitlines() or ['?'])[-1]}", INSTALL),
                row("backend", None, "not asked", "fix the CLI first")]
    rows = [row("pulumi", found >= MIN_PULUMI_CLI, f"Pulumi CLI {version}",
                None if found >= MIN_PULUMI_CLI else f"upgrade to {floor} or newer: {INSTALL}", version=version)]
    code, out, err = _pulumi(["whoami", "--json"])
    if code != 0:
        last = (err.strip().splitlines() or ["no message"])[-1]
        if code is None or reach.network_kind(last) != reach.UNKNOWN_KIND:
            # The backend was not reached (a timeout, DNS, a refused connection): logging in again does not help.
            rows.append(row("backend", False, f"`pulumi whoami` did not reach the backend: {last}",
                            f"{reach.NETWORK_FIX}; the backend is PULUMI_BACKEND_URL or `pulumi login`'s URL"))
            return rows
        rows.append(row("backend", False, f"not logged in to a backend: {last}",
                        "pulumi login (Pulumi Cloud), or pulumi login s3://<bucket> / pulumi login --local"))
        return rows
    try:
        who = json.loads(out or "{}")
    except json.JSONDecodeError:
        who = {}
    if not isinstance(who, dict) or not who.get("user"):
        rows.append(row("backend", False, "`pulumi whoami --json` printed no user", "pulumi login"))
        return rows
    url = str(who.get("url") or "?")
    token = who.get("tokenInformation") if isinstance(who.get("tokenInformation"), dict) else {}
    orgs = [str(o) for o in who.get("organizations") or []]
    org = token.get("organization") or (orgs[0] if len(orgs) == 1 else None)
    local = url.startswith(("file://", "s3://", "azblob://", "gs://"))
    detail = f"logged in as {who['user']} at {url}"
    if local:
        detail += " (a self-managed backend: stacks live in that store, the organization is 'organization')"
        org = org or "organization"
    elif org:
        detail += f", organization {org}"
    elif orgs:
        detail += f", organizations {', '.join(orgs)} (the default one holds new stacks: `pulumi org get-default`)"
    rows.append(row("backend", True, detail, None, user=who["user"], url=url, organization=org, organizations=orgs))
    return rows


@dataclass(frozen=True)
class StackFacts:
    stack: str
    cloud: str
    region: str
    needs: list[Need]


def stack_facts(stack: str) -> StackFacts:
    """The stack's cloud, region and what it runs at once (SpecError / StackNotFoundError: one line, exit 2)."""
    path = stacks.resolve_one(stack)
    config = stacks.load_stack_config(path)
    spec: StackSpec = load_stack_spec(stack, prompted.stack_config(config),
                                      source=shown_path(path))
    region = spec.base.region or config.get(f"{spec.cloud}:region")
    if not isinstance(region, str):
        raise CatalogError(f"{path}: no region; accepted: {spec.cloud}:region in the stack file", field="region")
    by_type: dict[tuple[str, str], int] = {}
    for exp in spec.experiments:
        if exp.phase != "train":
            continue  # prep runs a CPU instance and parked none: no GPU quota
        it = resolve_instance_type(spec.cloud, region, exp.gpu, nodes=exp.nodes)
        key = (it.type, exp.market)
        by_type[key] = by_type.get(key, 0) + it.vcpu * exp.nodes
    return StackFacts(stack, spec.cloud, region, [Need(t, n, m) for (t, m), n in sorted(by_type.items())])


def unread_quotas(facts: StackFacts) -> list[dict[str, Any]]:
    """The quota rows as ``?`` when the credentials failed: the question is named, not left out."""
    return [row("quota", None, f"{n.instance_type}: {n.vcpus} vCPUs {n.market}; not read without working credentials "
                "(see the line above)") for n in facts.needs]


def unreached_rows(unreached: reach.Unreached, service: str, facts: StackFacts) -> list[dict[str, Any]]:
    """The endpoint was not reached: a network row with its fix; the credentials and quotas as not told."""
    return [row("network", False, unreached.detail(service), reach.NETWORK_FIX, endpoint=unreached.endpoint),
            row("credentials", None, "not asked: the endpoint was not reached (see the line above)"),
            *unread_quotas(facts)]


def aws_rows(facts: StackFacts) -> list[dict[str, Any]]:
    import boto3
    from botocore.config import Config

    config = Config(**AWS_TIMEOUTS)
    session = boto3.session.Session()  # a new one: the credentials of now, not those boto3 cached earlier
    sts = session.client("sts", region_name=facts.region, config=config)
    try:
        who = sts.get_caller_identity()
    except Exception as exc:
        unreached = reach.aws_unreached(exc, sts.meta.endpoint_url)
        if unreached is not None:
            return unreached_rows(unreached, "AWS STS", facts)
        what, fix = reach.aws_credentials_problem(exc) or (
            f"AWS credentials: {' '.join(str(exc).split())[:200]}", "aws configure / aws sso login, or set AWS_PROFILE")
        return [row("credentials", False, what, fix), *unread_quotas(facts)]
    rows = [row("credentials", True, f"AWS account {who['Account']} as {who['Arn']}", None, account=who["Account"])]
    quotas = session.client("service-quotas", region_name=facts.region, config=config)
    rows += [aws_quota(quotas, need) for need in facts.needs]
    return rows


def alicloud_rows(facts: StackFacts) -> list[dict[str, Any]]:
    from gpulease.inventory.alicloud_clients import AlicloudClients

    clients = AlicloudClients(max_attempts=2)
    fix = "set ALIBABA_CLOUD_ACCESS_KEY_ID / ALIBABA_CLOUD_ACCESS_KEY_SECRET, or `aliyun configure`"
    try:
        clients.check_credentials()  # the local chain: nothing is sent yet
    except Exception as exc:
        text = " ".join(str(getattr(exc, "message", exc)).split())[:200]
        return [row("credentials", False, f"Alibaba Cloud credentials: {text}", fix), *unread_quotas(facts)]
    try:
        account = clients.account_id(facts.region)
    except Exception as exc:
        endpoint = clients.endpoint or str(getattr(clients.sts(facts.region), "_endpoint", None)
                                           or f"sts.{facts.region}.aliyuncs.com")
        unreached = reach.alicloud_unreached(exc, endpoint)
        if unreached is not None:
            return unreached_rows(unreached, "Alibaba Cloud STS", facts)
        what = reach.alicloud_refused(exc) or (
            f"Alibaba Cloud credentials: {' '.join(str(getattr(exc, 'message', exc)).split())[:200]}")
        return [row("credentials", False, what, f"the key is wrong or disabled: {fix}"), *unread_quotas(facts)]
    rows = [row("credentials", True, f"Alibaba Cloud account {account}", None, account=account)]
    rows += [alicloud_quota(clients.ecs(facts.region), facts.region, need) for need in facts.needs]
    return rows


CLOUD_ROWS: dict[str, Callable[[StackFacts], list[dict[str, Any]]]] = {"aws": aws_rows, "alicloud": alicloud_rows}


def check(stack: str | None) -> dict[str, Any]:
    """The whole document: the rows, and the stack's facts when one is named."""
    facts = stack_facts(stack) if stack else None
    rows = pulumi_rows()
    if facts is None:
        rows.append(row("credentials", None, "no stack named: the cloud's credentials and quota are not checked",
                        "gpulease check STACK"))
    else:
        rows += CLOUD_ROWS[facts.cloud](facts)
    return {"stack": stack, "cloud": facts.cloud if facts else None, "region": facts.region if facts else None,
            "needs": [{"instanceType": n.instance_type, "vcpus": n.vcpus, "market": n.market} for n in facts.needs]
            if facts else [], "checks": rows, "ready": all(r["ok"] is not False for r in rows)}
