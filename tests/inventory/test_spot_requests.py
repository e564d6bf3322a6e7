"""Spot requests in ``gpulease ls`` and ``gpulease reap``, against moto's HTTP server: persistent requests, requests
judged by their own tags or their instance's, the orphaned request (its instance gone), cancel before terminate.

moto creates requests through RequestSpotInstances only: it models neither a persistent request made by
RunInstances' ``InstanceMarketOptions`` nor the states EC2 moves one through (a reclaim's
``instance-stopped-no-capacity``, a request ``open`` again after its instance is gone). Those fields are set on
moto's own request objects (the server runs in this process) to the values the botocore model defines
(``SpotInstanceState``: open | active | closed | cancelled | failed | disabled; ``SpotInstanceStatus.Code``), and
each test says which.
"""

from __future__ import annotations

import json
from typing import Any

from moto.backends import get_backend

from gpulease.cli import main
from gpulease.core.vocabulary import TAG_EXPIRES_AT, TAG_MANAGED_BY, rfc3339
from gpulease.inventory.acting import DONE, FAILED
from gpulease.inventory.collect import collect_region
from gpulease.inventory.decide import CANCEL, KEEP, TERMINATE, ReapSettings
from gpulease.inventory.reaper import sweep
from tests.support.inventory import (
    ACCOUNT,
    FUTURE,
    IMAGE,
    NOW,
    PAST,
    REGION,
    ZONE,
    Faults,
    address,
    spec,
    state,
    tag_list,
    tags,
    volume,
)


def request(ec2: Any, values: dict[str, str] | None, *, kind: str = "persistent", behaviour: str = "stop",
            instance_tags: dict[str, str] | None = None) -> tuple[str, str]:
    """A spot request (tagged with ``values``, or untagged) and its instance (tagged with ``instance_tags``)."""
    answer = ec2.request_spot_instances(
        InstanceCount=1,
        Type=kind,
        InstanceInterruptionBehavior=behaviour,
        LaunchSpecification={"ImageId": IMAGE, "InstanceType": "g5.xlarge", "Placement": {"AvailabilityZone": ZONE}},
        **({"TagSpecifications": spec("spot-instances-request", values)} if values else {}),
    )
    raw = answer["SpotInstanceRequests"][0]
    if instance_tags:
        ec2.create_tags(Resources=[raw["InstanceId"]], Tags=tag_list(instance_tags))
    return raw["SpotInstanceRequestId"], raw["InstanceId"]


def moto_request(request_id: str) -> Any:
    return get_backend("ec2")[ACCOUNT][REGION].spot_instance_requests[request_id]


def reclaimed(ec2: Any, request_id: str, instance_id: str) -> None:
    """What a reclaim leaves: the instance stopped, the request ``open`` again ("If the request is persistent, the
    request is opened again after your Spot Instance is interrupted") with a reclaim's status code
    (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/spot-request-status.html). moto does neither, so both are
    set on moto's request."""
    ec2.stop_instances(InstanceIds=[instance_id])
    moto_request(request_id).state = "open"
    moto_request(request_id)._status_code = "instance-stopped-no-capacity"


def orphan(ec2: Any, request_id: str, instance_id: str) -> None:
    """The instance terminated and the persistent request open again (EC2 does so; moto keeps it active)."""
    ec2.terminate_instances(InstanceIds=[instance_id])
    moto_request(request_id).state = "open"
    moto_request(request_id)._status_code = "pending-fulfillment"


def test_listing_judges_each_request_by_its_own_tags_else_its_instances(aws):
    ec2 = aws.client("ec2")
    own = tags(expires=FUTURE)
    tagged, _ = request(ec2, own, instance_tags=own)
    untagged, by_instance = request(ec2, None, instance_tags=tags(expires=FUTURE))
    foreign, _ = request(ec2, None, instance_tags=tags(managed=False))
    foreign_one_time, _ = request(ec2, None, kind="one-time", behaviour="terminate", instance_tags=tags(managed=False))
    # Its own tags say someone else manages it: its instance's managed tag does not make it ours.
    claimed, _ = request(ec2, {**tags(), TAG_MANAGED_BY: "someone-else"}, instance_tags=tags())

    inv = collect_region(aws.clients(), REGION, buckets=False)

    assert inv.errors == []
    found = {r.id: r for r in inv.spot_requests}
    assert set(found) == {tagged, untagged, foreign, claimed}  # an unmanaged one-time request is not listed
    assert foreign_one_time not in found
    assert {rid: r.managed_by_tags_of for rid, r in found.items()} == {
        tagged: "request", untagged: "instance", foreign: None, claimed: None}
    assert found[untagged].deciding_tags[TAG_EXPIRES_AT] == rfc3339(FUTURE)
    assert (found[untagged].instance_id, found[untagged].instance_state) == (by_instance, "running")
    assert (found[tagged].request_type, found[tagged].interruption, found[tagged].status_code) == (
        "persistent", "stop", "fulfilled")
    assert not any(r.orphaned for r in found.values())


