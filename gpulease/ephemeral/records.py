"""The instance's records in the bucket (``ready.json``, ``verify.json``, ``heartbeat.json``), read strictly.

A record is used only when it is what the instance writes: a JSON object at most ``MAX_DEPTH`` levels deep, its
verdict a real ``true``/``false`` (never the text ``"false"``, a null or a missing key, which would read as
"ready" or "passed" to a loose check), ``failed`` a list of texts, and the fields a screen shows of the types it
shows them as. Anything else is *unreadable*, with one line saying what is wrong
(``verify.json: "passed" is the text 'false', not true or false``); nothing downstream guesses.

The ephemeral channel (``wait_ready``/``wait_verify``) and the live commands (``status``, ``logs``) read through
this one module (the live layer sits above this one), so both take the same records the same way."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from gpulease.core.inputfile import MAX_DEPTH, too_deep

VERDICTS = {"ready": "ready", "verify": "passed"}
"""The record kinds with a verdict, and the key it is under."""


class RecordError(ValueError):
    """A record that is not what the instance writes: its message is the one line to show."""


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"{str(value).lower()}"
    if isinstance(value, str):
        return f"the text {value[:40]!r}" + ("…" if len(value) > 40 else "")
    if isinstance(value, (int, float)):
        return f"the number {value!r}"[:60]
    return "a list" if isinstance(value, list) else "an object" if isinstance(value, dict) else type(value).__name__


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _texts(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _check_common(file: str, doc: dict[str, Any]) -> None:
    for key in ("instanceId", "time"):
        if doc.get(key) is not None and not isinstance(doc[key], str):
            raise RecordError(f"{file}: {key!r} is {_kind(doc[key])}, not a text")
    checks = doc.get("checks")
    if checks is not None:
        if not isinstance(checks, dict) or not all(isinstance(c, dict) for c in checks.values()):
            raise RecordError(f"{file}: 'checks' is not an object of check objects")
        for name, check in checks.items():
            if check.get("ok") is not None and not isinstance(check["ok"], bool):
                raise RecordError(f"{file}: check {name[:40]!r} has 'ok' {_kind(check['ok'])}, not true, false or null")


def _check_verdict(file: str, doc: dict[str, Any], key: str) -> None:
    if key not in doc:
        raise RecordError(f"{file}: no {key!r} (true or false)")
    if not isinstance(doc[key], bool):
        raise RecordError(f"{file}: {key!r} is {_kind(doc[key])}, not true or false")
    if "failed" in doc and not _texts(doc["failed"]):
        raise RecordError(f"{file}: 'failed' is {_kind(doc['failed'])}, not a list of check names")


def _check_ready(file: str, doc: dict[str, Any]) -> None:
    _check_verdict(file, doc, "ready")
    _check_common(file, doc)


def _check_verify(file: str, doc: dict[str, Any]) -> None:
    _check_verdict(file, doc, "passed")
    _check_common(file, doc)
    gpu = doc.get("gpu")
    if gpu is not None:
        if not isinstance(gpu, dict):
            raise RecordError(f"{file}: 'gpu' is {_kind(gpu)}, not an object")
        for key in ("peakMemoryMib", "memoryTotalMib"):
            if gpu.get(key) is not None and not _number(gpu[key]):
                raise RecordError(f"{file}: 'gpu.{key}' is {_kind(gpu[key])}, not a number")
    for key in ("stepResumed", "checkpointStep"):
        if doc.get(key) is not None and not (isinstance(doc[key], int) and not isinstance(doc[key], bool)):
            raise RecordError(f"{file}: {key!r} is {_kind(doc[key])}, not a whole number")


def _check_heartbeat(file: str, doc: dict[str, Any]) -> None:
    _check_common(file, doc)
    gpus = doc.get("gpus")
    if gpus is not None:
        if not isinstance(gpus, list) or not all(isinstance(g, dict) for g in gpus):
            raise RecordError(f"{file}: 'gpus' is {_kind(gpus)}, not a list of GPU objects")
        for i, g in enumerate(gpus):
            for key in ("utilizationPercent", "memoryUsedMib"):
                if not _number(g.get(key)):
                    raise RecordError(f"{file}: 'gpus[{i}].{key}' is {_kind(g.get(key))}, not a number")
            if g.get("memoryTotalMib") is not None and not _number(g["memoryTotalMib"]):
                raise RecordError(f"{file}: 'gpus[{i}].memoryTotalMib' is {_kind(g['memoryTotalMib'])}, not a number")
    for key in ("gpuError", "lastSync", "deadline"):
        if doc.get(key) is not None and not isinstance(doc[key], str):
            raise RecordError(f"{file}: {key!r} is {_kind(doc[key])}, not a text")
    if doc.get("syncFailures") is not None and not (isinstance(doc["syncFailures"], int)
                                                    and not isinstance(doc["syncFailures"], bool)):
        raise RecordError(f"{file}: 'syncFailures' is {_kind(doc['syncFailures'])}, not a whole number")
    newest = doc.get("newestCheckpoint")
    if newest is not None and not (isinstance(newest, dict) and isinstance(newest.get("path"), str)
                                   and _number(newest.get("ageMinutes"))):
        raise RecordError(f"{file}: 'newestCheckpoint' is not an object with a text 'path' and a number 'ageMinutes'")
    spend = doc.get("spend")
    if spend is not None:
        if not isinstance(spend, dict):
            raise RecordError(f"{file}: 'spend' is {_kind(spend)}, not an object")
        for key in ("usdAtMost", "hours", "maxHourlyUsd"):
            if not _number(spend.get(key)):
                raise RecordError(f"{file}: 'spend.{key}' is {_kind(spend.get(key))}, not a number")
        if spend.get("percent") is not None and not _number(spend["percent"]):
            raise RecordError(f"{file}: 'spend.percent' is {_kind(spend['percent'])}, not a number")


CHECKS: dict[str, Callable[[str, dict[str, Any]], None]] = {
    "ready": _check_ready, "verify": _check_verify, "heartbeat": _check_heartbeat,
}


def json_object(kind: str, body: bytes | str) -> dict[str, Any]:
    """The JSON object ``<kind>.json`` holds (at most ``MAX_DEPTH`` levels), its fields not yet checked (whose
    instance it is can be asked first); ``RecordError`` when it is none."""
    file = f"{kind}.json"
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        raise RecordError(f"{file} is not JSON") from None
    if not isinstance(data, dict):
        raise RecordError(f"{file} is not a JSON object")
    if too_deep(data):
        raise RecordError(f"{file} nests deeper than {MAX_DEPTH} levels")
    return data


def check(kind: str, doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` when its fields are what the instance writes; ``RecordError`` (one line) when not. Kinds without a
    check here (``manifest``) pass as they are."""
    found = CHECKS.get(kind)
    if found is not None:
        found(f"{kind}.json", doc)
    return doc


def parse(kind: str, body: bytes | str) -> dict[str, Any]:
    """The record ``<kind>.json`` holds, checked; ``RecordError`` (one line) when it is not what the instance
    writes."""
    return check(kind, json_object(kind, body))


def read(kind: str, body: bytes | str) -> dict[str, Any]:
    """``parse``, with an unreadable record as ``{"unreadable": "<the line>"}`` (what the screens show)."""
    try:
        return parse(kind, body)
    except RecordError as exc:
        return {"unreadable": str(exc)}
