"""The Alibaba Cloud sweep under faults injected by the stub: Throttling.User and 5xx answers are retried by the
SDK's configured retry policy, a batch that keeps failing is reported and the sweep goes on, a bad signature is
refused, and nothing that should stay is ever lost."""

from __future__ import annotations

import json

import pytest

from gpulease.cli import main
from gpulease.inventory.acting import DONE, FAILED
from gpulease.inventory.alicloud_clients import THROTTLING_CODES
from gpulease.inventory.alicloud_reaper import sweep
from gpulease.inventory.decide import TERMINATE, ReapSettings
from tests.support.alicloud_inventory import REGION
from tests.support.inventory import FUTURE, NOW, PAST, retain_until, tags


def fleet(account) -> tuple[set[str], set[str]]:
    """(ids the sweep must remove, ids it must keep)."""
    remove: set[str] = set()
    keep: set[str] = set()
    remove.update(account.add_instance(REGION, tags(expires=PAST)) for _ in range(3))
    live = account.add_instance(REGION, tags(expires=FUTURE))
    keep.add(live)
    keep.add(account.add_instance(REGION, tags(managed=False, expires=PAST)))
    remove.update(account.add_disk(REGION, tags(retain=False)) for _ in range(3))
    keep.add(account.add_disk(REGION, tags(retain=True)))
    keep.add(account.add_disk(REGION, tags(retain=False), attach_to=live))
    keep.add(account.add_disk(REGION, tags(managed=False, retain=False)))
    remove.update(account.add_eip(REGION, tags()) for _ in range(2))
    keep.add(account.add_eip(REGION, tags(), associate_with=live))
    remove.add(account.add_snapshot(REGION, tags(extra=retain_until(PAST))))
    keep.add(account.add_snapshot(REGION, tags(extra=retain_until(FUTURE))))
    remove.add(account.add_image(REGION, tags(extra=retain_until(PAST))))
    return remove, keep


TRANSIENT = {
    "GetCallerIdentity": (1, "Throttling.User", 400),
    "DescribeInstances": (2, "Throttling.User", 400),
    "DescribeDisks": (1, "InternalError", 500),
    "DescribeEipAddresses": (1, "ServiceUnavailable", 503),
    "DescribeSnapshots": (1, "Throttling.User", 400),
    "DescribeImages": (1, "InternalError", 500),
    "DeleteInstances": (2, "Throttling.User", 400),
    "DeleteDisk": (3, "InternalError", 500),
    "ReleaseEipAddress": (1, "Throttling.User", 400),
    "DeleteSnapshot": (1, "ServiceUnavailable", 503),
    "DeleteImage": (1, "Throttling.User", 400),
}


def test_throttling_and_5xx_are_retried_by_the_sdk_and_nothing_is_lost(ali):
    remove, keep = fleet(ali.account)
    before = ali.account.state()
    for action, (count, code, status) in TRANSIENT.items():
        ali.stub.faults.add(action, count, code, status)

    report = sweep(ali.clients(max_attempts=5), [REGION], ReapSettings(now=NOW, execute=True))

    assert ali.stub.faults.served() == {a: p[0] for a, p in TRANSIENT.items()}, "every planned fault was served"
    assert not report.failed, report.as_dict()
    assert {o.id for o in report.outcomes if o.status == DONE} == remove
    after = ali.account.state()
    assert set(before) - set(after) == remove
    assert all(after[i] == before[i] for i in keep)


def test_retries_stop_at_the_configured_attempts(ali):
    ali.account.add_instance(REGION, tags(expires=PAST))
    ali.stub.faults.add("DescribeInstances", 100, "Throttling.User", 400)
    report = sweep(ali.clients(max_attempts=3), [REGION], ReapSettings(now=NOW, execute=True))
    assert ali.stub.count("DescribeInstances") == 3
    assert any("listing instances failed: Throttling.User" in e for e in report.errors)
    assert len(ali.account.instances) == 1
    assert "Throttling.User" in THROTTLING_CODES


def test_a_batch_that_keeps_failing_is_reported_and_the_sweep_goes_on(ali):
    remove, keep = fleet(ali.account)
    before = ali.account.state()
    ali.stub.faults.add("DeleteInstances", 1000, "ServiceUnavailable", 503)

    report = sweep(ali.clients(max_attempts=2), [REGION], ReapSettings(now=NOW, execute=True))

    assert report.failed
    instances = {o.id for o in report.outcomes if o.action == TERMINATE}
    failed = {o.id: o for o in report.outcomes if o.status == FAILED}
    assert set(failed) == instances and len(instances) == 3
    assert all("ServiceUnavailable" in o.detail for o in failed.values())
    after = ali.account.state()
    assert set(before) - set(after) == remove - instances
    assert all(after[i] == "Running" for i in instances)
    assert all(after[i] == before[i] for i in keep)


def test_cli_exits_1_with_a_report_when_an_action_fails(ali, capsys):
    expired = ali.account.add_instance(REGION, tags(expires=PAST))
    disk = ali.account.add_disk(REGION, tags(retain=False))
    ali.stub.faults.add("DeleteInstances", 1000, "InternalError", 500)
    code = main(["reap", "--cloud", "alicloud", "--region", REGION, "--execute", "--max-attempts", "2", "--json"])
    out = capsys.readouterr()
    assert code == 1 and "some actions or listings failed" in out.err
    statuses = {o["id"]: o["status"] for o in json.loads(out.out)["outcomes"]}
    assert statuses == {expired: FAILED, disk: DONE}
    assert expired in ali.account.instances and disk not in ali.account.disks


@pytest.mark.parametrize("secret", ["not-the-secret"])
def test_a_request_signed_with_the_wrong_secret_is_refused(ali, monkeypatch, capsys, secret):
    from alibabacloud_credentials.utils import auth_util

    ali.account.add_instance(REGION, tags(expires=PAST))
    monkeypatch.setattr(auth_util, "environment_access_key_secret", secret)
    code = main(["reap", "--cloud", "alicloud", "--region", REGION, "--execute"])
    err = capsys.readouterr().err
    assert code == 1
    assert "SignatureDoesNotMatch" in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert len(ali.account.instances) == 1
