"""The status document on one screen (rich): a two-column table, one row per question a user asks of a run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from gpulease.core.money import usd, usd_per_hour


def _ago(minutes: float | None) -> str:
    if minutes is None:
        return "?"
    if minutes < 90:
        return f"{minutes:.0f} min ago"
    return f"{minutes / 60:.1f} h ago"


def _left(minutes: float | None) -> str:
    if minutes is None:
        return ""
    if minutes < 0:
        return " (passed)"
    return f" ({int(minutes // 60)} h {int(minutes % 60)} min left)"


def _spend(doc: dict[str, Any]) -> str:
    spend = doc["spend"]
    budget, estimate, aws = spend.get("budgetUsd"), spend.get("estimate"), spend.get("awsBudget")
    parts = []
    if estimate:
        share = f" ({estimate['percent']:g}% of {usd(budget)})" if budget and estimate.get("percent") is not None else ""
        parts.append(f"at most {usd(estimate['usdAtMost'])}{share} by the watchdog's estimate "
                     f"({estimate['hours']:g} h x {usd_per_hour(estimate['maxHourlyUsd'])})")
    if aws:
        parts.append(f"AWS Budgets: actual {usd(aws['actualUsd'])}, forecast {usd(aws['forecastUsd'])} of "
                     f"{usd(aws['limitUsd'])}")
    if not parts:
        parts.append(f"no estimate yet (budget {usd(budget)})" if budget else "unknown")
    return "; ".join(parts)


def _gpus(doc: dict[str, Any]) -> str:
    beat = doc.get("heartbeat")
    if not beat:
        return "no heartbeat yet"
    if beat.get("unreadable"):
        return f"unreadable: {beat['unreadable']}"
    if beat.get("gpuError"):
        return f"{beat['gpuError']} (heartbeat {_ago(beat['ageMinutes'])})"
    rows = [f"GPU{i}: {g['utilizationPercent']:g}%, {g['memoryUsedMib']:g}/{g.get('memoryTotalMib') or '?'} MiB"
            for i, g in enumerate(beat["gpus"])]
    return f"{'; '.join(rows) or 'none listed'} (heartbeat {_ago(beat['ageMinutes'])})"


def _checkpoint(doc: dict[str, Any]) -> str:
    ck = doc.get("checkpoint")
    if not ck:
        beat = doc.get("heartbeat") or {}
        return f"unknown (heartbeat unreadable: {beat['unreadable']})" if beat.get("unreadable") else \
            "unknown (no heartbeat yet)"
    sync = f"last sync {_ago(ck['lastSyncAgeMinutes'])}" if ck.get("lastSync") else "no periodic sync yet"
    newest = ck.get("newest")
    if newest:
        sync += f"; newest file {newest['path']} ({newest['ageMinutes']:g} min old at the heartbeat)"
    if ck.get("syncFailures"):
        sync += f"; {ck['syncFailures']} failed sync(s) since"
    return sync


def _checks(doc: dict[str, Any]) -> str:
    ready, verify = doc.get("ready"), doc.get("verify")
    # The records were read strictly (``ephemeral.records``): a verdict is a real true/false, ``failed`` texts.
    if not ready:
        parts = ["not ready yet"]
    elif ready.get("unreadable"):
        parts = [f"ready unreadable: {ready['unreadable']}"]
    elif ready.get("ready") is True:
        parts = ["READY"]
    else:
        parts = [f"NOT READY ({', '.join(ready.get('failed') or []) or 'unknown checks'})"]
    if verify and verify.get("unreadable"):
        parts.append(f"verify unreadable: {verify['unreadable']}")
    elif verify:
        if verify.get("passed") is True:
            gpu = verify.get("gpu") or {}
            parts.append(f"verify PASSED (peak {gpu.get('peakMemoryMib', 0):g}/{gpu.get('memoryTotalMib') or '?'} MiB"
                         + (f", resumed at step {verify['stepResumed']}" if verify.get("stepResumed") is not None else "")
                         + ")")
        else:
            parts.append(f"verify FAILED ({', '.join(verify.get('failed') or []) or 'unknown checks'})")
    return "; ".join(parts)


def _manifest(doc: dict[str, Any]) -> str:
    m = doc.get("manifest")
    if not m:
        return "none yet (written when the job starts)"
    if m.get("unreadable"):
        return f"unreadable: {m['unreadable']}"
    code = f"commit {m['commit'][:12]}{' (dirty)' if m.get('dirty') else ''}" if m.get("commit") else "no git commit"
    versions = ", ".join(f"{k} {m[k]}" for k in ("torch", "cuda", "driver") if m.get(k))
    params = f"; params {m['params']}" if m.get("params") else ""
    return f"{m.get('job')} at {m.get('time')}: {code}; {versions or 'versions unknown'}; image {m.get('imageId')}{params}"


def _duration(seconds: int | None) -> str:
    if seconds is None:
        return "?"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"


INTERRUPTIONS_SHOWN = 3


def interruptions_line(found: list[dict[str, Any]], left_out: int = 0) -> str:
    """``2: stopped 2026-...Z for 3 h 0 min, resumed 2026-...Z from step 1200; ...``, the latest few; a new
    instance on the same disk says so: ``new instance after i-...: stopped ... for ..., resumed ...``."""
    parts = []
    for item in found[-INTERRUPTIONS_SHOWN:]:
        step = item.get("resumedFromStep")
        if item.get("inconsistent"):
            parts.append(f"inconsistent record ({item['inconsistent']})")
            continue
        if item.get("kind") == "new-instance" and item.get("stoppedAt") is None:
            stop = "when it stopped is not known"
        else:
            stop = f"stopped {item.get('stoppedAt') or '?'} for {_duration(item.get('stoppedSeconds'))}"
        if item.get("kind") == "new-instance":
            stop = f"new instance after {item.get('previousInstance') or 'an earlier one'}: {stop}"
        parts.append(f"{stop}, resumed {item.get('resumedAt') or '?'} " + (
            f"from step {step}" if step is not None else "(no checkpoint step reported)"))
    earlier = f" (latest {INTERRUPTIONS_SHOWN} shown)" if len(found) + left_out > INTERRUPTIONS_SHOWN else ""
    return f"{len(found) + left_out}{earlier}: " + "; ".join(parts)


def spot_request_line(found: dict[str, Any]) -> str:
    if found.get("state") == "none":
        return f"none to cancel at {found.get('time')} ({found.get('detail')})"
    if found.get("cancelled"):
        return f"{found.get('requestId')} cancelled at {found.get('time')} ({found.get('cause')})"
    return f"NOT cancelled at {found.get('time')} ({found.get('cause')}): {found.get('detail')}"


def _gib(value: Any) -> str:
    return f"{value / 2**30:,.1f} GiB" if isinstance(value, (int, float)) and not isinstance(value, bool) else "?"


def disks_line(disks: list[dict[str, Any]]) -> str:
    """``/data 12.0 GiB free of 200.0 GiB (6%) LOW``, one per mount."""
    parts = []
    for d in disks:
        share = f" ({d['freePercent']:g}%)" if d.get("freePercent") is not None else ""
        parts.append(f"{d['mount']} {_gib(d.get('freeBytes'))} free of {_gib(d.get('totalBytes'))}{share}"
                     + (" LOW: a checkpoint may not fit" if d.get("low") else ""))
    return "; ".join(parts)


def starved_line(starved: dict[str, Any] | None) -> str | None:
    if not starved:
        return None
    return (f"STARVED since {starved.get('since')}: GPUs busy at {starved.get('meanUtilizationPercent')}% on average, "
            f"below {starved.get('thresholdPercent')}% (not idle: the input pipeline cannot keep up?)")


def _node(n: dict[str, Any]) -> str:
    if n.get("error"):
        return f"{n.get('instanceId')}: {n['error']}"
    ready = {True: "ready", False: "NOT READY", None: "not ready yet"}.get(n.get("ready"), "ready record unreadable")
    gpus = ", ".join(f"{g.get('utilizationPercent', '?')}%" for g in n.get("gpus") or []) or n.get("gpuError") or "no GPUs"
    beat = _ago(n.get("heartbeatAgeMinutes")) if n.get("heartbeatAgeMinutes") is not None else "no heartbeat"
    extra = [x for x in (disks_line([d for d in n.get("disks") or [] if d.get("low")]), starved_line(n.get("gpuStarved")))
             if x]
    return f"{n.get('instanceId')} {n.get('privateIp') or ''} {ready}; GPU {gpus}; heartbeat {beat}" + (
        f"; {'; '.join(extra)}" if extra else "")


def print_status(doc: dict[str, Any], console: Console, shown: Callable[[str], str] = str) -> None:
    """The table; every value passes through ``shown`` (the CLI's ``printable``: text the instance wrote, made
    safe for a terminal) before it is printed."""
    inst = doc["instance"]
    table = Table(show_header=False, box=None, pad_edge=False, title=Text(shown(f"{doc['stack']} / {doc['experiment']} "
                  f"({doc['cloud']} {doc.get('region') or ''})".rstrip())), title_justify="left")
    table.add_column(style="bold")
    table.add_column(overflow="fold")

    def row(label: str, value: str) -> None:  # plain text: a value with [brackets] is not rich markup
        table.add_row(label, Text(shown(value)))

    if doc.get("phase"):
        row("phase", str(doc["phase"]))
    row("instance", f"{inst['id']} {inst.get('state') or ''} {inst.get('type') or ''} "
                  f"{inst.get('market') or ''}".replace("  ", " ").strip())
    row("deadline", f"{doc.get('deadline') or '?'}{_left(doc.get('minutesLeft'))}")
    row("spend", _spend(doc))
    row("gpu", _gpus(doc))
    beat = doc.get("heartbeat") or {}
    if beat.get("disks"):
        row("disks", disks_line(beat["disks"]))
    starved = starved_line(beat.get("gpuStarved"))
    if starved:
        row("loader", starved)
    for node in doc.get("nodes") or []:
        row(f"node {node['rank']}", _node(node))
    row("checkpoints", _checkpoint(doc))
    row("checks", _checks(doc))
    row("manifest", _manifest(doc))
    if doc.get("interruptions"):
        row("interruptions", interruptions_line(doc["interruptions"], doc.get("interruptionsLeftOut") or 0))
    if doc.get("spotRequest"):
        row("spot request", spot_request_line(doc["spotRequest"]))
    for note in doc.get("notes") or []:
        row("note", note)
    console.print(table)
