"""moto's HTTP server for the inventory and reaper tests, fleet builders, fault injection and state snapshots.

boto3 talks to a real HTTP server on 127.0.0.1 (``ThreadedMotoServer``, port 0); dummy credentials and
``AWS_ENDPOINT_URL`` make sure nothing can reach a real account even if a client forgets its endpoint.
"""

from __future__ import annotations

import itertools
import json
import logging
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse
from moto.server import ThreadedMotoServer

from gpulease.core.vocabulary import (
    MANAGED_BY_VALUE,
    TAG_EXPERIMENT,
    TAG_EXPIRES_AT,
    TAG_MANAGED_BY,
    TAG_OWNER,
    TAG_RETAIN,
    TAG_RETAIN_UNTIL,
    rfc3339,
)
from gpulease.inventory.aws import ALLOWED_ACCOUNTS_ENV, REGIONS_ENV, AwsClients
from tests.support.clock import live_now

REGION = "us-east-1"
ZONE = "us-east-1a"
IMAGE = "ami-12c6146b"
ACCOUNT = "123456789012"  # moto's default account

NOW = live_now()  # moto stamps what it creates with the real time
PAST = NOW - timedelta(days=2)
FUTURE = NOW + timedelta(days=2)


@dataclass
class MotoAws:
    url: str
    shared: boto3.Session | None = None

    def reset(self) -> None:
        request = urllib.request.Request(f"{self.url}/moto-api/reset", method="POST", data=b"")
        with urllib.request.urlopen(request, timeout=30) as answer:
            assert answer.status == 200

    def client(self, service: str, region: str = REGION) -> Any:
        return boto3.client(service, region_name=region, endpoint_url=self.url)

    def clients(self, *, fresh: bool = False, **kwargs: Any) -> AwsClients:
        """Clients on one shared session (loading service models is the slow part), or on a ``fresh`` session
        for tests that hook its events."""
        if fresh:
            return AwsClients(endpoint_url=self.url, **kwargs)
        if self.shared is None:
            self.shared = boto3.Session()
        return AwsClients(endpoint_url=self.url, session=self.shared, **kwargs)


@pytest.fixture(scope="session")
def moto_server() -> Iterator[MotoAws]:
    with pytest.MonkeyPatch.context() as mp:
        for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", REGIONS_ENV, ALLOWED_ACCOUNTS_ENV):
            mp.delenv(name, raising=False)
        mp.setenv("AWS_ACCESS_KEY_ID", "testing")
        mp.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        mp.setenv("AWS_DEFAULT_REGION", REGION)
        mp.setenv("AWS_CONFIG_FILE", "/nonexistent/gpulease-test-aws-config")
        mp.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/gpulease-test-aws-credentials")
        mp.setenv("AWS_EC2_METADATA_DISABLED", "true")
        logging.getLogger("werkzeug").setLevel(logging.WARNING)
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        host, port = server.get_host_and_port()
        url = f"http://{host}:{port}"
        # Clients built without an explicit endpoint (the CLI's) go to the same server.
        mp.setenv("AWS_ENDPOINT_URL", url)
        try:
            yield MotoAws(url=url)
        finally:
            server.stop()


# moto's built-in images bring ~1,300 snapshots that make every DescribeSnapshots slow; the tests launch from an
# image id moto accepts without them. Set only while a test runs: other tests may want moto's defaults.
NO_DEFAULT_IMAGES = "MOTO_EC2_LOAD_DEFAULT_AMIS"


@contextmanager
def empty_account(server: MotoAws) -> Iterator[MotoAws]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(NO_DEFAULT_IMAGES, "false")
        server.reset()
        yield server


@pytest.fixture
def aws(moto_server: MotoAws) -> Iterator[MotoAws]:
    """The server with an empty account: every test starts from a reset."""
    with empty_account(moto_server) as server:
        yield server


# --- building fleets ----------------------------------------------------------------------------------------

_serial = itertools.count()


def tags(
    *,
    managed: bool = True,
    expires: datetime | None = PAST,
    retain: bool | None = None,
    extra: dict[str, str] | None = None,
) -> dict[str, str]:
    out = {TAG_OWNER: "ada", TAG_EXPERIMENT: f"exp-{next(_serial)}"}
    if managed:
        out[TAG_MANAGED_BY] = MANAGED_BY_VALUE
    else:
        out["team"] = "someone-else"
    if expires is not None:
        out[TAG_EXPIRES_AT] = rfc3339(expires)
    if retain is not None:
        out[TAG_RETAIN] = "true" if retain else "false"
    out.update(extra or {})
    return out


def tag_list(values: dict[str, str]) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in values.items()]


def spec(resource_type: str, values: dict[str, str]) -> list[dict]:
    return [{"ResourceType": resource_type, "Tags": tag_list(values)}]


def launch(ec2: Any, values: dict[str, str], *, instance_type: str = "g5.xlarge", count: int = 1) -> list[str]:
    answer = ec2.run_instances(
        ImageId=IMAGE,
        MinCount=count,
        MaxCount=count,
        InstanceType=instance_type,
        Placement={"AvailabilityZone": ZONE},
        TagSpecifications=spec("instance", values),
    )
    return [i["InstanceId"] for i in answer["Instances"]]