def test_a_persistent_request_whose_instance_is_gone_is_listed_first_and_flagged(aws, capsys):
    ec2 = aws.client("ec2")
    live, _ = request(ec2, tags(expires=FUTURE), instance_tags=tags(expires=FUTURE))
    lost, lost_instance = request(ec2, tags(expires=FUTURE), instance_tags=tags(expires=FUTURE))
    orphan(ec2, lost, lost_instance)

    inv = collect_region(aws.clients(), REGION, buckets=False)
    assert [(r.id, r.orphaned, r.instance_state) for r in inv.spot_requests] == [
        (lost, True, "terminated"), (live, False, "running")]

    assert main(["ls", "--region", REGION, "--json", "--no-buckets"]) == 0
    out = json.loads(capsys.readouterr().out)
    first = out["resources"][0]
    assert (first["id"], first["kind"], first["state"], first["instanceGone"]) == (lost, "spot-request", "open", True)
    assert (first["requestType"], first["statusCode"], first["instanceId"], first["instanceState"]) == (
        "persistent", "pending-fulfillment", lost_instance, "terminated")
    assert (first["managed"], first["managedBy"]) == (True, "request")
    assert out["orphanedSpotRequests"] == [lost]

    assert main(["ls", "--region", REGION, "--no-buckets"]) == 0
    table = capsys.readouterr().out
    assert f"warning: 1 persistent spot request(s) whose instance is gone will launch new instances: {lost} " \
           f"({REGION}, open, managed)" in table
    assert table.index(lost) < table.index(live)


def test_ls_prices_a_stopped_instance_at_its_volumes_and_address(aws, capsys):
    ec2 = aws.client("ec2")
    values = tags(expires=FUTURE)
    sir, inst = request(ec2, values, instance_tags=values)
    data = ec2.create_volume(AvailabilityZone=ZONE, Size=200, VolumeType="gp3", Iops=3000, Throughput=125,
                             TagSpecifications=spec("volume", values))["VolumeId"]
    ec2.attach_volume(VolumeId=data, InstanceId=inst, Device="/dev/sdf")
    address(ec2, values, associate_with=inst)
    volume(ec2, values)  # managed, not attached to it: not its cost
    address(ec2, values)  # nor is an address nobody holds
    reclaimed(ec2, sir, inst)

    assert main(["ls", "--region", REGION, "--json", "--no-buckets"]) == 0
    rows = {r["id"]: r for r in json.loads(capsys.readouterr().out)["resources"]}
    # 200 GB gp3 at $0.08/GB-month (3,000 IOPS and 125 MB/s are included) over 730 h, plus $0.005/h for the
    # Elastic IP, and moto's untagged 8 GB gp2 root at $0.10 (every attached volume bills, tagged or not); no
    # instance hours.
    assert rows[inst]["hourlyUsd"] == round((200 * 0.08 + 8 * 0.10) / 730 + 0.005, 4) == 0.028
    assert (rows[inst]["stoppedBilling"], rows[inst]["stoppedByReclaim"]) == ("volumes and address only", True)
    assert rows[inst]["spendUsd"] is None
    assert (rows[sir]["state"], rows[sir]["statusCode"], rows[sir]["instanceGone"]) == (
        "open", "instance-stopped-no-capacity", False)
    # Open again, but its instance is only stopped: the request is kept while the instance holds it.
    report = sweep(aws.clients(), [REGION], ReapSettings(now=NOW, execute=True))
    assert {o.id: o.reason for o in report.outcomes if o.id == sir} == {sir: f"serves instance {inst}"}

    assert main(["ls", "--region", REGION, "--no-buckets"]) == 0
    table = capsys.readouterr().out
    assert "stopped instances $0.028/h (volumes and address only)" in table
    assert "stopped by a reclaim: volumes and address only" in table


