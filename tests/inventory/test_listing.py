"""``gpulease ls`` and the listing behind it, against moto's HTTP server."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from gpulease.cli import main
from gpulease.core.catalog import load_catalog
from gpulease.core.vocabulary import TAG_MANAGED_BY, TAG_RETAIN, rfc3339
from gpulease.inventory.collect import Instance, collect_region
from gpulease.inventory.pricing import hourly_price, spend_so_far
from tests.support.inventory import (
    FUTURE,
    NOW,
    PAST,
    REGION,
    Faults,
    address,
    launch,
    launch_spot,
    snapshot,
    tags,
    volume,
)


def make_bucket(aws, name: str, values: dict[str, str]) -> None:
    s3 = aws.client("s3")
    s3.create_bucket(Bucket=name)
    s3.put_bucket_tagging(Bucket=name, Tagging={"TagSet": [{"Key": k, "Value": v} for k, v in values.items()]})


def test_collect_lists_only_managed_live_resources(aws):
    ec2 = aws.client("ec2")
    (running,) = launch(ec2, tags(expires=FUTURE))
    (stopped,) = launch(ec2, tags(expires=FUTURE))
    ec2.stop_instances(InstanceIds=[stopped])
    (terminated,) = launch(ec2, tags())
    ec2.terminate_instances(InstanceIds=[terminated])
    (foreign,) = launch(ec2, tags(managed=False))
    # Same key, other value: not ours either.
    (lookalike,) = launch(ec2, {**tags(managed=False), TAG_MANAGED_BY: "someone-else"})
    sir, spot_instance = launch_spot(ec2, tags())
    attached = volume(ec2, tags(retain=True), attach_to=running)
    free = volume(ec2, tags(retain=False))
    volume(ec2, tags(managed=False))
    free_ip = address(ec2, tags())
    used_ip = address(ec2, tags(), associate_with=running)
    address(ec2, tags(managed=False))
    snap = snapshot(ec2, tags())
    snapshot(ec2, tags(managed=False))
    make_bucket(aws, "gpulease-ckpt-exp1", tags(retain=True))
    make_bucket(aws, "someone-elses-bucket", tags(managed=False))

    inv = collect_region(aws.clients(), REGION)

    assert inv.errors == []
    assert {i.id: i.state for i in inv.instances} == {running: "running", stopped: "stopped", spot_instance: "running"}
    assert {i.id: i.market for i in inv.instances}[spot_instance] == "spot"
    assert {foreign, lookalike, terminated}.isdisjoint(i.id for i in inv.instances)
    assert [(r.id, r.instance_id, r.state) for r in inv.spot_requests] == [(sir, spot_instance, "active")]
    assert {v.id: v.attached_to for v in inv.volumes} == {attached: (running,), free: ()}
    assert {a.id: a.instance_id for a in inv.addresses} == {free_ip: None, used_ip: running}
    assert [s.id for s in inv.snapshots] == [snap]
    assert [(b.id, b.tags[TAG_RETAIN]) for b in inv.buckets] == [("gpulease-ckpt-exp1", "true")]


def test_listing_uses_server_side_filters_and_paginators(aws):
    ec2 = aws.client("ec2")
    launch(ec2, tags())
    clients = aws.clients(fresh=True)
    calls: list[tuple[str, dict]] = []
    clients.session.events.register(
        "provide-client-params.ec2", lambda params, model, **_: calls.append((model.name, dict(params)))
    )
    collect_region(clients, REGION, buckets=False)
    by_op = {op: params for op, params in calls}
    assert set(by_op) == {
        "DescribeInstances",
        "DescribeSpotInstanceRequests",
        "DescribeVolumes",
        "DescribeAddresses",
        "DescribeSnapshots",
        "DescribeImages",
    }
    assert len(calls) == 6, "one page each on a small fleet"
    managed = {"Name": f"tag:{TAG_MANAGED_BY}", "Values": ["gpulease"]}
    for op, params in by_op.items():
        if op != "DescribeSpotInstanceRequests":
            assert managed in params["Filters"], op
    # Spot requests: no tag filter (a request may carry no tags; it is then judged by its instance's), live
    # states and cancelled ones in one listing, the largest page DescribeSpotInstanceRequests serves (botocore's model: MaxResults 5-1000).
    assert by_op["DescribeSpotInstanceRequests"]["Filters"] == [
        # the live ones and, in the same listing, the cancelled ones whose instance may still run
        {"Name": "state", "Values": ["open", "active", "disabled", "cancelled"]}]
    assert by_op["DescribeSpotInstanceRequests"]["MaxResults"] == 1000
    assert by_op["DescribeInstances"]["MaxResults"] == 1000
    assert by_op["DescribeVolumes"]["MaxResults"] == 500
    assert by_op["DescribeSnapshots"]["OwnerIds"] == ["self"]
    assert by_op["DescribeImages"]["Owners"] == ["self"]


def test_a_failed_listing_is_reported_and_the_others_still_come_back(aws):
    ec2 = aws.client("ec2")
    (inst,) = launch(ec2, tags())
    vol = volume(ec2, tags(retain=False))
    clients = aws.clients(fresh=True, max_attempts=2)
    Faults({"DescribeVolumes": (10, "InternalError", 500)}).install(clients)
    inv = collect_region(clients, REGION, buckets=False)
    assert [i.id for i in inv.instances] == [inst]
    assert vol not in [v.id for v in inv.volumes] and inv.volumes == []
    assert len(inv.errors) == 1 and inv.errors[0].startswith(f"{REGION}: listing volumes failed")


def test_price_and_spend_come_from_the_catalog():
    g5 = load_catalog().get("aws", "g5.xlarge")
    assert g5 is not None
    on_demand = Instance("i-1", REGION, "running", "g5.xlarge", "on-demand", NOW - timedelta(hours=3), None, {})
    spot = Instance("i-2", REGION, "running", "g5.xlarge", "spot", NOW - timedelta(hours=3), None, {})
    stopped = Instance("i-3", REGION, "stopped", "g5.xlarge", "on-demand", NOW - timedelta(hours=3), None, {})
    unknown = Instance("i-4", REGION, "running", "m5.large", "on-demand", NOW, None, {})
    price = g5.on_demand_price(REGION)
    assert hourly_price(on_demand) == pytest.approx(price)
    assert hourly_price(spot) == pytest.approx(price * (1 - g5.spot_discount), abs=1e-4)
    assert spend_so_far(on_demand, NOW) == pytest.approx(round(price * 3, 2))
    assert spend_so_far(stopped, NOW) is None
    assert hourly_price(unknown) is None and spend_so_far(unknown, NOW) is None


def test_cli_ls_json_and_table(aws, capsys):
    ec2 = aws.client("ec2")
    (inst,) = launch(ec2, tags(expires=FUTURE), instance_type="g5.xlarge")
    vol = volume(ec2, tags(retain=True))
    ip = address(ec2, tags())
    make_bucket(aws, "gpulease-ckpt-exp2", tags(retain=False))

    assert main(["ls", "--region", REGION, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = {r["id"]: r for r in out["resources"]}
    assert set(rows) == {inst, vol, ip, "gpulease-ckpt-exp2"}
    assert rows[inst]["kind"] == "instance" and rows[inst]["state"] == "running"
    assert rows[inst]["instanceType"] == "g5.xlarge" and rows[inst]["market"] == "on-demand"
    assert rows[inst]["expiresAt"] == rfc3339(FUTURE)
    assert rows[inst]["hourlyUsd"] == load_catalog().get("aws", "g5.xlarge").on_demand_price(REGION)
    assert rows[inst]["spendUsd"] is not None and rows[inst]["spendUsd"] >= 0
    assert rows[vol]["attachedTo"] == [] and rows[vol]["retain"] == "true"
    assert rows[ip]["associated"] is False
    assert rows["gpulease-ckpt-exp2"]["kind"] == "bucket"

    assert main(["ls", "--region", REGION]) == 0
    table = capsys.readouterr().out
    assert inst in table and vol in table and "unattached" in table and "gpulease-ckpt-exp2" in table


def test_cli_ls_needs_a_region(aws, capsys, monkeypatch):
    monkeypatch.delenv("GPULEASE_REGIONS", raising=False)
    assert main(["ls"]) == 2
    assert "no region given" in capsys.readouterr().err


def test_expired_resources_are_listed_with_their_deadline(aws, capsys):
    ec2 = aws.client("ec2")
    (inst,) = launch(ec2, tags(expires=PAST))
    assert main(["ls", "--region", REGION, "--json", "--no-buckets"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["resources"]
    assert row["id"] == inst and row["expiresAt"] == rfc3339(PAST)
