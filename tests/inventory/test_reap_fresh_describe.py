"""The rules applied again to the fresh description of a candidate volume, right before acting (AWS, moto).

Each test changes the volume between the tag read (DescribeTags, where it was a candidate) and the describe by
id, and each pins one rule that only that second step enforces:
- a retain tag that disappeared counts as retained;
- an unattached volume in any state other than ``available`` (here ``creating``) is kept;
- a volume that lost its managed-by tag is not the sweep's any more.
"""

from __future__ import annotations

from gpulease.core.vocabulary import TAG_MANAGED_BY, TAG_RETAIN
from gpulease.inventory.decide import DELETE, KEEP, ReapSettings
from gpulease.inventory.reaper import DONE, sweep
from tests.support.inventory import NOW, REGION, changed, state, tags, volume


def sweep_with(aws, between) -> tuple[object, dict[str, str]]:
    """Sweep with ``between(**event)`` run right after the tag read; returns the report and the state before."""
    ec2 = aws.client("ec2")
    before = state(ec2)
    clients = aws.clients(fresh=True)
    clients.session.events.register("after-call.ec2.DescribeTags", between)
    return sweep(clients, [REGION], ReapSettings(now=NOW, execute=True)), before


def test_a_retain_tag_removed_after_the_tag_read_keeps_the_volume(aws):
    ec2 = aws.client("ec2")
    loses_retain = volume(ec2, tags(retain=False))
    goes = volume(ec2, tags(retain=False))

    report, before = sweep_with(aws, lambda **_: ec2.delete_tags(Resources=[loses_retain], Tags=[{"Key": TAG_RETAIN}]))

    outcomes = {o.id: o for o in report.outcomes}
    assert (outcomes[loses_retain].action, outcomes[loses_retain].reason) == (
        KEEP,
        f"no readable {TAG_RETAIN} tag; treated as retained",
    )
    assert (outcomes[goes].action, outcomes[goes].status) == (DELETE, DONE)
    assert changed(before, state(ec2)) == {goes}


def test_an_unattached_volume_that_is_not_available_is_kept(aws):
    ec2 = aws.client("ec2")
    creating = volume(ec2, tags(retain=False))
    goes = volume(ec2, tags(retain=False))
    ec2_clients = aws.clients(fresh=True)

    def still_creating(parsed, **_) -> None:
        # moto creates volumes available at once; the fresh description says this one is still being created.
        for vol in parsed.get("Volumes", []):
            if vol["VolumeId"] == creating:
                vol["State"] = "creating"

    ec2_clients.session.events.register("after-call.ec2.DescribeVolumes", still_creating)
    before = state(ec2)
    report = sweep(ec2_clients, [REGION], ReapSettings(now=NOW, execute=True))

    outcomes = {o.id: o for o in report.outcomes}
    assert (outcomes[creating].action, outcomes[creating].reason) == (KEEP, "state is creating")
    assert (outcomes[goes].action, outcomes[goes].status) == (DELETE, DONE)
    assert changed(before, state(ec2)) == {goes}


def test_a_volume_that_lost_its_managed_by_tag_after_the_tag_read_is_not_touched(aws):
    ec2 = aws.client("ec2")
    taken_over = volume(ec2, tags(retain=False))
    goes = volume(ec2, tags(retain=False))

    report, before = sweep_with(aws, lambda **_: ec2.delete_tags(Resources=[taken_over], Tags=[{"Key": TAG_MANAGED_BY}]))

    assert taken_over not in {o.id for o in report.outcomes}, "an unmanaged volume is not even reported"
    assert {o.id for o in report.outcomes if o.status == DONE} == {goes}
    assert changed(before, state(ec2)) == {goes}
