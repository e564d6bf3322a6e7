"""A managed persistent request past its deadline that an untagged instance holds (what a re-opened request
launches: RunInstances' tags are not on it), and a stopped instance's figure in ``gpulease ls``: every attached
volume counts, tagged or not, and an unknown figure keeps the total unknown. Against moto's HTTP server."""

from __future__ import annotations

import json

from moto.backends import get_backend

from gpulease.cli import main
from gpulease.inventory.acting import DONE
from gpulease.inventory.decide import CANCEL, TERMINATE, ReapSettings
from gpulease.inventory.reaper import sweep
from tests.inventory.test_spot_requests import reclaimed, request
from tests.support.inventory import ACCOUNT, FUTURE, NOW, PAST, REGION, ZONE, spec, state, tags


def test_an_expired_managed_request_held_by_an_untagged_instance_is_cancelled_then_the_instance_terminated(aws):
    ec2 = aws.client("ec2")
    sir, inst = request(ec2, tags(expires=PAST), instance_tags=None)
    report = sweep(aws.clients(), [REGION], ReapSettings(now=NOW, execute=True))
    done = [(o.kind, o.id, o.action, o.status) for o in report.outcomes]
    assert done == [("spot-request", sir, CANCEL, DONE), ("instance", inst, TERMINATE, DONE)]
    live = ec2.describe_spot_instance_requests(Filters=[{"Name": "state", "Values": ["open", "active", "disabled"]}])
    assert live["SpotInstanceRequests"] == [] and state(ec2)[inst] == "terminated"  # moto forgets a cancelled one


def test_a_managed_request_held_by_an_untagged_instance_is_kept_before_its_deadline(aws):
    ec2 = aws.client("ec2")
    sir, inst = request(ec2, tags(expires=FUTURE), instance_tags=None)
    report = sweep(aws.clients(), [REGION], ReapSettings(now=NOW, execute=True))
    assert [(o.id, o.action) for o in report.outcomes] == [(sir, "keep")]
    assert state(ec2)[inst] == "running"


def test_an_unmanaged_request_and_its_untagged_instance_are_left_alone(aws):
    ec2 = aws.client("ec2")
    sir, inst = request(ec2, None, instance_tags=None)
    sweep(aws.clients(), [REGION], ReapSettings(now=NOW, execute=True))
    assert state(ec2)[sir] == "active" and state(ec2)[inst] == "running"


def test_a_stopped_instance_counts_every_attached_volume_tagged_or_not(aws, capsys):
    ec2 = aws.client("ec2")
    values = tags(expires=FUTURE)
    sir, inst = request(ec2, values, instance_tags=values)
    untagged = ec2.create_volume(AvailabilityZone=ZONE, Size=2000, VolumeType="gp3")["VolumeId"]
    ec2.attach_volume(VolumeId=untagged, InstanceId=inst, Device="/dev/sdj")
    tagged = ec2.create_volume(AvailabilityZone=ZONE, Size=500, VolumeType="gp3",
                               TagSpecifications=spec("volume", values))["VolumeId"]
    ec2.attach_volume(VolumeId=tagged, InstanceId=inst, Device="/dev/sdf")
    reclaimed(ec2, sir, inst)
    capsys.readouterr()
    assert main(["ls", "--region", REGION, "--json", "--no-buckets"]) == 0
    rows = {r["id"]: r for r in json.loads(capsys.readouterr().out)["resources"]}
    # gp3 at $0.08/GB-month in us-east-1 (the catalog) for 2,500 GB, and gp2 at $0.10 for the 8 GB root moto
    # gives it (untagged too), over 730 h.
    assert rows[inst]["hourlyUsd"] == round(((2000 + 500) * 0.08 + 8 * 0.10) / 730, 4)


def test_one_stopped_instance_of_unknown_cost_makes_the_stopped_total_unknown(aws, capsys):
    ec2 = aws.client("ec2")
    values = tags(expires=FUTURE)
    sir, inst = request(ec2, values, instance_tags=values)
    odd = ec2.create_volume(AvailabilityZone=ZONE, Size=100, VolumeType="gp3",
                            TagSpecifications=spec("volume", values))["VolumeId"]
    ec2.attach_volume(VolumeId=odd, InstanceId=inst, Device="/dev/sdf")
    reclaimed(ec2, sir, inst)
    get_backend("ec2")[ACCOUNT][REGION].volumes[odd].volume_type = "gp9"  # a type no catalog prices
    capsys.readouterr()
    assert main(["ls", "--region", REGION, "--no-buckets"]) == 0
    total = capsys.readouterr().out.splitlines()
    assert any("stopped instances unknown (volumes and address only)" in line for line in total), total
