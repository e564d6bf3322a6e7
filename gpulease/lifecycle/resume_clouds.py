"""The stack's instances as each cloud shows them, and how each cloud starts a stopped one again.

One shape per cloud (``Fleet``): ``find(stack)`` lists the managed instances tagged with the stack (any state but
gone), ``start(ids)`` starts the stopped ones. Both are bounded: a few pages at most, the SDKs' own timeouts and
retries (botocore's standard mode; ``AlicloudClients``' retry options).

- Alibaba Cloud: ``DescribeInstances`` filtered by the ``gpulease:stack`` and ``gpulease:managed-by`` tags, then
  ``StartInstance`` per instance: "You can restart the instance to restore the instance data" after a reclaim stopped
  it in economical mode (https://www.alibabacloud.com/help/en/ecs/user-guide/preemptible-instance-data-retention-and-data-recovery-after-interrupt-reclamation);
  the start may fail while the zone has no stock (``components/alicloud/spot_recovery.py``).
- AWS: ``DescribeInstances`` with tag filters, then ``StartInstances``. A spot instance EC2 stopped on an
  interruption is never started from here: "Only Amazon EC2 can restart an interrupted stopped Spot Instance"; it
  restarts it when capacity returns, for a persistent request
  (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/interruption-behavior.html). Such an instance is told apart
  by its state reason ``Server.SpotInstanceShutdown`` (the EC2 ``StateReason`` codes:
  https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_StateReason.html). Its request is then read
  (``DescribeSpotInstanceRequests`` by the instance's ``SpotInstanceRequestId``): once it is ``closed``,
  ``cancelled`` or ``failed``, or its ``ValidUntil`` has passed, EC2 no longer starts the instance ("Amazon EC2
  restarts the stopped instance" is said of a persistent request only; the request states:
  https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/spot-request-status.html).
- Alibaba Cloud marks a preemptible instance that is being reclaimed with ``OperationLocks.LockReason``
  ``Recycling`` ("recycling: the lock of a preemptible instance pending release", the ``OperationLocks`` data
  type: https://www.alibabacloud.com/help/doc-detail/25632.htm; "If LockReason is Recycling, the spot instance is
  interrupted and pending release", "Detect and handle spot instance interruptions",
  https://www.alibabacloud.com/help/en/ecs/user-guide/best-practices-for-preemptible-instances/). A stopped
  instance without it was stopped by something else (the watchdog's own ``StopInstance`` after a refused release,
  at its deadline, idle or budget end; a person): ``reclaimed`` is False and ``resume`` does not start it. Both
  documents describe the lock of an instance pending release; that it stays on an instance a reclaim stopped in
  economical mode (``SpotInterruptionBehavior`` ``Stop``) is not documented and cannot be verified without a
  cloud; an instance without it is refused (fail closed), never started. The other fields DescribeInstances
  documents for a stopped instance do not tell a reclaim from the watchdog's stop: ``StoppedMode`` is
  ``StopCharging`` after either (the watchdog stops with ``StoppedMode=StopCharging``, and a reclaim in ``Stop`` mode
  stops "in economical mode": pulumi_alicloud ``InstanceArgs.spot_interruption_behavior``), and
  ``SpotInterruptionBehavior`` is the instance's setting, not what happened. They are shown in the refusal
  (``stop_detail``), never taken as a reclaim.

Every SDK error of a listing or a start (throttling after the SDK's retries, a 5xx, an endpoint that cannot be
reached) is one ``ResumeCloudError`` line; a missing credential is left to the CLI's own one-line handler.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from gpulease.core import clock
from gpulease.core import vocabulary as v

MAX_PAGES = 5
"""A stack has at most a few dozen instances (a sweep, a cluster): five pages of 100 are far more; a listing that
goes on past them is refused rather than followed."""
PAGE_SIZE = 100

SPOT_INTERRUPTION_STOP = "Server.SpotInstanceShutdown"
"""EC2's state reason of a spot instance it stopped on an interruption (API_StateReason)."""
REQUEST_ENDED_STATES = ("closed", "cancelled", "failed")
"""Spot request states after which EC2 starts no instance for the request (spot-request-status.html)."""
RECLAIM_LOCK = "recycling"
"""ECS ``OperationLocks.LockReason`` of a preemptible instance being reclaimed (compared case-insensitively)."""


class ResumeCloudError(RuntimeError):
    """A listing that does not end, or a cloud answer that cannot be read: nothing is started."""


