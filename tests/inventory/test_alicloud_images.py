"""Baked personal images on Alibaba Cloud, against the loopback stub: what image.bake declares (a managed snapshot of
the system disk, a custom image made from it, both with retain-until) is listed with its size and monthly storage
cost, kept until retain-until, then deleted image first, snapshot second."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from gpulease.cli import main
from gpulease.core.catalog import load_catalog
from gpulease.core.vocabulary import TAG_RETAIN_UNTIL
from gpulease.inventory.acting import DONE
from gpulease.inventory.alicloud_reaper import sweep
from gpulease.inventory.decide import DELETE, KEEP, ReapSettings, decide_image
from gpulease.inventory.resources import Image
from tests.support.alicloud_inventory import REGION
from tests.support.inventory import FUTURE, NOW, PAST, retain_until, tags


def bake(account, until) -> tuple[str, str]:
    values = tags(expires=PAST, extra=retain_until(until))
    snap = account.add_snapshot(REGION, values)
    return account.add_image(REGION, values, snapshot=snap), snap


def test_ls_lists_baked_images_with_size_snapshot_and_monthly_cost(ali, capsys):
    image, snap = bake(ali.account, FUTURE)
    assert main(["ls", "--cloud", "alicloud", "--region", REGION, "--json", "--no-buckets"]) == 0
    rows = {r["id"]: r for r in json.loads(capsys.readouterr().out)["resources"]}
    price = load_catalog().region_prices("alicloud", REGION).snapshot_gb_month
    assert rows[image]["snapshotIds"] == [snap] and rows[image]["sizeGb"] == 100
    assert rows[image]["monthlyUsd"] == pytest.approx(round(100 * price, 2))
    assert rows[snap]["monthlyUsd"] == pytest.approx(round(100 * price, 2))


def test_the_reaper_deletes_an_expired_baked_image_then_its_snapshot(ali):
    expired, expired_snap = bake(ali.account, PAST)
    kept, kept_snap = bake(ali.account, FUTURE)
    dry = {o.id: o for o in sweep(ali.clients(), [REGION], ReapSettings(now=NOW, execute=False)).outcomes}
    assert dry[expired].action == DELETE and expired_snap in dry[expired].reason
    assert dry[kept].action == KEEP and dry[kept_snap].action == KEEP
    assert {expired, expired_snap} <= set(ali.account.state())

    done = {o.id: o for o in sweep(ali.clients(), [REGION], ReapSettings(now=NOW, execute=True)).outcomes}
    assert done[expired].status == DONE and done[expired_snap].status == DONE
    assert set(ali.account.state()) >= {kept, kept_snap}
    assert not {expired, expired_snap} & set(ali.account.state())


def test_the_image_is_deleted_without_force_so_an_image_in_use_is_refused_not_forced(ali):
    bake(ali.account, PAST)
    sweep(ali.clients(), [REGION], ReapSettings(now=NOW, execute=True))
    forces = [p.get("Force") for a, p in ali.stub.calls if a == "DeleteImage"]
    assert forces and all(str(f).lower() == "false" for f in forces), forces


@pytest.mark.parametrize("until", ["soon", "2026-13-01T00:00:00Z", ""])
def test_an_unreadable_retain_until_keeps_the_baked_image(until: str) -> None:
    # Unreadable is never "expired": the image (and its snapshot) stay, with the reason reported.
    image = Image("m-1", REGION, "available", "baked", NOW - timedelta(days=400),
                  {**tags(expires=PAST), TAG_RETAIN_UNTIL: until}, snapshot_ids=("s-1",))
    decision = decide_image(image, ReapSettings(now=NOW))
    if until:
        assert decision.action == KEEP
        assert decision.reason == f"gpulease:retain-until={until!r} is not an RFC 3339 time"
    else:  # no value at all: the creation time plus the retention period decides (400 days ago: expired)
        assert decision.action == DELETE
