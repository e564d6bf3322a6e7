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
  https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_StateReason.html).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from gpulease.core import vocabulary as v

MAX_PAGES = 5
"""A stack has at most a few dozen instances (a sweep, a cluster): five pages of 100 are far more; a listing that
goes on past them is refused rather than followed."""
PAGE_SIZE = 100

SPOT_INTERRUPTION_STOP = "Server.SpotInstanceShutdown"
"""EC2's state reason of a spot instance it stopped on an interruption (API_StateReason)."""


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

    @property
    def experiment(self) -> str:
        return self.tags.get(v.TAG_EXPERIMENT, "")

    @property
    def expires_at(self) -> str | None:
        return self.tags.get(v.TAG_EXPIRES_AT) or None


class Fleet(Protocol):
    def find(self, stack: str) -> list[Found]: ...

    def start(self, ids: list[str]) -> None: ...


def _tags(pairs: Any, key: str, value: str) -> dict[str, str]:
    return {str(p.get(key)): str(p.get(value, "")) for p in pairs or [] if isinstance(p, dict) and p.get(key)}


# --- AWS ---------------------------------------------------------------------------------------------------------


class AwsFleet:
    def __init__(self, ec2: Any):
        self.ec2 = ec2

    def find(self, stack: str) -> list[Found]:
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
                    ))
            token = page.get("NextToken")
            if not token:
                return found
        raise ResumeCloudError(f"DescribeInstances for stack {stack!r} went on past {MAX_PAGES} pages")

    def start(self, ids: list[str]) -> None:
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
            body = self.clients.ecs(self.region).describe_instances(request).body.to_map()
            for item in (body.get("Instances") or {}).get("Instance") or []:
                state = ALICLOUD_STATES.get(str(item.get("Status")))
                if state is None:
                    raise ResumeCloudError(f"instance {item.get('InstanceId')}: status {item.get('Status')!r} is not one "
                                           "DescribeInstances documents")
                found.append(Found(id=item["InstanceId"], state=state,
                                   tags=_tags((item.get("Tags") or {}).get("Tag"), "TagKey", "TagValue")))
            token = body.get("NextToken")
            if not token:
                return found
            request.next_token = token
        raise ResumeCloudError(f"DescribeInstances for stack {stack!r} went on past {MAX_PAGES} pages")

    def start(self, ids: list[str]) -> None:
        from alibabacloud_ecs20140526 import models as ecs

        for instance_id in ids:
            self.clients.ecs(self.region).start_instance(ecs.StartInstanceRequest(instance_id=instance_id))


def alicloud_fleet(region: str) -> AlicloudFleet:
    from gpulease.inventory.alicloud_clients import AlicloudClients

    clients = AlicloudClients()
    clients.check_credentials()  # no usable key: one line before any call
    return AlicloudFleet(clients, region)


FLEETS: dict[str, Callable[[str], Fleet]] = {"aws": aws_fleet, "alicloud": alicloud_fleet}
"""How ``resume`` reaches each cloud (tests point these at moto and the Alibaba Cloud stub)."""