def test_reap_cancels_a_managed_orphaned_request_past_its_deadline_even_untagged(aws):
    ec2 = aws.client("ec2")
    own, own_instance = request(ec2, tags(expires=PAST), instance_tags=tags(expires=PAST))
    orphan(ec2, own, own_instance)
    # No tags of its own: judged by its (terminated, still described) instance's tags.
    bare, bare_instance = request(ec2, None, instance_tags=tags(expires=PAST))
    orphan(ec2, bare, bare_instance)
    young, young_instance = request(ec2, tags(expires=FUTURE), instance_tags=tags(expires=FUTURE))
    orphan(ec2, young, young_instance)

    report = sweep(aws.clients(), [REGION], ReapSettings(now=NOW, execute=True))

    outcomes = {o.id: o for o in report.outcomes if o.kind == "spot-request"}
    assert {rid: (o.action, o.status) for rid, o in outcomes.items()} == {
        own: (CANCEL, DONE), bare: (CANCEL, DONE), young: (KEEP, "kept")}
    assert outcomes[own].reason.startswith(
        f"persistent, its instance {own_instance} is gone: it launches another; expired at ")
    assert outcomes[bare].reason.endswith("ago) (its instance's tags)")
    assert state(ec2).get(young) == "open"
    assert own not in state(ec2) and bare not in state(ec2)  # moto drops a cancelled request


def test_reap_never_cancels_an_unmanaged_request_nor_terminates_its_instance(aws):
    ec2 = aws.client("ec2")
    foreign, foreign_instance = request(ec2, None, instance_tags=tags(managed=False, expires=PAST))
    orphan(ec2, foreign, foreign_instance)
    # A managed, expired instance whose request says someone else manages it: cancelling that request is not
    # ours, and terminating the instance without the cancel would let the persistent request launch another.
    claimed, claimed_instance = request(ec2, {**tags(expires=PAST), TAG_MANAGED_BY: "someone-else"},
                                        instance_tags=tags(expires=PAST))
    before = state(ec2)

    report = sweep(aws.clients(), [REGION], ReapSettings(now=NOW, execute=True))

    assert state(ec2) == before
    outcomes = {o.id: o for o in report.outcomes}
    assert foreign not in outcomes and claimed not in outcomes
    assert outcomes[claimed_instance].action == KEEP
    assert outcomes[claimed_instance].reason.endswith(
        f"its spot request {claimed} is not managed, so it is not cancelled and the instance is not terminated")


def test_reap_cancels_a_reclaimed_instances_request_before_terminating_it(aws):
    ec2 = aws.client("ec2")
    values = tags(expires=PAST)
    sir, inst = request(ec2, values, instance_tags=values)
    reclaimed(ec2, sir, inst)
    clients = aws.clients(fresh=True)
    calls: list[str] = []
    clients.session.events.register("provide-client-params.ec2", lambda model, **_: calls.append(model.name))

    report = sweep(clients, [REGION], ReapSettings(now=NOW, execute=True))

    assert {o.id: (o.action, o.status) for o in report.outcomes if o.id in (sir, inst)} == {
        sir: (CANCEL, DONE), inst: (TERMINATE, DONE)}
    assert calls.index("CancelSpotInstanceRequests") < calls.index("TerminateInstances")
    assert state(ec2)[inst] == "terminated"


def test_an_instance_whose_request_could_not_be_cancelled_is_not_terminated(aws):
    ec2 = aws.client("ec2")
    values = tags(expires=PAST)
    sir, inst = request(ec2, values, instance_tags=values)
    clients = aws.clients(fresh=True, max_attempts=1)
    Faults({"CancelSpotInstanceRequests": (10, "UnauthorizedOperation", 403)}).install(clients)

    report = sweep(clients, [REGION], ReapSettings(now=NOW, execute=True))

    outcomes = {o.id: o for o in report.outcomes}
    assert (outcomes[sir].action, outcomes[sir].status) == (CANCEL, FAILED)
    assert (outcomes[inst].action, outcomes[inst].status) == (TERMINATE, FAILED)
    assert outcomes[inst].detail == (f"not terminated: cancelling its spot request {sir} failed; "
                                     "a later sweep cancels first, then terminates")
    assert state(ec2)[inst] == "running" and report.failed


def test_a_dry_run_only_says_it_would_cancel(aws):
    ec2 = aws.client("ec2")
    sir, inst = request(ec2, tags(expires=PAST), instance_tags=tags(expires=PAST))
    orphan(ec2, sir, inst)
    before = state(ec2)
    report = sweep(aws.clients(), [REGION], ReapSettings(now=NOW))
    assert {(o.id, o.action, o.status) for o in report.outcomes if o.id == sir} == {(sir, CANCEL, "would")}
    assert state(ec2) == before


