"""This instance's own spot request, cancelled before the watchdog ends it (standard library only, Python 3.10).

With ``spot_recover`` on AWS the instance is launched by a *persistent* spot request whose interruption behaviour
is ``stop``: a reclaim stops the instance and EC2 starts it again when capacity returns. When the watchdog itself
ends the experiment (the deadline, idle), the request must not outlive it: a shutdown from inside terminates the
instance (``instance_initiated_shutdown_behavior = terminate``), and a persistent request whose instance is
terminated opens again and launches a new one. So before the shutdown the watchdog asks EC2 for its own request
(``aws ec2 describe-instances --instance-ids <own id> --query
'Reservations[0].Instances[0].SpotInstanceRequestId' --output text``) and cancels it (``aws ec2
cancel-spot-instance-requests --spot-instance-request-ids <id>``), which does not terminate the running instance.
Both calls go through the AWS CLI with the instance role only (``cloud_access.storage_command``: the metadata
endpoint given, the tokenless fallback and every other credential source taken away), each bounded, retried with
a pause until the ``spot_cancel`` bound (``bounds``) runs out. The outcome is returned for the state and the run
manifest; the watchdog shuts down on it only when the request is cancelled (or there is none), or at the deadline
(once the stack's cloud-side schedule has certainly fired, and only when ``request_state`` reads the request as
ended). ``powering_off`` tells a power-off from a reboot on
SIGTERM (a power-off from inside terminates the instance, and the request would open again).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from typing import Any

try:
    from instance import bounds
    from instance import cloud_access as ca
except ImportError:  # on the instance: the other tools are installed next to this file
    import bounds  # type: ignore[no-redef]
    import cloud_access as ca  # type: ignore[no-redef]

QUERY = "Reservations[0].Instances[0].SpotInstanceRequestId"
DESCRIBE = ["{aws}", "ec2", "describe-instances", "--region", "{region}", "--instance-ids", "{instance}",
            "--query", QUERY, "--output", "text"]
CANCEL = ["{aws}", "ec2", "cancel-spot-instance-requests", "--region", "{region}",
          "--spot-instance-request-ids", "{request}", "--output", "json"]
STATE_BY_ID = ["{aws}", "ec2", "describe-spot-instance-requests", "--region", "{region}",
               "--spot-instance-request-ids", "{request}", "--output", "json"]
STATE_BY_INSTANCE = ["{aws}", "ec2", "describe-spot-instance-requests", "--region", "{region}",
                     "--filters", "Name=instance-id,Values={instance}", "--output", "json"]
ENDED = ("cancelled", "closed", "completed")
"""The states of a request that launches nothing more (EC2 API Reference, SpotInstanceRequest.State: open | active
| closed | cancelled | failed; CancelledSpotInstanceRequest.State adds completed). ``failed`` is not among them: a
request that failed on its parameters is not documented as never re-opening, so it is not taken as ended."""
# A spot request id as EC2 writes it (sir-ab12cd34); anything else the CLI prints is not one.
REQUEST_ID = re.compile(r"^sir-[0-9a-z]{1,32}\Z")
RETRY_PAUSE_SECONDS = bounds.value("spot_cancel_pause")


def _same(seconds: float) -> float:
    return seconds


def _tail(text: str) -> str:
    return " ".join(text.split())[-300:]


def cancel_own_request(settings: dict[str, Any], instance_id: str | None, metadata: ca.Metadata,
                       credentials: ca.RoleCredentials | None, *, real: Callable[[float], float] = _same,
                       virtual: Callable[[float], float] = _same,
                       sleep: Callable[[float], None] = time.sleep, known: str | None = None) -> dict[str, Any]:
    """Find and cancel the spot request of ``instance_id``; the outcome ``{requestId, cancelled, state, detail,
    attempts}`` (``cancelled`` True only when EC2 answered that the request is cancelled, closed or completed;
    ``state`` "none" only when the CLI printed ``None``/``null`` for the field: an empty or any other answer is not
    cancelled, retried). ``known``: the request id recorded before; another one named now is recorded
    (``otherRequestId``, ``suspicious``).

    The whole is bounded by ``spot_cancel``, each call by ``aws_call`` (``bounds``), in the watchdog's seconds:
    ``real`` / ``virtual`` convert them to and from real ones (its accelerated clock in tests)."""
    outcome: dict[str, Any] = {"requestId": None, "cancelled": False, "state": None, "detail": "", "attempts": 0}
    if known is not None:
        outcome["knownRequestId"] = known
    if not instance_id:
        outcome["detail"] = "this instance's id is not known: its spot request cannot be looked up"
        return outcome
    budget = bounds.value("spot_cancel", settings)
    call_bound = bounds.value("aws_call", settings)
    fill = {"aws": str(settings.get("aws_command") or "aws"), "instance": instance_id}
    spent = 0.0
    while True:
        outcome["attempts"] += 1
        started = time.monotonic()
        done, detail = _attempt(settings, fill, outcome, metadata, credentials,
                                real(max(1.0, min(call_bound, budget - spent))))
        spent += virtual(time.monotonic() - started)
        outcome["detail"] = detail
        if done:
            return outcome
        if spent + RETRY_PAUSE_SECONDS >= budget:
            outcome["detail"] = f"{detail}; gave up after {outcome['attempts']} attempt(s) within {budget:.0f} s"
            return outcome
        sleep(RETRY_PAUSE_SECONDS)
        spent += RETRY_PAUSE_SECONDS


def _attempt(settings: dict[str, Any], fill: dict[str, str], outcome: dict[str, Any], metadata: ca.Metadata,
             credentials: ca.RoleCredentials | None, timeout: float) -> tuple[bool, str]:
    """One try: (finished, what happened). Finished also when there is nothing to cancel."""
    if outcome["requestId"] is None:
        code, out, err = _aws(settings, DESCRIBE, fill, metadata, credentials, timeout)
        if code != 0:
            return False, f"describe-instances {_failed(code, err, timeout)}"
        found = out.strip()
        if found in ("None", "null"):  # the CLI's text for a field the answer does not have: no request
            outcome["state"] = "none"
            return True, f"instance {fill['instance']} has no spot request (on-demand, or launched without one)"
        if not REQUEST_ID.match(found):  # an empty answer too: not known, so not cancelled
            return False, f"describe-instances printed {_tail(found)!r}, not a spot request id"
        known = outcome.get("knownRequestId")
        if isinstance(known, str) and known != found:
            outcome["otherRequestId"] = known
            outcome["suspicious"] = (f"describe-instances names {found}, not {known} as recorded before: both "
                                     "are recorded; the one EC2 names for this instance is cancelled")
        outcome["requestId"] = found
    code, out, err = _aws(settings, CANCEL, {**fill, "request": outcome["requestId"]}, metadata, credentials, timeout)
    if code != 0:
        return False, f"cancel-spot-instance-requests {outcome['requestId']} {_failed(code, err, timeout)}"
    state = _cancelled_state(out, outcome["requestId"])
    outcome["state"] = state
    if state in ("cancelled", "closed", "completed"):
        outcome["cancelled"] = True
        return True, f"spot request {outcome['requestId']} is {state}: it launches nothing more"
    return False, f"cancel-spot-instance-requests {outcome['requestId']} answered state {state or 'unknown'}"


def request_state(settings: dict[str, Any], instance_id: str | None, request_id: str | None, metadata: ca.Metadata,
                  credentials: ca.RoleCredentials | None, timeout: float) -> tuple[bool, str]:
    """One read of this instance's spot request (``aws ec2 describe-spot-instance-requests``, by the request's id when
    known, else by the ``instance-id`` filter): (ended, what was read). Ended only when EC2 lists at least one request
    and every one listed is cancelled, closed or completed (``ENDED``); a failed call, an answer that is not JSON, an
    empty list or any other state is not ended (fail closed: no shutdown)."""
    if not request_id and not instance_id:
        return False, "neither this instance's id nor its spot request's is known: the request's state cannot be read"
    template = STATE_BY_ID if request_id else STATE_BY_INSTANCE
    fill = {"aws": str(settings.get("aws_command") or "aws"), "instance": instance_id or "",
            "request": request_id or ""}
    code, out, err = _aws(settings, template, fill, metadata, credentials, timeout)
    what = f"describe-spot-instance-requests ({request_id or 'instance ' + str(instance_id)})"
    if code != 0:
        return False, f"{what} {_failed(code, err, timeout)}: the request's state is not known"
    try:
        answer = json.loads(out)
    except ValueError:
        return False, f"{what} printed {_tail(out)!r}, not JSON: the request's state is not known"
    listed = answer.get("SpotInstanceRequests") if isinstance(answer, dict) else None
    states = [item.get("State") for item in listed if isinstance(item, dict)] if isinstance(listed, list) else []
    if not states:
        return False, f"{what} lists no request: its state is not known"
    if all(state in ENDED for state in states):
        return True, f"{what}: {', '.join(map(str, states))}; it launches nothing more"
    return False, f"{what}: {', '.join(map(str, states))}, not ended"


POWER_OFF_UNITS = ("poweroff.target", "halt.target")
REBOOT_UNITS = ("reboot.target", "kexec.target", "soft-reboot.target")


def powering_off(argv: list[str], timeout: float) -> tuple[bool, str]:
    """Is the system powering off (True) rather than rebooting or stopping one service (False)? systemd queues a
    ``start`` job for poweroff.target / halt.target (reboot.target on a reboot) while the units stop, and
    ``systemctl list-jobs`` lists it (systemctl(1), list-jobs; systemd.special(7)). A query that fails or does not
    answer within ``timeout`` counts as a power-off: the request is cancelled rather than left to re-open."""
    code, out, err = ca.run_bounded_split(argv, timeout)
    if code != 0:
        return True, f"{' '.join(argv[:2])} {_failed(code, err, timeout)}; taken as a power-off"
    units = {fields[1] for fields in (line.split() for line in out.splitlines()) if len(fields) >= 2}
    power, reboot = units & set(POWER_OFF_UNITS), units & set(REBOOT_UNITS)
    if power:
        return True, f"{', '.join(sorted(power))} queued"
    return False, f"{', '.join(sorted(reboot))} queued" if reboot else "no poweroff.target or halt.target job queued"


def _failed(code: int | None, err: str, timeout: float) -> str:
    return f"did not answer within {timeout:.0f} s" if code is None else f"exited {code}: {_tail(err)}"


def _cancelled_state(out: str, request: str) -> str | None:
    """``CancelledSpotInstanceRequests[].State`` of ``request`` in the CLI's JSON answer (EC2 API Reference,
    CancelSpotInstanceRequests: active | open | closed | cancelled | completed)."""
    try:
        answer = json.loads(out)
    except ValueError:
        return None
    listed = answer.get("CancelledSpotInstanceRequests") if isinstance(answer, dict) else None
    for item in listed if isinstance(listed, list) else []:
        if isinstance(item, dict) and item.get("SpotInstanceRequestId") == request and isinstance(item.get("State"), str):
            return item["State"]
    return None


def _aws(settings: dict[str, Any], template: list[str], fill: dict[str, str], metadata: ca.Metadata,
         credentials: ca.RoleCredentials | None, timeout: float) -> tuple[int | None, str, str]:
    """One AWS CLI call with the role's credentials only (``storage_command``), bounded by ``timeout``."""
    try:
        call = ca.storage_command(list(template), fill, cloud="aws", region=str(settings.get("region") or ""),
                                  metadata=metadata, credentials=credentials)
    except (ca.CredentialsError, OSError) as exc:
        return 126, "", f"no credentials for the AWS CLI: {exc}"
    try:
        return ca.run_bounded_split(call.argv, timeout, env=call.env)
    finally:
        call.close()
