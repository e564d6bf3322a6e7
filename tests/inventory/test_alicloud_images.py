"""Baked personal images on Alibaba Cloud, against the loopback stub: what image.bake declares (a managed snapshot of
the system disk, a custom image made from it, both with retain-until) is listed with its size and monthly storage
cost, kept until retain-until, then deleted image first, snapshot second."""

from __future__ import annotations

import json

import pytest

from gpulease.cli import main
from gpulease.core.catalog import load_catalog
from gpulease.inventory.acting import DONE
from gpulease.inventory.alicloud_reaper import sweep
from gpulease.inventory.decide import DELETE, KEEP, ReapSettings
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
