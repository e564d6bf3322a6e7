"""The sweep's two-step lookup: deciding tags through DescribeTags, then a fresh description of the candidates only,
right before acting. Tags alone never lead to an action."""

from __future__ import annotations

from collections import Counter

from gpulease.core.vocabulary import MANAGED_BY_VALUE, TAG_EXPIRES_AT, TAG_MANAGED_BY, TAG_RETAIN, rfc3339
from gpulease.inventory.lookup import DECIDING_TAG_KEYS, managed_tags
from gpulease.inventory.reaper import DELETE, DONE, KEEP, TERMINATE, ReapSettings, sweep
from tests.support.inventory import FUTURE, NOW, PAST, REGION, changed, launch, launch_spot, state, tags, volume


def record_calls(clients) -> list[tuple[str, dict]]:
    calls: list[tuple[str, dict]] = []
    clients.session.events.register(
        "provide-client-params.ec2", lambda params, model, **_: calls.append((model.name, dict(params)))
    )
    return calls


def test_only_candidates_are_described_and_tags_are_read_with_server_side_filters(aws):
    ec2 = aws.client("ec2")
    expired = set(launch(ec2, tags(expires=PAST), count=3))
    live = set(launch(ec2, tags(expires=FUTURE), count=4))
    unmanaged = set(launch(ec2, tags(managed=False, expires=PAST), count=2))
    sir, serving = launch_spot(ec2, tags(expires=FUTURE))
    doomed = {volume(ec2, tags(retain=False)) for _ in range(2)}
    retained = {volume(ec2, tags(retain=True)) for _ in range(2)}
    young = volume(ec2, tags(retain=False, expires=FUTURE))
    foreign = volume(ec2, tags(managed=False, retain=False))
    clients = aws.clients(fresh=True)
    calls = record_calls(clients)

    report = sweep(clients, [REGION], ReapSettings(now=NOW))

    by_op: dict[str, list[dict]] = {}
    for op, params in calls:
        by_op.setdefault(op, []).append(params)
    # One DescribeTags, filtered server-side on resource type and the deciding keys, 1,000 rows a page.
    (tag_call,) = by_op["DescribeTags"]
    assert {f["Name"]: sorted(f["Values"]) for f in tag_call["Filters"]} == {
        "resource-type": ["instance", "volume"],
        "key": sorted(DECIDING_TAG_KEYS),
    }
    assert tag_call["MaxResults"] == 1000
    # Only the expired instances and the instance that a live spot request serves are described, by id, live only.
    # (The live spot requests' own instances are read first, by the instance-id filter, to judge the requests.)
    request_call, instance_call = by_op["DescribeInstances"]
    assert request_call["Filters"] == [{"Name": "instance-id", "Values": [serving]}]
    assert set(instance_call["InstanceIds"]) == expired | {serving}
    assert instance_call["Filters"] == [
        {"Name": "instance-state-name", "Values": ["pending", "running", "stopping", "stopped"]}
    ]
    # Only the expired retain=false volumes are described; retained, young and unmanaged ones never are.
    (volume_call,) = by_op["DescribeVolumes"]
    assert set(volume_call["VolumeIds"]) == doomed
    # Nothing else is described: no unfiltered listing of the account.
    assert Counter(op for op, _ in calls) == Counter(
        {
            "DescribeTags": 1,
            "DescribeInstances": 2,
            "DescribeVolumes": 1,
            "DescribeSpotInstanceRequests": 1,
            "DescribeAddresses": 1,
            "DescribeSnapshots": 1,
            "DescribeImages": 1,  # the account's managed images, server-side filtered (baked images)
        }
    )

    outcomes = {o.id: o for o in report.outcomes}
    assert {rid for rid, o in outcomes.items() if o.action != KEEP} == expired | doomed
    assert {outcomes[i].action for i in expired} == {TERMINATE}
    assert {outcomes[v].action for v in doomed} == {DELETE}
    # Kept resources are still reported, each with the reason its tags give.
    assert all(outcomes[i].reason.startswith("expires at") for i in live)
    assert {outcomes[v].reason for v in retained} == {f"{TAG_RETAIN}=true"}
    assert outcomes[young].reason.startswith("expires at")
    assert outcomes[sir].reason == f"serves instance {serving}"
    assert outcomes[serving].action == KEEP
    assert not (unmanaged | {foreign}) & set(outcomes)


