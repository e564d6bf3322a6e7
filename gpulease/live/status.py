"""``gpulease status``: one document about a running experiment, from what its instance reports in the bucket and,
where available, the cloud's own view.

From the control area (``components.image_bake.control_folder``: ``_gpulease/<prefix>control/`` at the bucket root,
outside the expiring checkpoint prefix; written by the instance to its ``control_uri`` setting):
``heartbeat.json`` (the watchdog, every few minutes: GPU utilisation and memory, the last checkpoint sync, the spend
estimate, the deadline it keeps), ``ready.json`` (the bootstrap), ``verify.json`` (the verification) and
``manifest.json`` (the run manifest, with each interruption of a spot instance stopped by a reclaim and started
again, and the end of its own spot request). A report whose ``instanceId`` is another instance's (an earlier run's, left
in a retained bucket) is set aside and named as such. From the cloud, on AWS: the instance's state and type (EC2
DescribeInstances) and the stack budget's actual and forecasted spend (AWS Budgets DescribeBudget). Alibaba Cloud:
the bucket alone (the heartbeat's age says whether the watchdog is alive).

A bucket that cannot be read at all (offline, no credentials, no such bucket) is one ``LiveError``; what the cloud
API cannot answer is noted in the document and the rest is still shown.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from components.image_bake import control_folder
from gpulease.core import vocabulary as v
from gpulease.core.budget_alert import budget_name
from gpulease.ephemeral import records
from gpulease.live import nodes
from gpulease.live.clients import Clients
from gpulease.live.target import LiveError, Target

CONTROL_FILES = ("heartbeat", "ready", "verify", "manifest")
LOW_DISK_PERCENT = 10.0
"""Below this much free space a disk is shown as low (a checkpoint of a 7B model is tens of GB)."""


def _minutes_since(stamp: Any, now: datetime) -> float | None:
    try:
        return round((now - v.parse_rfc3339(str(stamp))).total_seconds() / 60, 1)
    except ValueError:
        return None


def _problem(exc: Exception) -> str:
    """One line for a botocore error (or any other), without its traceback."""
    response = getattr(exc, "response", None)
    if isinstance(response, dict) and response.get("Error"):
        error = response["Error"]
        return f"{error.get('Code', 'error')}: {error.get('Message', '')}".strip().rstrip(":")
    return " ".join(str(exc).split())[:300] or type(exc).__name__


def shown_value(value: Any) -> str:
    """A value from a record named in a line: a text as it is (cut at 80), anything else as JSON would show it."""
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= 80 else text[:80] + "…"


def _unreadable(doc: Any) -> dict[str, Any] | None:
    return {"unreadable": doc["unreadable"]} if isinstance(doc, dict) and "unreadable" in doc else None


def read_control(target: Target, client: Any) -> dict[str, Any]:
    """The control files as objects (None where there is none yet); ``stale`` names those from another instance."""
    uri = target.checkpoint_uri
    if uri is None:
        raise LiveError(f"stack {target.stack!r}: experiment {target.experiment!r} keeps no checkpoint bucket, where "
                        "the instance reports its state; status needs one (ssh in instead)")
    bucket, _, prefix = uri.split("://", 1)[1].partition("/")
    prefix = prefix if not prefix or prefix.endswith("/") else prefix + "/"
    found: dict[str, Any] = {"stale": []}
    for name in CONTROL_FILES:
        key = f"{control_folder(prefix)}{name}.json"
        try:
            body = client.get_object(Bucket=bucket, Key=key)["Body"].read()
        except Exception as exc:
            code = (getattr(exc, "response", None) or {}).get("Error", {}).get("Code")
            if code in ("NoSuchKey", "404"):
                found[name] = None
                continue
            scheme = uri.split("://", 1)[0]
            raise LiveError(f"stack {target.stack!r}: cannot read {scheme}://{bucket}/{key}: {_problem(exc)}") from None
        try:
            doc = records.json_object(name, body)
            owner = doc.get("instanceId")
            if owner and target.instance_id and owner != target.instance_id:
                found["stale"].append(f"{name}.json is from instance {shown_value(owner)}, not {target.instance_id}")
                found[name] = None
                continue
            found[name] = records.check(name, doc)
        except records.RecordError as exc:
            found[name] = {"unreadable": str(exc)}
    return found


def cloud_view(target: Target, clients: Clients) -> dict[str, Any]:
    """The instance's state and the budget's spend, from the cloud's APIs (AWS); what they cannot answer is noted."""
    view: dict[str, Any] = {"instance": None, "budget": None, "notes": []}
    if clients.ec2 is not None and target.instance_id:
        try:
            found = clients.ec2.describe_instances(InstanceIds=[target.instance_id])
            instances = [i for r in found.get("Reservations", []) for i in r.get("Instances", [])]
            if instances:
                inst = instances[0]
                view["instance"] = {"state": inst.get("State", {}).get("Name"), "type": inst.get("InstanceType"),
                                    "launched": v.rfc3339(inst["LaunchTime"]) if inst.get("LaunchTime") else None}
        except Exception as exc:
            view["notes"].append(f"instance state not read: {_problem(exc)}")
    elif target.cloud == "alicloud":
        view["notes"].append("instance state not read on Alibaba Cloud: the heartbeat's age tells whether it runs")
    spec = target.spec
    if clients.budgets is not None and clients.sts is not None and spec is not None:
        name = budget_name(spec.project, target.stack)
        try:
            account = clients.sts.get_caller_identity()["Account"]
            budget = clients.budgets.describe_budget(AccountId=account, BudgetName=name)["Budget"]
            spend = budget.get("CalculatedSpend") or {}
            view["budget"] = {
                "name": name,
                "limitUsd": float(budget["BudgetLimit"]["Amount"]),
                "actualUsd": float((spend.get("ActualSpend") or {}).get("Amount", 0)),
                "forecastUsd": float((spend.get("ForecastedSpend") or {}).get("Amount", 0)),
            }
        except Exception as exc:
            view["notes"].append(f"AWS budget {name!r} not read: {_problem(exc)}")
    return view


