"""The Alibaba Cloud sweep with the real SDKs against the loopback stub: a mixed fleet, dry run, execute, rerun,
batch sizes, server-side filters and paging, the allowlist, resources gone in between, the CLI."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from gpulease.cli import main
from gpulease.core.vocabulary import (
    MANAGED_BY_VALUE,
    PHASE_PARKED,
    TAG_EXPIRES_AT,
    TAG_MANAGED_BY,
    TAG_PHASE,
    TAG_RETAIN,
)
from gpulease.inventory.acting import DONE, GONE, KEPT, WOULD
from gpulease.inventory.alicloud_collect import collect_region
from gpulease.inventory.alicloud_reaper import AlicloudOptionError, execute_region, sweep
from gpulease.inventory.aws import AwsTargetError
from gpulease.inventory.decide import DELETE, KEEP, RELEASE, TERMINATE, ReapSettings, plan_region
from tests.support.alicloud_inventory import OTHER_REGION, REGION
from tests.support.inventory import FUTURE, NOW, PAST, retain_until, tags


def build_mixed_fleet(account) -> dict[str, str]:
    """One of each case the safety rules distinguish; returns name -> id."""
    f: dict[str, str] = {}
    add = account
    f["i_expired_no_release_time"] = add.add_instance(REGION, tags(expires=PAST))
    f["i_expired_release_time_passed"] = add.add_instance(REGION, tags(expires=PAST), release_time=PAST)
    f["i_live"] = add.add_instance(REGION, tags(expires=FUTURE), release_time=FUTURE)
    f["i_in_grace"] = add.add_instance(REGION, tags(expires=NOW - timedelta(minutes=10)))
    f["i_no_deadline"] = add.add_instance(REGION, tags(expires=None))
    f["i_bad_deadline"] = add.add_instance(REGION, {**tags(), TAG_EXPIRES_AT: "tomorrow"})
    f["i_unmanaged"] = add.add_instance(REGION, tags(managed=False, expires=PAST))
    f["i_spot_expired"] = add.add_instance(REGION, tags(expires=PAST), spot=True, status="Stopped")
    f["d_attached"] = add.add_disk(REGION, tags(retain=False), attach_to=f["i_live"])
    f["d_left_behind"] = add.add_disk(REGION, tags(retain=False))
    f["d_retained"] = add.add_disk(REGION, tags(retain=True))
    f["d_no_retain_tag"] = add.add_disk(REGION, tags())
    f["d_not_expired"] = add.add_disk(REGION, tags(retain=False, expires=FUTURE))
    f["d_creating"] = add.add_disk(REGION, tags(retain=False), status="Creating")
    f["d_unmanaged"] = add.add_disk(REGION, tags(managed=False, retain=False))
    # A parked stack's disk, even one tagged retain=false and long expired: parking exists to keep it.
    f["d_parked"] = add.add_disk(REGION, tags(retain=False, extra={TAG_PHASE: PHASE_PARKED}))
    f["e_free_expired"] = add.add_eip(REGION, tags())
    f["e_associated"] = add.add_eip(REGION, tags(), associate_with=f["i_live"])
    f["e_free_live"] = add.add_eip(REGION, tags(expires=FUTURE))
    f["e_free_retained"] = add.add_eip(REGION, tags(retain=True))
    f["e_unmanaged"] = add.add_eip(REGION, tags(managed=False))
    f["e_associating"] = add.add_eip(REGION, tags())
    account.eips[f["e_associating"]].status = "Associating"  # being bound to an instance: not free
    f["s_past_retention"] = add.add_snapshot(REGION, tags(extra=retain_until(PAST)))
    f["s_in_retention"] = add.add_snapshot(REGION, tags(extra=retain_until(FUTURE)))
    f["s_retain_true"] = add.add_snapshot(REGION, tags(retain=True, extra=retain_until(PAST)))
    f["s_progressing"] = add.add_snapshot(REGION, tags(extra=retain_until(PAST)), status="progressing")
    f["s_unmanaged"] = add.add_snapshot(REGION, tags(managed=False, extra=retain_until(PAST)))
    f["s_of_image"] = add.add_snapshot(REGION, tags(extra=retain_until(PAST)))
    f["s_experiment_running"] = add.add_snapshot(REGION, tags(expires=FUTURE, extra=retain_until(PAST)))
    f["m_past_retention"] = add.add_image(REGION, tags(extra=retain_until(PAST)), snapshot=f["s_of_image"])
    f["m_retained"] = add.add_image(REGION, tags(retain=True, extra=retain_until(PAST)))
    f["m_unmanaged"] = add.add_image(REGION, tags(managed=False, extra=retain_until(PAST)))
    add.add_bucket(REGION, "gpulease-ckpt-expired", tags(retain=False))
    return f


EXPECTED_ACTIONS = {
    "i_expired_no_release_time": TERMINATE,
    "i_expired_release_time_passed": TERMINATE,
    "i_spot_expired": TERMINATE,
    "d_left_behind": DELETE,
    "e_free_expired": RELEASE,
    "s_past_retention": DELETE,
    "s_of_image": DELETE,
    "m_past_retention": DELETE,
}


def acted(report) -> dict[str, str]:
    return {o.id: o.action for o in report.outcomes if o.action != KEEP}


def test_mixed_fleet_dry_run_execute_and_rerun(ali):
    fleet = build_mixed_fleet(ali.account)
    expected = {fleet[name]: action for name, action in EXPECTED_ACTIONS.items()}
    before = ali.account.state()

    dry = sweep(ali.clients(), [REGION], ReapSettings(now=NOW))
    assert dry.cloud == "alicloud" and dry.account == ali.account.account_id
    assert acted(dry) == expected
    assert {o.status for o in dry.outcomes if o.action != KEEP} == {WOULD}
    assert ali.account.state() == before, "a dry run must change nothing"
    assert not any(a.startswith("Delete") or a.startswith("Release") for a in ali.stub.counts())

    reported = {o.id: o for o in dry.outcomes}
    unmanaged = {fleet[n] for n in ("i_unmanaged", "d_unmanaged", "e_unmanaged", "s_unmanaged", "m_unmanaged")}
    assert not unmanaged & set(reported)
    assert "grace period" in reported[fleet["i_in_grace"]].reason
    assert f"no {TAG_EXPIRES_AT} tag" in reported[fleet["i_no_deadline"]].reason
    assert "not an RFC 3339 time" in reported[fleet["i_bad_deadline"]].reason
    assert "did not release it" in reported[fleet["i_expired_release_time_passed"]].reason
    assert reported[fleet["d_attached"]].reason.startswith(f"attached to {fleet['i_live']}")
    assert "treated as retained" in reported[fleet["d_no_retain_tag"]].reason
    assert reported[fleet["d_retained"]].reason == f"{TAG_RETAIN}=true"
    assert reported[fleet["d_parked"]].action == KEEP
    assert reported[fleet["d_parked"]].reason == f"{TAG_PHASE}=parked: its stack is parked and keeps this disk"
    assert reported[fleet["d_creating"]].reason == "state is creating"
    assert reported[fleet["e_associated"]].reason == f"associated with {fleet['i_live']}"
    assert reported[fleet["s_progressing"]].reason == "state is pending"
    assert reported[fleet["e_associating"]].reason == "state is associating"
    assert reported[fleet["s_experiment_running"]].reason.startswith("its experiment runs until")
    assert reported[fleet["d_left_behind"]].kind == "disk" and reported[fleet["e_free_expired"]].kind == "eip"

    done = sweep(ali.clients(), [REGION], ReapSettings(now=NOW, execute=True))
    assert not done.failed, done.as_dict()
    assert acted(done) == expected
    assert {o.status for o in done.outcomes if o.action != KEEP} == {DONE}
    after = ali.account.state()
    assert set(before) - set(after) == set(expected), "exactly the expected resources went"
    assert all(after[rid] == before[rid] for rid in after), "nothing that stayed changed"
    # The image went before the snapshot it was made from (DeleteSnapshot refuses that snapshot otherwise).
    assert fleet["s_of_image"] not in after

    calls_before = ali.stub.count()
    rerun = sweep(ali.clients(), [REGION], ReapSettings(now=NOW, execute=True))
    assert not rerun.failed and acted(rerun) == {}
    assert ali.account.state() == after
    assert not any(a.startswith(("Delete", "Release")) for a, _ in ali.stub.calls[calls_before:])


def test_listings_filter_on_the_managed_tag_server_side_and_page_at_each_ceiling(ali):
    for _ in range(230):
        ali.account.add_instance(REGION, tags(expires=FUTURE))
    for _ in range(120):
        ali.account.add_eip(REGION, tags(expires=FUTURE))
    for _ in range(30):
        ali.account.add_instance(REGION, tags(managed=False, expires=PAST))

    inventory = collect_region(ali.clients(), REGION, buckets=False)

    assert inventory.errors == []
    assert len(inventory.instances) == 230 and len(inventory.addresses) == 120
    calls: dict[str, list[dict]] = {}
    for action, params in ali.stub.calls:
        calls.setdefault(action, []).append(params)
    # Every listing asks only for the managed tag, at the largest page its API serves.
    for action in ("DescribeInstances", "DescribeDisks", "DescribeSnapshots", "DescribeImages", "DescribeEipAddresses"):
        for params in calls[action]:
            assert (params["Tag.1.Key"], params["Tag.1.Value"]) == (TAG_MANAGED_BY, MANAGED_BY_VALUE), action
            assert "Tag.2.Key" not in params
    assert [p["MaxResults"] for p in calls["DescribeInstances"]] == ["100", "100", "100"]
    assert [bool(p.get("NextToken")) for p in calls["DescribeInstances"]] == [False, True, True]
    assert [p["MaxResults"] for p in calls["DescribeDisks"]] == ["500"]
    assert [(p["PageSize"], p["PageNumber"]) for p in calls["DescribeEipAddresses"]] == [("100", "1"), ("100", "2")]
    assert calls["DescribeImages"][0]["ImageOwnerAlias"] == "self"


def test_delete_instances_carries_at_most_100_ids(ali):
    expired = {ali.account.add_instance(REGION, tags(expires=PAST)) for _ in range(150)}
    report = sweep(ali.clients(), [REGION], ReapSettings(now=NOW, execute=True))
    assert not report.failed
    assert {o.id for o in report.outcomes if o.status == DONE} == expired
    batches = [[v for k, v in p.items() if k.startswith("InstanceId.")] for a, p in ali.stub.calls if a == "DeleteInstances"]
    assert sorted(len(b) for b in batches) == [50, 100]
    assert all(p.get("Force") in ("True", "true") for a, p in ali.stub.calls if a == "DeleteInstances")
    assert not ali.account.instances


def test_an_instance_released_in_between_is_reported_gone_and_the_rest_of_its_batch_goes(ali):
    first, second, third = (ali.account.add_instance(REGION, tags(expires=PAST)) for _ in range(3))
    settings = ReapSettings(now=NOW, execute=True)
    decisions = plan_region(collect_region(ali.clients(), REGION, buckets=False), settings)
    # ECS releases one at its release time after the listing. DeleteInstances answers InvalidInstanceId.NotFound
    # without naming it, so the batch is sent again one id at a time.
    del ali.account.instances[second]
    outcomes = {o.id: o.status for o in execute_region(ali.clients(), REGION, decisions, settings)}
    assert outcomes == {first: DONE, second: GONE, third: DONE}
    assert not ali.account.instances


def test_disks_left_by_released_instances_are_swept_by_the_next_run(ali):
    (holder,) = (ali.account.add_instance(REGION, tags(expires=PAST)),)
    keeps = ali.account.add_disk(REGION, tags(retain=False), attach_to=holder, delete_with_instance=False)
    goes_with_it = ali.account.add_disk(REGION, tags(retain=False), attach_to=holder, delete_with_instance=True)
    first = sweep(ali.clients(), [REGION], ReapSettings(now=NOW, execute=True))
    assert acted(first) == {holder: TERMINATE}
    assert goes_with_it not in ali.account.disks and ali.account.disks[keeps].status == "Available"
    second = sweep(ali.clients(), [REGION], ReapSettings(now=NOW, execute=True))
    assert acted(second) == {keeps: DELETE} and not ali.account.disks


def test_account_not_on_allowlist_is_refused_before_any_listing(ali):
    ali.account.add_instance(REGION, tags(expires=PAST))
    with pytest.raises(AwsTargetError, match=f"account {ali.account.account_id} is not on the allowlist"):
        sweep(ali.clients(), [REGION], ReapSettings(now=NOW, execute=True), ["1111"])
    assert set(ali.stub.counts()) == {"GetCallerIdentity"}
    assert len(ali.account.instances) == 1


def test_snapshot_before_delete_is_refused_on_alibaba_cloud(ali):
    with pytest.raises(AlicloudOptionError, match="DiskCreatingSnapshot"):
        sweep(ali.clients(), [REGION], ReapSettings(now=NOW, execute=True, snapshot_before_delete=True))
    assert ali.stub.count() == 0


def test_cli_reap_and_ls_on_alibaba_cloud(ali, capsys):
    expired = ali.account.add_instance(REGION, tags(expires=PAST))
    live = ali.account.add_instance(OTHER_REGION, tags(expires=FUTURE))
    disk = ali.account.add_disk(REGION, tags(retain=False), attach_to=expired)
    ali.account.add_bucket(REGION, "gpulease-ckpt-exp1", tags(retain=True))
    ali.account.add_bucket(OTHER_REGION, "someone-elses", tags(managed=False))
    regions = f"{REGION},{OTHER_REGION}"

    assert main(["ls", "--cloud", "alicloud", "--region", regions, "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    rows = {r["id"]: r for r in listing["resources"]}
    assert listing["cloud"] == "alicloud" and set(rows) == {expired, live, disk, "gpulease-ckpt-exp1"}
    assert rows[disk]["kind"] == "disk" and rows[disk]["attachedTo"] == [expired]
    assert rows[disk]["deleteWithInstance"] is False
    assert rows["gpulease-ckpt-exp1"]["retain"] == "true" and rows["gpulease-ckpt-exp1"]["region"] == REGION
    assert rows[live]["region"] == OTHER_REGION and rows[live]["state"] == "running"
    assert main(["ls", "--cloud", "alicloud", "--region", regions]) == 0
    table = capsys.readouterr().out
    assert "(alicloud)" in table and disk in table and f"attached to {expired}" in table

    assert main(["reap", "--cloud", "alicloud", "--region", regions, "--json"]) == 0
    dry = json.loads(capsys.readouterr().out)
    assert dry["cloud"] == "alicloud" and dry["executed"] is False
    assert {(o["id"], o["action"], o["status"]) for o in dry["outcomes"]} == {
        (expired, TERMINATE, WOULD),
        (live, KEEP, KEPT),
        (disk, KEEP, KEPT),
    }
    account = ali.account.account_id
    args = ["reap", "--cloud", "alicloud", "--region", regions, "--execute", "--allowed-account", account]
    assert main(args) == 0
    table = capsys.readouterr().out
    assert "gpulease reap (alicloud)" in table and expired in table
    assert expired not in ali.account.instances and ali.account.disks[disk].status == "Available"
    assert "gpulease-ckpt-exp1" in ali.account.buckets, "buckets are never deleted"


def test_the_managed_tag_is_checked_again_client_side_when_the_server_ignores_the_filter(ali):
    ours = ali.account.add_disk(REGION, tags(retain=False))
    foreign = ali.account.add_disk(REGION, tags(managed=False, retain=False, extra={TAG_MANAGED_BY: "someone-else"}))
    bare = ali.account.add_disk(REGION, tags(managed=False, retain=False))
    (_, describe_disks), = [(k, h) for k, h in ali.stub.handlers.items() if k[1] == "DescribeDisks"]

    def ignoring_tags(request):
        # A server (or a proxy) that drops the Tag.N filter answers with every disk of the region.
        request.params = {k: v for k, v in request.params.items() if not k.startswith("Tag.")}
        return describe_disks(request)

    ali.stub.register("2014-05-26", "DescribeDisks", ignoring_tags)
    try:
        listed = collect_region(ali.clients(), REGION, buckets=False)
        report = sweep(ali.clients(), [REGION], ReapSettings(now=NOW, execute=True))
    finally:
        ali.stub.register("2014-05-26", "DescribeDisks", describe_disks)
    assert [v.id for v in listed.volumes] == [ours], "the listing (what ls prints) drops foreign disks itself"
    assert {o.id: o.action for o in report.outcomes} == {ours: DELETE}
    assert set(ali.account.disks) == {foreign, bare}
