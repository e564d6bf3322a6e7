"""API calls of an Alibaba Cloud sweep against the minimum the fleet needs, on the loopback stub.

The stub (``tests/support/alicloud_stub``) counts every request it serves, by action. The minimum for a sweep with
gpulease's scope (one filtered listing per kind at each API's page ceiling, then the actions in the API's batch
sizes) is computed from the fleet in the same run:

    min = 1                                   STS GetCallerIdentity (the account check)
        + max(1, ceil(managed instances / 100))     DescribeInstances (MaxResults 100)
        + max(1, ceil(managed disks / 500))         DescribeDisks (MaxResults 500)
        + max(1, ceil(managed snapshots / 100))     DescribeSnapshots (MaxResults 100)
        + max(1, ceil(managed images / 100))        DescribeImages (PageSize 100)
        + max(1, ceil(managed EIPs / 100))          DescribeEipAddresses (PageSize 100)
        + ceil(released instances / 100)            DeleteInstances (100 ids a call)
        + EIPs + disks + images + snapshots         one call each (no batch API)

Target: calls / min <= 1.05. Exits 1 when the target is missed or when the sweep removed anything it should not
have (or missed anything it should have removed).

    .venv/bin/python bench/alicloud_reap_bench.py                 # the default fleet
    .venv/bin/python bench/alicloud_reap_bench.py --scale 0.1     # a quick look
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

KEY_ID, SECRET = "LTAI-gpulease-bench", "gpulease-bench-secret"
# alibabacloud_credentials reads these once, at import: set them first. No metadata service, no profile file.
os.environ.update(
    ALIBABA_CLOUD_ACCESS_KEY_ID=KEY_ID,
    ALIBABA_CLOUD_ACCESS_KEY_SECRET=SECRET,
    ALIBABA_CLOUD_ECS_METADATA_DISABLED="true",
    ALIBABA_CLOUD_CLI_PROFILE_DISABLED="true",
)

from gpulease.core.vocabulary import (  # noqa: E402
    MANAGED_BY_VALUE,
    TAG_EXPIRES_AT,
    TAG_MANAGED_BY,
    TAG_RETAIN,
    TAG_RETAIN_UNTIL,
    rfc3339,
)
from gpulease.inventory.alicloud_clients import AlicloudClients  # noqa: E402
from gpulease.inventory.alicloud_reaper import sweep  # noqa: E402
from gpulease.inventory.decide import ReapSettings  # noqa: E402
from tests.support.alicloud_stub import Account, AlicloudStub, install  # noqa: E402

REGION = "cn-hangzhou"
NOW = datetime.now(UTC).replace(microsecond=0)
PAST, FUTURE = rfc3339(NOW - timedelta(days=2)), rfc3339(NOW + timedelta(days=2))


def tags(*, managed: bool = True, expires: str | None = PAST, retain: str | None = None,
         until: str | None = None) -> dict[str, str]:
    out = {"team": "ml"}
    if managed:
        out[TAG_MANAGED_BY] = MANAGED_BY_VALUE
    if expires:
        out[TAG_EXPIRES_AT] = expires
    if retain:
        out[TAG_RETAIN] = retain
    if until:
        out[TAG_RETAIN_UNTIL] = until
    return out


def build(account: Account, scale: float) -> tuple[set[str], dict[str, int]]:
    """The fleet; returns the ids the sweep must remove and the managed count per kind."""
    n = lambda count: max(1, round(count * scale))  # noqa: E731
    remove: set[str] = set()
    live = [account.add_instance(REGION, tags(expires=FUTURE)) for _ in range(n(800))]
    remove |= {account.add_instance(REGION, tags()) for _ in range(n(1000))}
    for _ in range(n(200)):
        account.add_instance(REGION, tags(managed=False))
    remove |= {account.add_disk(REGION, tags(retain="false")) for _ in range(n(500))}
    for _ in range(n(200)):
        account.add_disk(REGION, tags(retain="true"))
    for _ in range(n(200)):
        account.add_disk(REGION, tags(retain="false", expires=FUTURE))
    for _ in range(n(100)):
        account.add_disk(REGION, tags(managed=False, retain="false"))
    remove |= {account.add_eip(REGION, tags()) for _ in range(n(100))}
    for i in range(n(50)):
        account.add_eip(REGION, tags(), associate_with=live[i % len(live)])
    for _ in range(n(30)):
        account.add_eip(REGION, tags(expires=FUTURE))
    for _ in range(n(20)):
        account.add_eip(REGION, tags(managed=False))
    remove |= {account.add_snapshot(REGION, tags(expires=None, until=PAST)) for _ in range(n(50))}
    for _ in range(n(50)):
        account.add_snapshot(REGION, tags(expires=None, until=FUTURE))
    remove |= {account.add_image(REGION, tags(expires=None, until=PAST)) for _ in range(n(10))}
    for _ in range(n(10)):
        account.add_image(REGION, tags(expires=None, until=FUTURE))
    managed = {
        "instances": sum(1 for r in account.instances.values() if TAG_MANAGED_BY in r.tags),
        "disks": sum(1 for r in account.disks.values() if TAG_MANAGED_BY in r.tags),
        "eips": sum(1 for r in account.eips.values() if TAG_MANAGED_BY in r.tags),
        "snapshots": len(account.snapshots),
        "images": len(account.images),
    }
    return remove, managed


def minimum(managed: dict[str, int], removed: dict[str, int]) -> dict[str, int]:
    pages = {"instances": 100, "disks": 500, "snapshots": 100, "images": 100, "eips": 100}
    listing = {
        "DescribeInstances": "instances",
        "DescribeDisks": "disks",
        "DescribeSnapshots": "snapshots",
        "DescribeImages": "images",
        "DescribeEipAddresses": "eips",
    }
    out = {"GetCallerIdentity": 1}
    out.update({action: max(1, math.ceil(managed[kind] / pages[kind])) for action, kind in listing.items()})
    out["DeleteInstances"] = math.ceil(removed["instance"] / 100)
    out["ReleaseEipAddress"] = removed["eip"]
    out["DeleteDisk"] = removed["disk"]
    out["DeleteImage"] = removed["image"]
    out["DeleteSnapshot"] = removed["snapshot"]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="fleet size relative to the default fleet")
    args = parser.parse_args()

    stub = AlicloudStub({KEY_ID: SECRET}).start()
    account = Account()
    install(stub, account)
    try:
        remove, managed = build(account, args.scale)
        before = account.state()
        clients = AlicloudClients(endpoint=stub.endpoint, backoff_ms=1)
        started = time.monotonic()
        report = sweep(clients, [REGION], ReapSettings(now=NOW, execute=True))
        wall = time.monotonic() - started
    finally:
        stub.stop()

    after = account.state()
    gone = set(before) - set(after)
    correct = gone == remove and not report.failed
    removed: dict[str, int] = {"instance": 0, "eip": 0, "disk": 0, "image": 0, "snapshot": 0}
    for outcome in report.outcomes:
        if outcome.status == "done":
            removed[outcome.kind] += 1
    floor = minimum(managed, removed)
    calls = stub.counts()
    total, least = sum(calls.values()), sum(floor.values())
    ratio = total / least

    print(f"fleet: {len(before)} resources, {sum(managed.values())} managed, {len(remove)} to remove; "
          f"sweep {wall:.2f} s")
    print("| action | calls | minimum |")
    print("|---|---:|---:|")
    for action in sorted(set(calls) | set(floor)):
        print(f"| {action} | {calls.get(action, 0)} | {floor.get(action, 0)} |")
    print(f"| **total** | **{total}** | **{least}** |")
    met = ratio <= 1.05
    print(f"calls / minimum = {ratio:.3f} (target <= 1.05: {'met' if met else 'MISSED'}); "
          f"removed as expected: {'yes' if correct else 'NO'}")
    return 0 if met and correct else 1


if __name__ == "__main__":
    raise SystemExit(main())
