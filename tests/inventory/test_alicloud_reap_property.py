"""Property: over generated Alibaba Cloud fleets, only expired, managed, non-retained resources change; a dry run
changes nothing; sweeping again converges (the only second-round work is what the first round freed); faults
injected on every action lose nothing."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpulease.inventory.alicloud_reaper import sweep
from gpulease.inventory.decide import KEEP, ReapSettings
from tests.support.alicloud_inventory import REGION, AliStub, offline_credentials
from tests.support.inventory import FUTURE, NOW, PAST, retain_until, tags

EXPIRY = {"past": PAST, "future": FUTURE, "none": None}
DISK_STATES = ["Available", "Available", "Creating", "ReIniting"]


@dataclass(frozen=True)
class InstanceSpec:
    managed: bool
    expiry: str
    released_at_deadline: bool


@dataclass(frozen=True)
class DiskSpec:
    managed: bool
    expiry: str
    retain: bool | None
    attach: int | None
    delete_with_instance: bool
    status: str


@dataclass(frozen=True)
class EipSpec:
    managed: bool
    expiry: str
    retain: bool | None
    associate: int | None


@dataclass(frozen=True)
class CopySpec:
    managed: bool
    retain: bool | None
    retain_until: str
    image: bool


expiries = st.sampled_from(list(EXPIRY))
retains = st.sampled_from([True, False, None])
links = st.one_of(st.none(), st.integers(0, 2))
fleets = st.tuples(
    st.lists(st.builds(InstanceSpec, st.booleans(), expiries, st.booleans()), min_size=1, max_size=3),
    st.lists(st.builds(DiskSpec, st.booleans(), expiries, retains, links, st.booleans(), st.sampled_from(DISK_STATES)),
             max_size=4),
    st.lists(st.builds(EipSpec, st.booleans(), expiries, retains, links), max_size=3),
    st.lists(st.builds(CopySpec, st.booleans(), retains, st.sampled_from(["past", "future", "none"]), st.booleans()),
             max_size=3),
    st.booleans(),
)

FAULTS = {
    "DescribeInstances": (1, "Throttling.User", 400),
    "DescribeDisks": (1, "InternalError", 500),
    "DeleteInstances": (1, "Throttling.User", 400),
    "DeleteDisk": (1, "ServiceUnavailable", 503),
    "ReleaseEipAddress": (1, "Throttling.User", 400),
    "DeleteSnapshot": (1, "InternalError", 500),
    "DeleteImage": (1, "Throttling.User", 400),
}


def expired(managed: bool, expiry: str) -> bool:
    return managed and expiry == "past"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fleet=fleets)
def test_only_expired_managed_unretained_resources_change(ali_server: AliStub, monkeypatch, fleet) -> None:
    with monkeypatch.context() as mp:
        offline_credentials(mp)
        ali_server.reset()
        check_fleet(ali_server, fleet)


def check_fleet(ali: AliStub, fleet) -> None:
    account = ali.account
    instance_specs, disk_specs, eip_specs, copy_specs, with_faults = fleet
    should_change: set[str] = set()
    freed_later: set[str] = set()  # reachable only once the first sweep released what held them
    gone_with_holder: set[str] = set()  # released by ECS together with their instance (DeleteWithInstance)
    instance_ids = []
    for spec in instance_specs:
        rid = account.add_instance(REGION, tags(managed=spec.managed, expires=EXPIRY[spec.expiry]),
                                   release_time=EXPIRY[spec.expiry] if spec.released_at_deadline else None)
        instance_ids.append(rid)
        if expired(spec.managed, spec.expiry):
            should_change.add(rid)
    released = set(instance_ids) & should_change
    for spec in disk_specs:
        holder = instance_ids[spec.attach] if spec.attach is not None and spec.attach < len(instance_ids) else None
        rid = account.add_disk(REGION, tags(managed=spec.managed, expires=EXPIRY[spec.expiry], retain=spec.retain),
                               attach_to=holder, delete_with_instance=spec.delete_with_instance,
                               status=None if holder else spec.status)
        if holder in released and spec.delete_with_instance:
            gone_with_holder.add(rid)
        elif expired(spec.managed, spec.expiry) and spec.retain is False:
            if holder is None and spec.status == "Available":
                should_change.add(rid)
            elif holder in released:
                freed_later.add(rid)
    for spec in eip_specs:
        holder = instance_ids[spec.associate] if spec.associate is not None and spec.associate < len(instance_ids) else None
        rid = account.add_eip(REGION, tags(managed=spec.managed, expires=EXPIRY[spec.expiry], retain=spec.retain),
                              associate_with=holder)
        if expired(spec.managed, spec.expiry) and spec.retain is not True:
            (should_change if holder is None else freed_later if holder in released else set()).add(rid)
    for spec in copy_specs:
        extra = retain_until(EXPIRY[spec.retain_until]) if spec.retain_until != "none" else {}
        values = tags(managed=spec.managed, expires=None, retain=spec.retain, extra=extra)
        rid = account.add_image(REGION, values) if spec.image else account.add_snapshot(REGION, values)
        # Without retain-until a copy is kept for 30 days from its creation (now), so it stays.
        if spec.managed and spec.retain is not True and spec.retain_until == "past":
            should_change.add(rid)

    before = account.state()
    clients = ali.clients(max_attempts=3)

    dry = sweep(clients, [REGION], ReapSettings(now=NOW))
    assert account.state() == before
    assert {o.id for o in dry.outcomes if o.action != KEEP} == should_change

    if with_faults:
        for action, (count, code, status) in FAULTS.items():
            ali.stub.faults.add(action, count, code, status)
    first = sweep(clients, [REGION], ReapSettings(now=NOW, execute=True))
    assert not first.failed, first.as_dict()
    after_first = account.state()
    assert set(before) - set(after_first) == should_change | gone_with_holder

    second = sweep(clients, [REGION], ReapSettings(now=NOW, execute=True))
    assert not second.failed, second.as_dict()
    after_second = account.state()
    assert set(after_first) - set(after_second) <= freed_later

    third = sweep(clients, [REGION], ReapSettings(now=NOW, execute=True))
    assert {o.id for o in third.outcomes if o.action != KEEP} == set()
    assert account.state() == after_second