def test_alibaba_cloud_fails_a_cancel_it_has_no_call_for_and_releases_nothing_it_held():
    """The hook for a cloud-side object that can start an instance after the deadline: until the Alibaba Cloud
    sweep has a cancel call for it, a CANCEL fails and holds its instance instead of being skipped."""
    from gpulease.inventory import alicloud_reaper
    from gpulease.inventory.decide import Decision
    from gpulease.inventory.resources import Instance, SpotRequest

    calls: list[str] = []

    class Api:
        def ecs(self, region: str) -> Any:
            return self

        vpc = ecs

        def delete_instances(self, request: Any) -> None:
            calls.extend(request.instance_id)

    held = Instance("i-held", "cn-hangzhou", "Stopped", "ecs.gn7i-c8g1.2xlarge", "spot", None, None, tags())
    free = Instance("i-free", "cn-hangzhou", "Stopped", "ecs.gn7i-c8g1.2xlarge", "spot", None, None, tags())
    decisions = [
        Decision(SpotRequest("sg-1", "cn-hangzhou", "active", "i-held", None, tags()), CANCEL, "expired"),
        Decision(held, TERMINATE, "expired"),
        Decision(free, TERMINATE, "expired"),
    ]
    outcomes = {o.id: o for o in alicloud_reaper.execute_region(
        Api(), "cn-hangzhou", decisions, ReapSettings(now=NOW, execute=True))}
    assert (outcomes["sg-1"].status, outcomes["sg-1"].detail) == (FAILED, "no cancel action on Alibaba Cloud")
    assert outcomes["i-held"].status == FAILED and calls == ["i-free"]


def test_the_calls_filters_and_paginator_are_those_of_botocores_ec2_model(aws):
    """botocore validates parameter names and types before sending; filter names are free strings there, so they
    are checked against the operation's own documentation in the model, and the paginator and page ceiling too."""
    import botocore.session

    model = botocore.session.get_session().get_service_model("ec2")
    requests_op = model.operation_model("DescribeSpotInstanceRequests")
    filters_doc = requests_op.input_shape.members["Filters"].documentation
    assert "<code>state</code>" in filters_doc
    assert set(model.shape_for("SpotInstanceState").enum) >= {"open", "active", "disabled"}
    assert "between 5 and 1000" in requests_op.documentation  # the MaxResults the listing pages with
    assert "<code>instance-id</code>" in model.operation_model("DescribeInstances").input_shape.members[
        "Filters"].documentation
    assert set(model.operation_model("CancelSpotInstanceRequests").input_shape.members) == {
        "DryRun", "SpotInstanceRequestIds"}
    ec2 = aws.client("ec2")
    assert ec2.can_paginate("describe_spot_instance_requests") and ec2.can_paginate("describe_instances")


def _instance_state(ec2: Any, instance: str) -> str:
    return ec2.describe_instances(InstanceIds=[instance])["Reservations"][0]["Instances"][0]["State"]["Name"]


def test_a_cancelled_managed_request_whose_untagged_instance_runs_is_a_leftover(aws, capsys):
    """What a re-opened persistent request launched before `down` cancelled it: the request is cancelled, its
    instance has no gpulease tags, so only the request finds it. Listed, and reaped by the request's tags past its
    deadline (moto drops a cancelled request from its listing, so the state is set on moto's record)."""
    ec2 = aws.client("ec2")
    old, old_instance = request(ec2, tags(expires=PAST))
    young, young_instance = request(ec2, tags(expires=FUTURE))
    for rid in (old, young):
        moto_request(rid).state = "cancelled"

    inv = collect_region(aws.clients(), REGION, buckets=False)
    found = {r.id: r for r in inv.spot_requests}
    assert {rid: (found[rid].state, found[rid].instance_id, found[rid].instance_state) for rid in (old, young)} == {
        old: ("cancelled", old_instance, "running"), young: ("cancelled", young_instance, "running")}

    report = sweep(aws.clients(), [REGION], ReapSettings(now=NOW, execute=True))
    outcomes = {o.id: o for o in report.outcomes}
    assert (outcomes[old_instance].action, outcomes[old_instance].status) == (TERMINATE, DONE)
    assert outcomes[old_instance].reason.startswith(f"leftover of cancelled managed spot request {old}, judged by its "
                                                    "tags: expired at ")
    assert outcomes[young_instance].action == KEEP
    assert outcomes[old].reason.startswith(f"cancelled, but its instance {old_instance} (no gpulease tags, launched by "
                                           "it) still runs: a leftover; expired at ")
    assert (_instance_state(ec2, old_instance), _instance_state(ec2, young_instance)) in (
        ("shutting-down", "running"), ("terminated", "running"))