@dataclass(frozen=True)
class Found:
    id: str
    state: str
    """pending, running, stopping, stopped, starting (both clouds' states, lower case)."""
    tags: dict[str, str]
    cloud_restarts: bool = False
    """The cloud itself starts it again (an interrupted AWS spot instance of a persistent request)."""
    request_end: str | None = None
    """AWS: an interrupted instance whose spot request has ended: ``"sir-... cancelled at ..."`` (EC2 will not
    start it again)."""
    reclaimed: bool | None = None
    """Alibaba Cloud: whether the cloud shows the instance as reclaimed (None: the cloud does not say)."""
    request_id: str | None = None
    """AWS: the spot request of a spot instance (``SpotInstanceRequestId``)."""
    stop_detail: str | None = None
    """Alibaba Cloud: ``StoppedMode`` and ``SpotInterruptionBehavior`` as DescribeInstances shows them (shown only)."""

    @property
    def experiment(self) -> str:
        return self.tags.get(v.TAG_EXPERIMENT, "")

    @property
    def expires_at(self) -> str | None:
        return self.tags.get(v.TAG_EXPIRES_AT) or None


class Fleet(Protocol):
    def find(self, stack: str) -> list[Found]: ...

    def start(self, ids: list[str]) -> None: ...


def _text(exc: BaseException) -> str:
    """The cloud's error code and message (botocore's ``Error``, Tea's ``code``/``message``) on one line."""
    error = (getattr(exc, "response", None) or {}).get("Error") or {}
    code = error.get("Code") or getattr(exc, "code", None)
    text = " ".join(str(error.get("Message") or getattr(exc, "message", None) or exc).split())
    return (f"{code}: {text}" if code and str(code) not in text else text)[:300]


@contextlib.contextmanager
def cloud_call(what: str, errors: tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]) -> Iterator[None]:
    """The SDK's ``errors[0]`` raised inside (but not ``errors[1]``: a missing credential, a value the SDK refuses
    before any call, which the CLI reports as the user's) become one ``ResumeCloudError`` line naming the call."""
    caught, passed = errors
    try:
        yield
    except caught as exc:
        if isinstance(exc, passed):
            raise
        raise ResumeCloudError(f"{what} failed: {_text(exc)}; nothing more was changed; run it again later") from None


def _aws_errors() -> tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]:
    from botocore import exceptions as be

    return ((be.ClientError, be.BotoCoreError),
            (be.NoCredentialsError, be.PartialCredentialsError, be.CredentialRetrievalError, be.NoRegionError,
             be.ProfileNotFound, be.ParamValidationError))


def _ali_errors() -> tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]:
    from darabonba.exceptions import RetryError, UnretryableException
    from Tea.exceptions import TeaException

    return (TeaException, RetryError, UnretryableException), ()


def _tags(pairs: Any, key: str, value: str) -> dict[str, str]:
    return {str(p.get(key)): str(p.get(value, "")) for p in pairs or [] if isinstance(p, dict) and p.get(key)}


# --- AWS ---------------------------------------------------------------------------------------------------------


class AwsFleet:
    def __init__(self, ec2: Any):
        self.ec2 = ec2

    def find(self, stack: str) -> list[Found]:
        with cloud_call(f"DescribeInstances for stack {stack!r}", _aws_errors()):
            found = self._find(stack)
        ended = self._ended_requests([f for f in found if f.cloud_restarts])
        return [dataclasses.replace(f, request_end=ended[f.id]) if f.id in ended else f for f in found]

    def _ended_requests(self, interrupted: list[Found]) -> dict[str, str]:
        """Per interrupted instance whose spot request has ended: what ended it, and when."""
        ids = {f.request_id: f.id for f in interrupted if f.request_id}
        if not ids:
            return {}
        with cloud_call("DescribeSpotInstanceRequests", _aws_errors()):
            page = self.ec2.describe_spot_instance_requests(SpotInstanceRequestIds=sorted(ids))
        now = clock.utcnow()
        out: dict[str, str] = {}
        for req in page.get("SpotInstanceRequests") or []:
            iid = ids.get(req.get("SpotInstanceRequestId"))
            if iid is None:
                continue
            state, status = str(req.get("State") or ""), req.get("Status") or {}
            until = req.get("ValidUntil")
            when = status.get("UpdateTime")
            stamp = v.rfc3339(when) if isinstance(when, datetime) else "an unknown time"
            if state in REQUEST_ENDED_STATES:
                out[iid] = f"{req['SpotInstanceRequestId']} {state} ({status.get('Code') or 'no status code'}) at {stamp}"
            elif isinstance(until, datetime) and until <= now:
                out[iid] = f"{req['SpotInstanceRequestId']} valid only until {v.rfc3339(until)}"
        return out

    def _find(self, stack: str) -> list[Found]:
        filters = [
            {"Name": f"tag:{v.TAG_STACK}", "Values": [stack]},
            {"Name": f"tag:{v.TAG_MANAGED_BY}", "Values": [v.MANAGED_BY_VALUE]},
            {"Name": "instance-state-name", "Values": ["pending", "running", "stopping", "stopped"]},
        ]
        found: list[Found] = []
        token: str | None = None
        for _ in range(MAX_PAGES):
            page = self.ec2.describe_instances(Filters=filters, MaxResults=PAGE_SIZE, **({"NextToken": token} if token else {}))
            for reservation in page.get("Reservations", []):
                for item in reservation.get("Instances", []):
                    reason = (item.get("StateReason") or {}).get("Code", "")
                    found.append(Found(
                        id=item["InstanceId"], state=item["State"]["Name"], tags=_tags(item.get("Tags"), "Key", "Value"),
                        cloud_restarts=item.get("InstanceLifecycle") == "spot" and reason == SPOT_INTERRUPTION_STOP,
                        request_id=str(item["SpotInstanceRequestId"]) if item.get("SpotInstanceRequestId") else None,
                    ))
            token = page.get("NextToken")
            if not token:
                return found
        raise ResumeCloudError(f"DescribeInstances for stack {stack!r} went on past {MAX_PAGES} pages")

    def start(self, ids: list[str]) -> None:
        with cloud_call(f"StartInstances of {', '.join(ids)}", _aws_errors()):
            self.ec2.start_instances(InstanceIds=ids)