def launch_spot(ec2: Any, values: dict[str, str], *, instance_type: str = "g5.xlarge") -> tuple[str, str]:
    """A spot request and its instance. moto neither tags the instance from the request nor sets the instance's
    SpotInstanceRequestId, so the instance is tagged here and linked through the request's InstanceId."""
    answer = ec2.request_spot_instances(
        InstanceCount=1,
        LaunchSpecification={"ImageId": IMAGE, "InstanceType": instance_type, "Placement": {"AvailabilityZone": ZONE}},
        TagSpecifications=spec("spot-instances-request", values),
    )
    request = answer["SpotInstanceRequests"][0]
    instance_id = request["InstanceId"]
    ec2.create_tags(Resources=[instance_id], Tags=tag_list(values))
    return request["SpotInstanceRequestId"], instance_id


def volume(ec2: Any, values: dict[str, str], *, attach_to: str | None = None, device: str = "/dev/sdf") -> str:
    vol = ec2.create_volume(AvailabilityZone=ZONE, Size=8, VolumeType="gp3", TagSpecifications=spec("volume", values))
    if attach_to:
        ec2.attach_volume(VolumeId=vol["VolumeId"], InstanceId=attach_to, Device=device)
    return vol["VolumeId"]


def address(ec2: Any, values: dict[str, str], *, associate_with: str | None = None) -> str:
    alloc = ec2.allocate_address(Domain="vpc", TagSpecifications=spec("elastic-ip", values))
    if associate_with:
        ec2.associate_address(AllocationId=alloc["AllocationId"], InstanceId=associate_with)
    return alloc["AllocationId"]


def snapshot(ec2: Any, values: dict[str, str], *, of_volume: str | None = None) -> str:
    source = of_volume or ec2.create_volume(AvailabilityZone=ZONE, Size=1)["VolumeId"]
    snap = ec2.create_snapshot(VolumeId=source, TagSpecifications=spec("snapshot", values))
    return snap["SnapshotId"]


def retain_until(moment: datetime) -> dict[str, str]:
    return {TAG_RETAIN_UNTIL: rfc3339(moment)}


# --- observing state ---------------------------------------------------------------------------------------


def state(ec2: Any) -> dict[str, str]:
    """Every instance, spot request, data volume, address and snapshot of the account (gpulease's or not) -> state."""
    out: dict[str, str] = {}
    root_disks: set[str] = set()
    for reservation in ec2.describe_instances()["Reservations"]:
        for inst in reservation["Instances"]:
            out[inst["InstanceId"]] = inst["State"]["Name"]
            for mapping in inst.get("BlockDeviceMappings", []):
                if mapping.get("DeviceName") == inst.get("RootDeviceName"):
                    root_disks.add(mapping["Ebs"]["VolumeId"])
    for req in ec2.describe_spot_instance_requests()["SpotInstanceRequests"]:
        out[req["SpotInstanceRequestId"]] = req["State"]
    for vol in ec2.describe_volumes()["Volumes"]:
        # Root disks go with their instance (DeleteOnTermination); that is EC2's doing, not the sweep's.
        if vol["VolumeId"] not in root_disks:
            out[vol["VolumeId"]] = vol["State"]
    for addr in ec2.describe_addresses()["Addresses"]:
        out[addr["AllocationId"]] = "associated" if addr.get("AssociationId") else "allocated"
    # Only the tests' own snapshots (all carry an owner tag): moto's built-in image snapshots are slow to list.
    mine = [{"Name": "tag-key", "Values": [TAG_OWNER]}]
    for snap in ec2.describe_snapshots(OwnerIds=["self"], Filters=mine)["Snapshots"]:
        out[snap["SnapshotId"]] = snap["State"]
    return out


REMOVED_STATES = {"shutting-down", "terminated", "cancelled", "closed", "deleted", "gone"}


def changed(before: dict[str, str], after: dict[str, str]) -> set[str]:
    """Ids the sweep removed: gone, or now terminated/cancelled (moto drops a cancelled spot request, hence "gone").

    A volume or address that merely came loose when its instance was terminated is not counted: that is EC2
    detaching it, and it still exists. New ids (final snapshots) are not changes either."""
    return {
        rid
        for rid, was in before.items()
        if was not in REMOVED_STATES and after.get(rid, "gone") in REMOVED_STATES
    }


# --- fault injection ---------------------------------------------------------------------------------------


class _Raw:
    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._body


@dataclass
class Faults:
    """Answers the first ``count`` calls of each named operation with an error before they reach the server."""

    plan: dict[str, tuple[int, str, int]]  # operation -> (count, error code, HTTP status)
    seen: dict[str, int] = field(default_factory=dict)
    injected: dict[str, int] = field(default_factory=dict)

    def __call__(self, request: Any, event_name: str, **_: Any) -> AWSResponse | None:
        operation = event_name.rsplit(".", 1)[-1]
        if operation not in self.plan:
            return None
        count, code, status = self.plan[operation]
        self.seen[operation] = self.seen.get(operation, 0) + 1
        if self.seen[operation] > count:
            return None
        self.injected[operation] = self.injected.get(operation, 0) + 1
        body = (
            f"<Response><Errors><Error><Code>{code}</Code><Message>injected</Message></Error></Errors>"
            f"<RequestID>{json.dumps(operation)}</RequestID></Response>"
        ).encode()
        return AWSResponse(request.url, status, {"Content-Type": "text/xml"}, _Raw(body))

    def install(self, clients: AwsClients, service: str = "ec2") -> None:
        clients.session.events.register(f"before-send.{service}", self)
