"""Property: over generated fleets on moto's server, only expired, managed, non-retained resources change; a dry
run changes nothing; sweeping again converges (the only second-round work is what the first round freed)."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpulease.inventory.reaper import KEEP, ReapSettings, sweep
from tests.support.inventory import (
    FUTURE,
    NOW,
    PAST,
    REGION,
    MotoAws,
    address,
    changed,
    empty_account,
    launch,
    launch_spot,
    retain_until,
    snapshot,
    state,
    tags,
    volume,
)

EXPIRY = {"past": PAST, "future": FUTURE, "none": None}


@dataclass(frozen=True)
class InstanceSpec:
    managed: bool
    expiry: str
    spot: bool


@dataclass(frozen=True)
class VolumeSpec:
    managed: bool
    expiry: str
    retain: bool | None
    attach: int | None


@dataclass(frozen=True)
class AddressSpec:
    managed: bool
    expiry: str
    retain: bool | None
    associate: int | None


@dataclass(frozen=True)
class SnapshotSpec:
    managed: bool
    retain: bool | None
    retain_until: str


expiries = st.sampled_from(list(EXPIRY))
retains = st.sampled_from([True, False, None])
links = st.one_of(st.none(), st.integers(0, 2))
fleets = st.tuples(
    st.lists(st.builds(InstanceSpec, st.booleans(), expiries, st.booleans()), min_size=1, max_size=3),
    st.lists(st.builds(VolumeSpec, st.booleans(), expiries, retains, links), max_size=3),
    st.lists(st.builds(AddressSpec, st.booleans(), expiries, retains, links), max_size=2),
    st.lists(st.builds(SnapshotSpec, st.booleans(), retains, st.sampled_from(["past", "future", "none"])), max_size=2),
)


def expired(managed: bool, expiry: str) -> bool:
    return managed and expiry == "past"


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fleet=fleets)
def test_only_expired_managed_unretained_resources_change(moto_server: MotoAws, fleet) -> None:
    with empty_account(moto_server):
        check_fleet(moto_server, fleet)


def check_fleet(moto_server: MotoAws, fleet) -> None:
    ec2 = moto_server.client("ec2")
    instance_specs, volume_specs, address_specs, snapshot_specs = fleet

    should_change: set[str] = set()
    freed_later: set[str] = set()  # only reachable once the first sweep terminated what held them
    instance_ids: list[str] = []
    for spec in instance_specs:
        values = tags(managed=spec.managed, expires=EXPIRY[spec.expiry])
        if spec.spot:
            request_id, instance_id = launch_spot(ec2, values)
            if expired(spec.managed, spec.expiry):
                should_change.add(request_id)
        else:
            (instance_id,) = launch(ec2, values)
        instance_ids.append(instance_id)
        if expired(spec.managed, spec.expiry):
            should_change.add(instance_id)
    terminated = set(instance_ids) & should_change

    for n, spec in enumerate(volume_specs):
        holder = instance_ids[spec.attach] if spec.attach is not None and spec.attach < len(instance_ids) else None
        vid = volume(
            ec2,
            tags(managed=spec.managed, expires=EXPIRY[spec.expiry], retain=spec.retain),
            attach_to=holder,
            device=f"/dev/sd{'fghij'[n]}",
        )
        if expired(spec.managed, spec.expiry) and spec.retain is False:
            (should_change if holder is None else freed_later if holder in terminated else set()).add(vid)
    for spec in address_specs:
        holder = (
            instance_ids[spec.associate] if spec.associate is not None and spec.associate < len(instance_ids) else None
        )
        aid = address(
            ec2, tags(managed=spec.managed, expires=EXPIRY[spec.expiry], retain=spec.retain), associate_with=holder
        )
        if expired(spec.managed, spec.expiry) and spec.retain is not True:
            (should_change if holder is None else freed_later if holder in terminated else set()).add(aid)
    for spec in snapshot_specs:
        extra = retain_until(EXPIRY[spec.retain_until]) if spec.retain_until != "none" else {}
        sid = snapshot(ec2, tags(managed=spec.managed, expires=None, retain=spec.retain, extra=extra))
        # Without retain-until, a snapshot is kept for 30 days from its start (now), so it stays.
        if spec.managed and spec.retain is not True and spec.retain_until == "past":
            should_change.add(sid)

    before = state(ec2)
    clients = moto_server.clients()

    dry = sweep(clients, [REGION], ReapSettings(now=NOW))
    assert state(ec2) == before
    assert {o.id for o in dry.outcomes if o.action != KEEP} == should_change

    first = sweep(clients, [REGION], ReapSettings(now=NOW, execute=True))
    assert not first.failed, first.as_dict()
    after_first = state(ec2)
    assert changed(before, after_first) == should_change

    second = sweep(clients, [REGION], ReapSettings(now=NOW, execute=True))
    assert not second.failed, second.as_dict()
    after_second = state(ec2)
    assert changed(after_first, after_second) <= freed_later

    third = sweep(clients, [REGION], ReapSettings(now=NOW, execute=True))
    assert {o.id for o in third.outcomes if o.action != KEEP} == set()
    assert state(ec2) == after_second