def aws_fleet(region: str) -> AwsFleet:
    import boto3
    from botocore.config import Config

    from gpulease.live.clients import TIMEOUTS

    return AwsFleet(boto3.client("ec2", region_name=region, config=Config(**TIMEOUTS)))


# --- Alibaba Cloud -----------------------------------------------------------------------------------------------

ALICLOUD_STATES = {"Pending": "pending", "Starting": "starting", "Running": "running", "Stopping": "stopping",
                   "Stopped": "stopped"}


class AlicloudFleet:
    def __init__(self, clients: Any, region: str):
        self.clients, self.region = clients, region

    def find(self, stack: str) -> list[Found]:
        from alibabacloud_ecs20140526 import models as ecs

        tag = [ecs.DescribeInstancesRequestTag(key=v.TAG_STACK, value=stack),
               ecs.DescribeInstancesRequestTag(key=v.TAG_MANAGED_BY, value=v.MANAGED_BY_VALUE)]
        request = ecs.DescribeInstancesRequest(region_id=self.region, tag=tag, max_results=PAGE_SIZE)
        found: list[Found] = []
        for _ in range(MAX_PAGES):
            with cloud_call(f"DescribeInstances for stack {stack!r}", _ali_errors()):
                body = self.clients.ecs(self.region).describe_instances(request).body.to_map()
            for item in (body.get("Instances") or {}).get("Instance") or []:
                state = ALICLOUD_STATES.get(str(item.get("Status")))
                if state is None:
                    raise ResumeCloudError(f"instance {item.get('InstanceId')}: status {item.get('Status')!r} is not one "
                                           "DescribeInstances documents")
                locks = (item.get("OperationLocks") or {}).get("LockReason") or []
                reclaimed = any(isinstance(lock, dict) and str(lock.get("LockReason", "")).lower() == RECLAIM_LOCK
                                for lock in locks)
                found.append(Found(id=item["InstanceId"], state=state, reclaimed=reclaimed,
                                   tags=_tags((item.get("Tags") or {}).get("Tag"), "TagKey", "TagValue"),
                                   stop_detail=_stop_detail(item)))
            token = body.get("NextToken")
            if not token:
                return found
            request.next_token = token
        raise ResumeCloudError(f"DescribeInstances for stack {stack!r} went on past {MAX_PAGES} pages")

    def start(self, ids: list[str]) -> None:
        from alibabacloud_ecs20140526 import models as ecs

        for instance_id in ids:
            with cloud_call(f"StartInstance of {instance_id}", _ali_errors()):
                self.clients.ecs(self.region).start_instance(ecs.StartInstanceRequest(instance_id=instance_id))


STOP_FIELDS = ("StoppedMode", "SpotInterruptionBehavior")


def _stop_detail(item: dict[str, Any]) -> str | None:
    """``StoppedMode=StopCharging, SpotInterruptionBehavior=Stop`` (the fields present, each value a short word of
    letters, digits and hyphens; anything else is shown as unreadable)."""
    parts = []
    for key in STOP_FIELDS:
        value = item.get(key)
        if value is None or value == "":
            continue
        text = str(value)
        shown = text if len(text) <= 40 and text.replace("-", "").isascii() and text.replace("-", "").isalnum() \
            else "(unreadable)"
        parts.append(f"{key}={shown}")
    return ", ".join(parts) or None


def alicloud_fleet(region: str) -> AlicloudFleet:
    from gpulease.inventory.alicloud_clients import AlicloudClients

    clients = AlicloudClients()
    clients.check_credentials()  # no usable key: one line before any call
    return AlicloudFleet(clients, region)


FLEETS: dict[str, Callable[[str], Fleet]] = {"aws": aws_fleet, "alicloud": alicloud_fleet}
"""How ``resume`` reaches each cloud (tests point these at moto and the Alibaba Cloud stub)."""