def collect(target: Target, clients: Clients, now: datetime) -> dict[str, Any]:
    """The status document (what ``--json`` prints and the screen shows)."""
    control = read_control(target, clients.bucket)
    cloud = cloud_view(target, clients)
    bad = {name: _unreadable(control.get(name)) for name in CONTROL_FILES}
    beat = {} if bad["heartbeat"] else control.get("heartbeat") or {}
    manifest = {} if bad["manifest"] else control.get("manifest") or {}
    deadline = target.outputs.get("deadline") or beat.get("deadline")
    left = _minutes_since(deadline, now)
    spec = target.spec
    ready, verify = control.get("ready"), control.get("verify")
    return {
        "stack": target.stack,
        "experiment": target.experiment,
        "cloud": target.cloud,
        "region": target.region,
        "phase": target.outputs.get("phase"),
        "instance": {
            "id": target.instance_id,
            "type": (cloud["instance"] or {}).get("type") or target.outputs.get("instanceType"),
            "market": target.outputs.get("market"),
            "state": (cloud["instance"] or {}).get("state"),
        },
        "deadline": deadline,
        "minutesLeft": -left if left is not None else None,
        "spend": {
            "budgetUsd": spec.budget_usd if spec else (beat.get("spend") or {}).get("budgetUsd"),
            "estimate": beat.get("spend"),
            "awsBudget": cloud["budget"],
        },
        "heartbeat": {
            "time": beat.get("time"),
            "ageMinutes": _minutes_since(beat.get("time"), now),
            "gpus": beat.get("gpus") or [],
            "gpuError": beat.get("gpuError"),
            "disks": disk_view(beat.get("disks")),
            "gpuStarved": starved_view(beat.get("gpuStarved")),
        } if beat else bad["heartbeat"],
        "checkpoint": {
            "lastSync": beat.get("lastSync"),
            "lastSyncAgeMinutes": _minutes_since(beat.get("lastSync"), now),
            "newest": beat.get("newestCheckpoint"),
            "syncFailures": beat.get("syncFailures"),
        } if beat else None,
        "ready": bad["ready"] or ({"ready": ready.get("ready"), "failed": ready.get("failed") or [],
                                   "time": ready.get("time")} if ready else None),
        "verify": bad["verify"] or ({k: verify.get(k) for k in ("passed", "failed", "time", "stepResumed",
                                                                 "checkpointStep", "gpu", "seconds", "checks")}
                                    if verify else None),
        "manifest": bad["manifest"] or (_manifest_summary(manifest) if manifest else None),
        "interruptions": interruptions_view(manifest.get("interruptions"), beat.get("interruptions")),
        "interruptionsLeftOut": left_out(manifest.get("interruptions"), beat.get("interruptions")),
        "spotRequest": spot_request_view(manifest.get("spotRequest")),
        "nodes": node_views(target, clients, now) if len(nodes.listed(target)) > 1 else None,
        "notes": [*control["stale"], *cloud["notes"]],
    }


