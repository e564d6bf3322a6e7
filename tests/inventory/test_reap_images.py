"""Baked personal images (AMIs) in the AWS reaper and ``gpulease ls``, against moto's HTTP server: listed with
their snapshots and monthly storage cost, kept until ``gpulease:retain-until``, then deregistered with the
snapshots CreateImage made for them (dry run first); an unmanaged image and a foreign snapshot are never touched."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from gpulease.cli import main
from gpulease.core.catalog import load_catalog
from gpulease.inventory.collect import collect_region
from gpulease.inventory.reaper import DELETE, DONE, KEEP, WOULD, ReapSettings, image_snapshots_deleted, sweep
from tests.support.inventory import FUTURE, NOW, PAST, REGION, launch, retain_until, snapshot, spec, tag_list, tags


def bake(ec2, values: dict[str, str]) -> tuple[str, list[str]]:
    """An AMI of a running instance (CreateImage, as aws.ec2.AmiFromInstance calls it) and its snapshots."""
    (instance,) = launch(ec2, tags(expires=FUTURE))
    image = ec2.create_image(InstanceId=instance, Name=f"gpulease-baked-{instance}",
                             TagSpecifications=spec("image", values))["ImageId"]
    [described] = ec2.describe_images(ImageIds=[image])["Images"]
    return image, [m["Ebs"]["SnapshotId"] for m in described["BlockDeviceMappings"] if "Ebs" in m]


def _images(ec2) -> set[str]:
    return {i["ImageId"] for i in ec2.describe_images(Owners=["self"])["Images"]}


def _snapshots(ec2) -> set[str]:
    return {s["SnapshotId"] for s in ec2.describe_snapshots(OwnerIds=["self"])["Snapshots"]}


@pytest.fixture
def fleet(aws):
    ec2 = aws.client("ec2")
    f = {}
    f["expired"], f["expired_snaps"] = bake(ec2, tags(expires=PAST, extra=retain_until(PAST)))
    f["kept"], f["kept_snaps"] = bake(ec2, tags(expires=PAST, extra=retain_until(FUTURE)))
    f["unmanaged"], f["unmanaged_snaps"] = bake(ec2, tags(managed=False, expires=PAST, extra=retain_until(PAST)))
    assert f["expired_snaps"] and f["kept_snaps"]
    return ec2, f


def test_the_listing_shows_baked_images_with_their_snapshots_and_size(aws, fleet):
    _, f = fleet
    inventory = collect_region(aws.clients(), REGION, buckets=False)
    images = {i.id: i for i in inventory.images}
    assert set(images) == {f["expired"], f["kept"]}  # the unmanaged one is not ours
    assert list(images[f["expired"]].snapshot_ids) == f["expired_snaps"]
    assert images[f["expired"]].size_gb > 0 and images[f["expired"]].create_time is not None


def test_dry_run_then_execute_deregisters_expired_images_with_their_snapshots(aws, fleet):
    ec2, f = fleet
    dry = sweep(aws.clients(), [REGION], ReapSettings(now=NOW, execute=False))
    by_id = {o.id: o for o in dry.outcomes}
    assert by_id[f["expired"]].status == WOULD and by_id[f["expired"]].action == DELETE
    assert all(s in by_id[f["expired"]].reason for s in f["expired_snaps"])  # the dry run names the snapshots
    assert by_id[f["kept"]].action == KEEP and "retained until" in by_id[f["kept"]].reason
    assert f["unmanaged"] not in by_id
    assert f["expired"] in _images(ec2) and set(f["expired_snaps"]) <= _snapshots(ec2)  # nothing done yet

    done = sweep(aws.clients(), [REGION], ReapSettings(now=NOW, execute=True))
    outcome = {o.id: o for o in done.outcomes}[f["expired"]]
    assert outcome.status == DONE and outcome.detail.startswith("deregistered; snapshots deleted: ")
    assert _images(ec2) == {f["kept"], f["unmanaged"]}
    snaps = _snapshots(ec2)
    assert snaps.isdisjoint(f["expired_snaps"])
    assert set(f["kept_snaps"]) | set(f["unmanaged_snaps"]) <= snaps


def test_a_snapshot_not_made_for_the_image_is_left_and_named(aws):
    ec2 = aws.client("ec2")
    image, _ = bake(ec2, tags(expires=PAST, extra=retain_until(PAST)))
    foreign = snapshot(ec2, tags(managed=False))
    [listed] = [i for i in collect_region(aws.clients(), REGION, buckets=False).images if i.id == image]
    # An image whose mappings (as listed) named someone else's snapshot: that one is left alone.
    ec2.deregister_image(ImageId=image)
    detail = image_snapshots_deleted(ec2, replace(listed, snapshot_ids=(*listed.snapshot_ids, foreign)))
    assert f"left: {foreign}" in detail and foreign in _snapshots(ec2)
    assert set(listed.snapshot_ids).isdisjoint(_snapshots(ec2))


def test_ls_shows_images_with_their_monthly_storage_cost(aws, fleet, capsys):
    _, f = fleet
    assert main(["ls", "--region", REGION, "--format", "json", "--no-buckets"]) == 0
    rows = {r["id"]: r for r in json.loads(capsys.readouterr().out)["resources"]}
    row = rows[f["kept"]]
    price = load_catalog().region_prices("aws", REGION).snapshot_gb_month
    assert row["kind"] == "image" and row["snapshotIds"] == f["kept_snaps"]
    assert row["monthlyUsd"] == pytest.approx(round(row["sizeGb"] * price, 2))
    assert main(["ls", "--region", REGION, "--no-buckets"]) == 0
    out = capsys.readouterr().out
    from gpulease.core.money import usd_per_month

    assert usd_per_month(row["monthlyUsd"]) in out and "images and snapshots store for $" in out


def test_the_programs_shape_a_managed_snapshot_and_an_image_registered_from_it(aws):
    """What image.bake declares on AWS: aws.ebs.Snapshot of the root volume and aws.ec2.Ami registered from it, both
    with the same managed tags and retain-until. The sweep deregisters the image, then deletes the snapshot.
    (moto's RegisterImage ignores TagSpecifications and maps a snapshot of its own: both are tagged afterwards.)"""
    ec2 = aws.client("ec2")
    values = tag_list(tags(expires=PAST, extra=retain_until(PAST)))
    image = ec2.register_image(Name="gpulease-aws-prep-7b-llama7b-prep", RootDeviceName="/dev/sda1",
                               VirtualizationType="hvm")["ImageId"]
    [described] = ec2.describe_images(ImageIds=[image])["Images"]
    snap = described["BlockDeviceMappings"][0]["Ebs"]["SnapshotId"]
    ec2.create_tags(Resources=[image, snap], Tags=values)
    report = sweep(aws.clients(), [REGION], ReapSettings(now=NOW, execute=True))
    outcomes = {o.id: o for o in report.outcomes}
    assert outcomes[image].status == DONE and outcomes[image].detail == f"deregistered; snapshots deleted: {snap}"
    assert image not in _images(ec2) and snap not in _snapshots(ec2)
