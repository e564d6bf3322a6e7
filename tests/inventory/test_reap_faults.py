"""The sweep under throttling and 5xx answers injected through botocore's ``before-send`` hook: botocore's retry
modes absorb transient errors, a batch that keeps failing is reported, and nothing that should stay is lost."""

from __future__ import annotations

import json

import pytest
from botocore.retries.standard import ExponentialBackoff

from gpulease.cli import main
from gpulease.cli import reap as reap_command
from gpulease.inventory.reaper import DONE, FAILED, TERMINATE, ReapSettings, sweep
from tests.support.inventory import (
    FUTURE,
    NOW,
    PAST,
    REGION,
    Faults,
    address,
    changed,
    launch,
    launch_spot,
    retain_until,
    snapshot,
    state,
    tags,
    volume,
)


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch):
    # botocore's own backoff, scaled down so that throttled retries take milliseconds in tests.
    monkeypatch.setitem(ExponentialBackoff._DEFAULT_BACKOFF_CONFIG, "throttling_base_scale", 0.01)


def fleet(ec2) -> tuple[set[str], set[str]]:
    """(ids the sweep must remove, ids it must keep)."""
    remove: set[str] = set()
    keep: set[str] = set()
    remove.update(launch(ec2, tags(expires=PAST), count=3))
    sir, spot_instance = launch_spot(ec2, tags(expires=PAST))
    remove.update({sir, spot_instance})
    (live,) = launch(ec2, tags(expires=FUTURE))
    keep.add(live)
    keep.update(launch(ec2, tags(managed=False, expires=PAST)))
    remove.update(volume(ec2, tags(retain=False)) for _ in range(3))
    keep.add(volume(ec2, tags(retain=True)))
    keep.add(volume(ec2, tags(retain=False), attach_to=live))
    keep.add(volume(ec2, tags(managed=False, retain=False)))
    remove.update(address(ec2, tags()) for _ in range(2))
    keep.add(address(ec2, tags(), associate_with=live))
    keep.add(address(ec2, tags(managed=False)))
    remove.add(snapshot(ec2, tags(extra=retain_until(PAST))))
    keep.add(snapshot(ec2, tags(extra=retain_until(FUTURE))))
    return remove, keep


TRANSIENT = {
    "DescribeInstances": (2, "RequestLimitExceeded", 503),
    "DescribeVolumes": (1, "InternalError", 500),
    "DescribeTags": (2, "RequestLimitExceeded", 503),
    "DescribeAddresses": (1, "ServiceUnavailable", 503),
    "DescribeSpotInstanceRequests": (1, "Throttling", 400),
    "CancelSpotInstanceRequests": (2, "RequestLimitExceeded", 503),
    "TerminateInstances": (2, "Throttling", 400),
    "DeleteVolume": (3, "InternalError", 500),
    "ReleaseAddress": (1, "RequestLimitExceeded", 503),
    "DeleteSnapshot": (1, "ServiceUnavailable", 503),
}


# Adaptive mode also slows the whole client down after a throttle (its token bucket starts at 0.5 requests/s),
# so its run gets one throttle and 5xx answers elsewhere, which the rate limiter ignores.
ADAPTIVE = {
    op: (count, "InternalError", 500) if op != "TerminateInstances" else (1, "Throttling", 400)
    for op, (count, _, _) in TRANSIENT.items()
}


@pytest.mark.parametrize(("retry_mode", "plan"), [("standard", TRANSIENT), ("adaptive", ADAPTIVE)])
def test_transient_throttling_and_5xx_are_retried_by_botocore(aws, retry_mode, plan):
    ec2 = aws.client("ec2")
    remove, keep = fleet(ec2)
    before = state(ec2)
    clients = aws.clients(fresh=True, retry_mode=retry_mode, max_attempts=5)
    faults = Faults(dict(plan))
    faults.install(clients)

    report = sweep(clients, [REGION], ReapSettings(now=NOW, execute=True))

    assert faults.injected == {op: p[0] for op, p in plan.items()}, "every planned fault was served"
    assert not report.failed, report.as_dict()
    assert {o.id for o in report.outcomes if o.status == DONE} == remove
    after = state(ec2)
    assert changed(before, after) == remove
    assert all(after[i] == before[i] for i in keep)


def test_a_batch_that_keeps_failing_is_reported_and_the_sweep_goes_on(aws, capsys):
    ec2 = aws.client("ec2")
    remove, keep = fleet(ec2)
    before = state(ec2)
    clients = aws.clients(fresh=True, retry_mode="standard", max_attempts=3)
    # TerminateInstances answers 503 on every attempt; the other actions are untouched.
    Faults({"TerminateInstances": (1000, "ServiceUnavailable", 503)}).install(clients)

    report = sweep(clients, [REGION], ReapSettings(now=NOW, execute=True))

    assert report.failed
    failed = {o.id: o for o in report.outcomes if o.status == FAILED}
    instances = {o.id for o in report.outcomes if o.action == TERMINATE}
    assert set(failed) == instances and len(instances) == 4
    assert all("ServiceUnavailable" in o.detail for o in failed.values())
    after = state(ec2)
    # Everything else that should go went; the instances are still running; nothing to keep changed.
    assert changed(before, after) == remove - instances
    assert all(after[i] == "running" for i in instances)
    assert all(after[i] == before[i] for i in keep)
    assert {o.id for o in report.outcomes if o.status == DONE} == remove - instances


def test_cli_exits_non_zero_when_an_action_fails(aws, capsys, monkeypatch):
    ec2 = aws.client("ec2")
    (expired,) = launch(ec2, tags(expires=PAST))
    gone_volume = volume(ec2, tags(retain=False))
    kept_volume = volume(ec2, tags(retain=True))
    build = reap_command.clients_from_args

    def clients_with_faults(args):
        clients = build(args)
        Faults({"TerminateInstances": (1000, "InternalError", 500)}).install(clients)
        return clients

    monkeypatch.setattr(reap_command, "clients_from_args", clients_with_faults)
    code = main(["reap", "--region", REGION, "--execute", "--max-attempts", "2", "--json"])
    out = capsys.readouterr()
    assert code == 1
    assert "some actions or listings failed" in out.err
    report = json.loads(out.out)
    statuses = {o["id"]: o["status"] for o in report["outcomes"]}
    assert statuses == {expired: FAILED, gone_volume: DONE, kept_volume: "kept"}
    after = state(ec2)
    assert after[expired] == "running" and gone_volume not in after and kept_volume in after


def test_a_failed_delete_after_the_final_snapshot_keeps_the_volume_and_names_the_snapshot(aws):
    ec2 = aws.client("ec2")
    vol = volume(ec2, tags(retain=False))
    clients = aws.clients(fresh=True, max_attempts=2)
    Faults({"DeleteVolume": (1000, "InternalError", 500)}).install(clients)
    report = sweep(clients, [REGION], ReapSettings(now=NOW, execute=True, snapshot_before_delete=True))
    (outcome,) = [o for o in report.outcomes if o.id == vol]
    assert outcome.status == FAILED and "InternalError" in outcome.detail
    snaps = ec2.describe_snapshots(OwnerIds=["self"], Filters=[{"Name": "volume-id", "Values": [vol]}])["Snapshots"]
    assert len(snaps) == 1 and f"final snapshot {snaps[0]['SnapshotId']} was taken" in outcome.detail
    assert state(ec2)[vol] == "available"