def disk_view(disks: Any) -> list[dict[str, Any]]:
    """The heartbeat's ``disks`` (``mount``, ``freeBytes``, ``totalBytes``, ``freePercent``), each marked ``low``
    below ``LOW_DISK_PERCENT`` free: a checkpoint that fills the disk fails half-written."""
    out = []
    for disk in disks if isinstance(disks, list) else []:
        if not isinstance(disk, dict) or not isinstance(disk.get("mount"), str):
            continue
        free = disk.get("freePercent")
        free = float(free) if isinstance(free, (int, float)) and not isinstance(free, bool) else None
        out.append({"mount": disk["mount"], "freeBytes": disk.get("freeBytes"), "totalBytes": disk.get("totalBytes"),
                    "freePercent": free, "low": free is not None and free < LOW_DISK_PERCENT})
    return out


def starved_view(starved: Any) -> dict[str, Any] | None:
    """The heartbeat's ``gpuStarved`` (``since``, ``meanUtilizationPercent``, ``thresholdPercent``) or None: GPUs busy
    below the threshold for long (a data loader that cannot keep up), which is not idle (idle is near 0 %)."""
    if not isinstance(starved, dict) or not starved.get("since"):
        return None
    return {k: starved.get(k) for k in ("since", "meanUtilizationPercent", "thresholdPercent")}


def node_views(target: Target, clients: Clients, now: datetime) -> list[dict[str, Any]]:
    """One line of facts per node of a cluster, from its own control area."""
    views = []
    for node in nodes.listed(target):
        rank = node["rank"]
        found = nodes.node_target(target, rank)
        try:
            control = read_control(found, clients.bucket)
        except LiveError as exc:
            views.append({"rank": rank, "instanceId": found.instance_id, "error": str(exc)})
            continue
        beat, ready = control.get("heartbeat") or {}, control.get("ready") or {}
        if "unreadable" in beat:
            beat = {}
        views.append({
            "rank": rank, "instanceId": found.instance_id, "privateIp": node.get("privateIp"),
            "heartbeatAgeMinutes": _minutes_since(beat.get("time"), now) if beat else None,
            "gpus": beat.get("gpus") or [], "gpuError": beat.get("gpuError"),
            "disks": disk_view(beat.get("disks")), "gpuStarved": starved_view(beat.get("gpuStarved")),
            "ready": "unreadable" if "unreadable" in ready else ready.get("ready") if ready else None,
        })
    return views


def _manifest_summary(manifest: dict[str, Any]) -> dict[str, Any]:
    code, software, params = manifest.get("code") or {}, manifest.get("software") or {}, manifest.get("params") or {}
    return {
        "time": manifest.get("time"),
        "job": manifest.get("job"),
        "commit": code.get("commit"),
        "dirty": code.get("dirty"),
        "imageId": (manifest.get("instance") or {}).get("imageId"),
        "imageFamily": (manifest.get("instance") or {}).get("imageFamily"),
        "torch": software.get("torch"),
        "cuda": software.get("cuda"),
        "driver": software.get("nvidiaDriver"),
        "params": params.get("path"),
        "paramsSha256": params.get("sha256"),
        "dataSources": len((manifest.get("data") or {}).get("sources") or []),
    }


INTERRUPTION_KEYS = ("kind", "stoppedAt", "resumedAt", "stoppedSeconds", "resumedFromStep", "previousInstance",
                     "inconsistent")
INTERRUPTION_KINDS = ("spot-reclaim", "new-instance")
"""``instance/manifest.py``: the same instance stopped and started again, or another instance on the same disk."""
INTERRUPTIONS_KEPT = 50
"""The latest interruptions the document carries: what the instance keeps in its heartbeat (``instance/heartbeat``);
a longer list (an old or tampered report) is cut to its latest ones, and ``interruptionsLeftOut`` says how many."""


