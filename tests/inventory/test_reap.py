"""The reaper against moto's HTTP server: a mixed fleet, dry run, execute, rerun, spot requests, allowlist, CLI."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from gpulease.cli import main
from gpulease.core.vocabulary import (
    PHASE_PARKED,
    TAG_EXPIRES_AT,
    TAG_MANAGED_BY,
    TAG_PHASE,
    TAG_RETAIN,
    TAG_RETAIN_UNTIL,
    parse_rfc3339,
)
from gpulease.inventory.aws import AwsTargetError
from gpulease.inventory.collect import Instance, RegionInventory, collect_region
from gpulease.inventory.reaper import (
    CANCEL,
    DELETE,
    DONE,
    GONE,
    KEEP,
    RELEASE,
    SNAPSHOT_AND_DELETE,
    TERMINATE,
    WOULD,
    Decision,
    ReapSettings,
    execute_region,
    plan_region,
    sweep,
)
from tests.support.inventory import (
    ACCOUNT,
    FUTURE,
    NOW,
    PAST,
    REGION,
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


def build_mixed_fleet(ec2) -> dict[str, str]:
    """One of each case the safety rules distinguish; returns name -> id."""
    f: dict[str, str] = {}
    (f["i_expired"],) = launch(ec2, tags(expires=PAST))
    (f["i_live"],) = launch(ec2, tags(expires=FUTURE))
    (f["i_in_grace"],) = launch(ec2, tags(expires=NOW - timedelta(minutes=10)))
    (f["i_no_deadline"],) = launch(ec2, tags(expires=None))
    (f["i_bad_deadline"],) = launch(ec2, {**tags(), TAG_EXPIRES_AT: "tomorrow"})
    (f["i_unmanaged"],) = launch(ec2, tags(managed=False, expires=PAST))
    f["sir_expired"], f["i_spot_expired"] = launch_spot(ec2, tags(expires=PAST))
    f["sir_live"], f["i_spot_live"] = launch_spot(ec2, tags(expires=FUTURE))
    f["v_attached"] = volume(ec2, tags(retain=False), attach_to=f["i_live"])
    f["v_free_expired"] = volume(ec2, tags(retain=False))
    f["v_free_retained"] = volume(ec2, tags(retain=True))
    f["v_free_no_retain_tag"] = volume(ec2, tags())
    f["v_free_not_expired"] = volume(ec2, tags(retain=False, expires=FUTURE))
    f["v_unmanaged"] = volume(ec2, tags(managed=False, retain=False))
    # A parked stack's disk, even one tagged retain=false and long expired: parking exists to keep it.
    f["v_parked"] = volume(ec2, tags(retain=False, extra={TAG_PHASE: PHASE_PARKED}))
    f["e_free_expired"] = address(ec2, tags())
    f["e_associated"] = address(ec2, tags(), associate_with=f["i_live"])
    f["e_free_live"] = address(ec2, tags(expires=FUTURE))
    f["e_free_retained"] = address(ec2, tags(retain=True))
    f["e_unmanaged"] = address(ec2, tags(managed=False))
    f["s_past_retention"] = snapshot(ec2, tags(extra=retain_until(PAST)))
    f["s_in_retention"] = snapshot(ec2, tags(extra=retain_until(FUTURE)))
    f["s_retain_true"] = snapshot(ec2, tags(retain=True, extra=retain_until(PAST)))
    f["s_unmanaged"] = snapshot(ec2, tags(managed=False, extra=retain_until(PAST)))
    return f


EXPECTED_ACTIONS = {
    "i_expired": TERMINATE,
    "i_spot_expired": TERMINATE,
    "sir_expired": CANCEL,
    "v_free_expired": DELETE,
    "e_free_expired": RELEASE,
    "s_past_retention": DELETE,
}


def acted(report) -> dict[str, str]:
    return {o.id: o.action for o in report.outcomes if o.action != KEEP}


def test_mixed_fleet_dry_run_execute_and_rerun(aws):
    ec2 = aws.client("ec2")
    fleet = build_mixed_fleet(ec2)
    expected = {fleet[name]: action for name, action in EXPECTED_ACTIONS.items()}
    before = state(ec2)

    dry = sweep(aws.clients(), [REGION], ReapSettings(now=NOW))
    assert dry.account == ACCOUNT
    assert acted(dry) == expected
    assert {o.status for o in dry.outcomes if o.action != KEEP} == {WOULD}
    assert state(ec2) == before, "a dry run must change nothing"

    # Every managed resource is reported with a reason; unmanaged ones never appear.
    reported = {o.id: o for o in dry.outcomes}
    unmanaged = {fleet[n] for n in ("i_unmanaged", "v_unmanaged", "e_unmanaged", "s_unmanaged")}
    assert not unmanaged & set(reported)
    assert "grace period" in reported[fleet["i_in_grace"]].reason
    assert f"no {TAG_EXPIRES_AT} tag" in reported[fleet["i_no_deadline"]].reason
    assert "not an RFC 3339 time" in reported[fleet["i_bad_deadline"]].reason
    assert reported[fleet["v_attached"]].reason.startswith(f"attached to {fleet['i_live']}")
    assert "treated as retained" in reported[fleet["v_free_no_retain_tag"]].reason
    assert reported[fleet["v_free_retained"]].reason == f"{TAG_RETAIN}=true"
    assert reported[fleet["v_parked"]].action == KEEP
    assert reported[fleet["v_parked"]].reason == f"{TAG_PHASE}=parked: its stack is parked and keeps this disk"
    assert reported[fleet["e_associated"]].reason == f"associated with {fleet['i_live']}"
    assert reported[fleet["sir_live"]].reason == f"serves instance {fleet['i_spot_live']}"

    done = sweep(aws.clients(), [REGION], ReapSettings(now=NOW, execute=True))
    assert not done.failed, done.as_dict()
    assert acted(done) == expected
    assert {o.status for o in done.outcomes if o.action != KEEP} == {DONE}
    after = state(ec2)
    assert changed(before, after) == set(expected)
    assert after[fleet["i_expired"]] in ("shutting-down", "terminated")
    assert after.get(fleet["sir_expired"], "gone") in ("cancelled", "gone")
    assert fleet["v_free_expired"] not in after
    assert fleet["e_free_expired"] not in after
    assert fleet["s_past_retention"] not in after

    rerun = sweep(aws.clients(), [REGION], ReapSettings(now=NOW, execute=True))
    assert not rerun.failed
    assert acted(rerun) == {}
    assert state(ec2) == after


def test_grace_period_and_clock(aws):
    ec2 = aws.client("ec2")
    (inst,) = launch(ec2, tags(expires=NOW - timedelta(minutes=30)))
    assert acted(sweep(aws.clients(), [REGION], ReapSettings(now=NOW))) == {}
    assert acted(sweep(aws.clients(), [REGION], ReapSettings(now=NOW, grace=timedelta(minutes=20)))) == {
        inst: TERMINATE
    }
    later = NOW + timedelta(hours=1)
    assert acted(sweep(aws.clients(), [REGION], ReapSettings(now=later))) == {inst: TERMINATE}


def test_snapshot_before_delete_keeps_a_tagged_final_snapshot(aws):
    ec2 = aws.client("ec2")
    vol = volume(ec2, tags(retain=False))
    settings = ReapSettings(now=NOW, execute=True, snapshot_before_delete=True, snapshot_retention=timedelta(days=7))
    report = sweep(aws.clients(), [REGION], settings)
    (outcome,) = [o for o in report.outcomes if o.id == vol]
    assert (outcome.action, outcome.status) == (SNAPSHOT_AND_DELETE, DONE)
    snaps = ec2.describe_snapshots(OwnerIds=["self"], Filters=[{"Name": "volume-id", "Values": [vol]}])["Snapshots"]
    assert len(snaps) == 1 and snaps[0]["SnapshotId"] in outcome.detail
    snap_tags = {t["Key"]: t["Value"] for t in snaps[0]["Tags"]}
    assert snap_tags[TAG_MANAGED_BY] == "gpulease"
    assert snap_tags[TAG_RETAIN] == "false"
    assert parse_rfc3339(snap_tags[TAG_RETAIN_UNTIL]) == NOW + timedelta(days=7)
    assert vol not in {v["VolumeId"] for v in ec2.describe_volumes()["Volumes"]}
    # The final snapshot is kept by the next sweeps until its retention ends, then deleted.
    assert acted(sweep(aws.clients(), [REGION], ReapSettings(now=NOW + timedelta(days=6)))) == {}
    last = sweep(aws.clients(), [REGION], ReapSettings(now=NOW + timedelta(days=7, minutes=1), execute=True))
    assert acted(last) == {snaps[0]["SnapshotId"]: DELETE}


def test_snapshot_without_retain_until_uses_start_time_plus_retention(aws):
    ec2 = aws.client("ec2")
    snap = snapshot(ec2, tags())
    assert acted(sweep(aws.clients(), [REGION], ReapSettings(now=NOW + timedelta(days=29)))) == {}
    assert acted(sweep(aws.clients(), [REGION], ReapSettings(now=NOW + timedelta(days=31)))) == {snap: DELETE}


def test_open_spot_request_without_instance_is_cancelled_once_expired(aws):
    ec2 = aws.client("ec2")
    sir, inst = launch_spot(ec2, tags(expires=PAST))
    # The instance is gone (interrupted, terminated by hand); the request itself is still live and managed.
    ec2.terminate_instances(InstanceIds=[inst])
    report = sweep(aws.clients(), [REGION], ReapSettings(now=NOW, execute=True))
    assert acted(report) == {sir: CANCEL}
    assert state(ec2).get(sir, "gone") in ("cancelled", "gone")


def test_account_not_on_allowlist_is_refused_before_any_change(aws):
    ec2 = aws.client("ec2")
    launch(ec2, tags(expires=PAST))
    before = state(ec2)
    with pytest.raises(AwsTargetError, match=f"account {ACCOUNT} is not on the allowlist"):
        sweep(aws.clients(), [REGION], ReapSettings(now=NOW, execute=True), ["111111111111"])
    assert state(ec2) == before
    report = sweep(aws.clients(), [REGION], ReapSettings(now=NOW, execute=True), [ACCOUNT])
    assert len(acted(report)) == 1


def test_cli_reap_dry_run_then_execute_json(aws, capsys):
    ec2 = aws.client("ec2")
    (expired,) = launch(ec2, tags(expires=PAST))
    (live,) = launch(ec2, tags(expires=FUTURE))
    before = state(ec2)

    assert main(["reap", "--region", REGION, "--json"]) == 0
    dry = json.loads(capsys.readouterr().out)
    assert dry["executed"] is False and dry["account"] == ACCOUNT
    assert {(o["id"], o["action"], o["status"]) for o in dry["outcomes"]} == {
        (expired, TERMINATE, WOULD),
        (live, KEEP, "kept"),
    }
    assert state(ec2) == before

    assert main(["reap", "--region", REGION, "--execute", "--json", "--allowed-account", ACCOUNT]) == 0
    done = json.loads(capsys.readouterr().out)
    assert done["counts"] == {"done": 1, "kept": 1}
    assert state(ec2)[expired] in ("shutting-down", "terminated")

    assert main(["reap", "--region", REGION, "--execute"]) == 0
    table = capsys.readouterr().out
    assert "gpulease reap" in table and "1 kept" in table


def test_cli_reap_user_errors(aws, capsys, monkeypatch):
    assert main(["reap"]) == 2
    assert "no region given" in capsys.readouterr().err
    monkeypatch.setenv("GPULEASE_ALLOWED_ACCOUNTS", "111111111111,222222222222")
    assert main(["reap", "--region", REGION]) == 2
    assert f"account {ACCOUNT} is not on the allowlist (111111111111, 222222222222)" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["reap", "--region", REGION, "--grace-minutes", "-5"])
    assert exc.value.code == 2
    assert capsys.readouterr().err == (
        "gpulease reap: argument --grace-minutes: '-5' is not a number of minutes; accepted: a number from 0 to "
        "10080, e.g. 60 (ASCII digits); see gpulease reap --help\n")


def test_regions_from_environment_and_multiple_regions(aws, monkeypatch, capsys):
    east = aws.client("ec2", "us-east-1")
    west = aws.client("ec2", "us-west-2")
    (a,) = launch(east, tags(expires=PAST))
    b = address(west, tags())
    monkeypatch.setenv("GPULEASE_REGIONS", "us-east-1, us-west-2")
    assert main(["reap", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["regions"] == ["us-east-1", "us-west-2"]
    assert {(o["region"], o["id"], o["action"]) for o in out["outcomes"]} == {
        ("us-east-1", a, TERMINATE),
        ("us-west-2", b, RELEASE),
    }


def test_resources_gone_between_listing_and_acting_are_reported_gone(aws):
    ec2 = aws.client("ec2")
    (first, second) = launch(ec2, tags(expires=PAST), count=2)
    vol_a = volume(ec2, tags(retain=False))
    vol_b = volume(ec2, tags(retain=False))
    settings = ReapSettings(now=NOW, execute=True)
    decisions = plan_region(collect_region(aws.clients(), REGION, buckets=False), settings)
    # Someone else cleans up part of it after the listing: the sweep must neither fail nor stop there.
    ec2.terminate_instances(InstanceIds=[first])
    ec2.delete_volume(VolumeId=vol_a)
    ghost = Instance("i-0123456789abcdef0", REGION, "running", "g5.xlarge", "on-demand", None, None, tags())
    decisions.append(Decision(ghost, TERMINATE, "listed a moment ago"))
    outcomes = {o.id: o.status for o in execute_region(aws.client("ec2"), decisions, settings)}
    assert outcomes[ghost.id] == GONE
    assert outcomes[second] == DONE
    assert outcomes[vol_a] == GONE and outcomes[vol_b] == DONE
    assert state(ec2)[second] in ("shutting-down", "terminated")


def test_plan_cancels_the_spot_request_named_by_the_instance_before_terminating_it():
    # Real EC2 names the request on the instance (SpotInstanceRequestId); moto does not, so this is planned offline.
    inst = Instance("i-0aaa", REGION, "running", "g5.xlarge", "spot", PAST, "sir-0bbb", tags(expires=PAST))
    live = Instance("i-0ccc", REGION, "running", "g5.xlarge", "spot", PAST, "sir-0ddd", tags(expires=FUTURE))
    decisions = plan_region(RegionInventory(REGION, instances=[inst, live]), ReapSettings(now=NOW))
    assert [(d.resource.kind, d.resource.id, d.action) for d in decisions] == [
        ("spot-request", "sir-0bbb", CANCEL),
        ("instance", "i-0aaa", TERMINATE),
        ("instance", "i-0ccc", KEEP),
    ]