def test_managed_tags_drops_resources_whose_managed_by_tag_is_missing_or_foreign(aws):
    ec2 = aws.client("ec2")
    (ours,) = launch(ec2, tags(expires=PAST))
    (bare,) = launch(ec2, tags(managed=False, expires=PAST))
    (lookalike,) = launch(ec2, {**tags(managed=False), TAG_MANAGED_BY: "someone-else"})
    vol = volume(ec2, tags(retain=False, extra={"team": "ml"}))

    found = managed_tags(aws.client("ec2"))

    assert set(found.of("instance")) == {ours}
    assert found.of("instance")[ours][TAG_MANAGED_BY] == MANAGED_BY_VALUE
    # Only the deciding keys are read: the description of a candidate brings the rest.
    assert set(found.of("volume")[vol]) == {TAG_MANAGED_BY, TAG_EXPIRES_AT, TAG_RETAIN}
    assert {bare, lookalike}.isdisjoint(found.of("instance"))


def test_tags_changed_after_they_were_read_are_decided_on_the_fresh_description(aws):
    ec2 = aws.client("ec2")
    (unmanaged_since,) = launch(ec2, tags(expires=PAST))
    (extended,) = launch(ec2, tags(expires=PAST))
    (goes,) = launch(ec2, tags(expires=PAST))
    retained_since = volume(ec2, tags(retain=False))
    before = state(ec2)
    clients = aws.clients(fresh=True)

    def change_tags(**_) -> None:
        # Between the tag read and the describe: someone takes one instance over, extends another's deadline and
        # marks a volume to retain. The sweep must act on none of them.
        ec2.delete_tags(Resources=[unmanaged_since], Tags=[{"Key": TAG_MANAGED_BY}])
        ec2.create_tags(Resources=[extended], Tags=[{"Key": TAG_EXPIRES_AT, "Value": rfc3339(FUTURE)}])
        ec2.create_tags(Resources=[retained_since], Tags=[{"Key": TAG_RETAIN, "Value": "true"}])

    clients.session.events.register("after-call.ec2.DescribeTags", change_tags)

    report = sweep(clients, [REGION], ReapSettings(now=NOW, execute=True))

    assert not report.failed, report.as_dict()
    assert {o.id for o in report.outcomes if o.status == DONE} == {goes}
    outcomes = {o.id: o for o in report.outcomes}
    assert unmanaged_since not in outcomes
    assert outcomes[extended].action == KEEP and outcomes[extended].reason.startswith("expires at")
    assert outcomes[retained_since].action == KEEP and outcomes[retained_since].reason == f"{TAG_RETAIN}=true"
    assert changed(before, state(ec2)) == {goes}


def test_candidates_gone_since_the_tag_read_are_skipped_and_the_rest_is_still_described(aws):
    ec2 = aws.client("ec2")
    gone = volume(ec2, tags(retain=False))
    stays = volume(ec2, tags(retain=False))
    (terminated,) = launch(ec2, tags(expires=PAST))
    (running,) = launch(ec2, tags(expires=PAST))
    clients = aws.clients(fresh=True)
    calls = record_calls(clients)

    def remove_some(**_) -> None:
        ec2.delete_volume(VolumeId=gone)
        ec2.terminate_instances(InstanceIds=[terminated])

    clients.session.events.register("after-call.ec2.DescribeTags", remove_some)

    report = sweep(clients, [REGION], ReapSettings(now=NOW, execute=True))

    assert not report.failed, report.as_dict()
    assert {o.id: o.action for o in report.outcomes if o.status == DONE} == {stays: DELETE, running: TERMINATE}
    assert gone not in {o.id for o in report.outcomes}
    # The id call failed with InvalidVolume.NotFound; the batch was asked again through the volume-id filter.
    volume_calls = [p for op, p in calls if op == "DescribeVolumes"]
    assert set(volume_calls[0]["VolumeIds"]) == {gone, stays}
    assert volume_calls[1]["Filters"] == [{"Name": "volume-id", "Values": sorted([gone, stays])}]
    assert len(volume_calls) == 2