def _count(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 1e12 else None


INTERRUPTION_TEXT_MAX = 64
"""The longest ``stoppedAt``/``resumedAt`` kept (an RFC 3339 time is 20 to 35 characters); longer is cut."""
INTERRUPTION_ID_MAX = 128
MAX_STOPPED_SECONDS = int(v.MAX_RUNTIME_HOURS_CAP * 3600)
"""A stop longer than the longest deadline the kit gives (168 h) cannot be one of its experiment's."""


def _text(value: Any, limit: int) -> str | None:
    return value[:limit] if isinstance(value, str) and value else None


def _moment(value: str | None) -> datetime | None:
    try:
        return v.parse_rfc3339(value) if value else None
    except ValueError:
        return None


def inconsistency(item: dict[str, Any], stopped_at: str | None, resumed_at: str | None) -> str | None:
    """Why an interruption record cannot be true, or None: a stop beyond the runtime cap or negative, or a resume
    before the stop."""
    seconds = item.get("stoppedSeconds")
    if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and seconds == seconds:
        if seconds < 0:
            return "a negative stopped time"
        if seconds > MAX_STOPPED_SECONDS:
            return f"stopped longer than {v.MAX_RUNTIME_HOURS_CAP:g} h, the longest runtime"
    stopped, resumed = _moment(stopped_at), _moment(resumed_at)
    if stopped is not None and resumed is not None and resumed < stopped:
        return "resumed before it stopped"
    return None


def interruptions_view(from_manifest: Any, from_heartbeat: Any) -> list[dict[str, Any]]:
    """Each stop of the instance and its start again: when it stopped, when it resumed, how long it was stopped,
    the step the job resumed from; for a new instance on the same disk (``kind: new-instance``) the one before it
    and when that one last wrote the job's files there (its ``stoppedAt``, unknown in older records). The heartbeat's
    list when it knows more (it is newer than the manifest, which is written when the job starts), else the
    manifest's; anything that is not such a record is left out. Every text is cut to a bounded length; a record that
    cannot be true (``inconsistency``) says why in ``inconsistent`` and carries no times."""
    lists = [found for found in (from_heartbeat, from_manifest) if isinstance(found, list)]
    chosen = max(lists, key=len) if lists else []
    out = []
    for item in chosen[-INTERRUPTIONS_KEPT:]:
        if not isinstance(item, dict):
            continue
        stopped_at = _text(item.get("stoppedAt"), INTERRUPTION_TEXT_MAX)
        resumed_at = _text(item.get("resumedAt"), INTERRUPTION_TEXT_MAX)
        wrong = inconsistency(item, stopped_at, resumed_at)
        out.append({"kind": item.get("kind") if item.get("kind") in INTERRUPTION_KINDS else None,
                    "stoppedAt": None if wrong else stopped_at,
                    "resumedAt": None if wrong else resumed_at,
                    "stoppedSeconds": None if wrong else _count(item.get("stoppedSeconds")),
                    "resumedFromStep": _count(item.get("resumedFromStep")),
                    "previousInstance": _text(item.get("previousInstance"), INTERRUPTION_ID_MAX),
                    "inconsistent": wrong})
    return out


def left_out(from_manifest: Any, from_heartbeat: Any) -> int:
    """How many interruptions ``interruptions_view`` leaves out beyond its ``INTERRUPTIONS_KEPT`` latest."""
    lengths = [len(found) for found in (from_heartbeat, from_manifest) if isinstance(found, list)]
    return max(0, max(lengths, default=0) - INTERRUPTIONS_KEPT)


def spot_request_view(found: Any) -> dict[str, Any] | None:
    """The watchdog's cancel of its own spot request at its own end (the run manifest's ``spotRequest``)."""
    if not isinstance(found, dict):
        return None
    return {"requestId": found.get("requestId") if isinstance(found.get("requestId"), str) else None,
            "cancelled": found.get("cancelled") is True,
            "state": found.get("state") if isinstance(found.get("state"), str) else None,
            "cause": found.get("cause") if isinstance(found.get("cause"), str) else None,
            "time": found.get("time") if isinstance(found.get("time"), str) else None,
            "detail": " ".join(str(found.get("detail") or "").split())[:300]}
