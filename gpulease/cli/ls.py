"""``gpulease ls``: every gpulease-managed resource (AWS or Alibaba Cloud) in the given regions, with deadline and
cost so far."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from typing import Any

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

from gpulease.cli.conventions import error_entry, print_json
from gpulease.cli.shown import shown
from gpulease.cli.wrap import wrapped
from gpulease.core import clock
from gpulease.core.money import usd, usd_per_hour, usd_per_month
from gpulease.core.vocabulary import TAG_EXPERIMENT, TAG_EXPIRES_AT, TAG_OWNER, TAG_RETAIN, TAG_RETAIN_UNTIL
from gpulease.inventory import aws
from gpulease.inventory.options import add_cloud_options, clients_from_args, output_console, resolve_regions
from gpulease.inventory.pricing import age_hours, hourly_price, spend_so_far, stopped_hourly, storage_monthly
from gpulease.inventory.resources import (
    Address,
    Bucket,
    Image,
    Instance,
    RegionInventory,
    Resource,
    Snapshot,
    SpotRequest,
    Volume,
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ls", help="list every gpulease-managed resource (--cloud aws|alicloud): state, deadline, price")
    add_cloud_options(p)
    p.add_argument("--no-buckets", dest="buckets", action="store_false", help="skip the bucket listing")
    p.set_defaults(func=run)


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment else None


def row(resource: Resource, now: datetime, cloud: str = "aws", inventory: RegionInventory | None = None) -> dict[str, Any]:
    """One resource as a flat record (the JSON output; the table shows a subset). ``inventory`` (the resource's
    region) gives a stopped instance its volumes, addresses and spot request."""
    # A spot request is shown with the tags it is judged by: its own, else its instance's.
    tags = resource.deciding_tags if isinstance(resource, SpotRequest) else resource.tags
    base: dict[str, Any] = {
        "region": resource.region,
        "kind": resource.kind,
        "id": resource.id,
        "owner": tags.get(TAG_OWNER),
        "experiment": tags.get(TAG_EXPERIMENT),
        "expiresAt": tags.get(TAG_EXPIRES_AT),
        "retain": tags.get(TAG_RETAIN),
    }
    if isinstance(resource, Instance):
        age = age_hours(resource, now)
        base.update(
            state=resource.state,
            instanceType=resource.instance_type,
            market=resource.market,
            launchTime=_iso(resource.launch_time),
            ageHours=round(age, 2) if age is not None else None,
            hourlyUsd=hourly_price(resource, cloud),
            spendUsd=spend_so_far(resource, now, cloud),
            spotRequestId=resource.spot_request_id,
            releaseTime=_iso(resource.release_time),
        )
        if resource.state == "stopped" and inventory is not None:
            request = next((r for r in inventory.spot_requests if r.instance_id == resource.id
                            or r.id == resource.spot_request_id), None)
            # Stopped: no instance hours, only its volumes and addresses (gpulease.core.cost.stopped).
            # Every volume attached to it counts, tagged or not (``attached_volumes``), each once.
            volumes = list({vol.id: vol for vol in (*inventory.volumes, *inventory.attached_volumes)}.values())
            base.update(hourlyUsd=stopped_hourly(resource, volumes, inventory.addresses, cloud),
                        stoppedBilling="volumes and address only" if cloud == "aws" else "depends on the stop mode",
                        stoppedByReclaim=bool(request and request.stopped_by_reclaim))
    elif isinstance(resource, SpotRequest):
        base.update(
            state=resource.state,
            requestType=resource.request_type or None,
            statusCode=resource.status_code,
            interruption=resource.interruption,
            instanceId=resource.instance_id,
            instanceState=resource.instance_state,
            managed=resource.managed_by_tags_of is not None,
            managedBy=resource.managed_by_tags_of,
            instanceGone=resource.orphaned,
            createTime=_iso(resource.create_time),
        )
    elif isinstance(resource, Volume):
        base.update(
            state=resource.state,
            sizeGb=resource.size_gb,
            volumeType=resource.volume_type,
            attachedTo=list(resource.attached_to),
            createTime=_iso(resource.create_time),
            deleteWithInstance=resource.delete_with_instance,
        )
    elif isinstance(resource, Address):
        base.update(
            publicIp=resource.public_ip,
            associated=bool(resource.association_id or resource.instance_id),
            instanceId=resource.instance_id,
            state=resource.state,
        )
    elif isinstance(resource, Snapshot):
        base.update(
            state=resource.state,
            volumeId=resource.volume_id,
            sizeGb=resource.size_gb,
            startTime=_iso(resource.start_time),
            retainUntil=tags.get(TAG_RETAIN_UNTIL),
            monthlyUsd=storage_monthly(resource.size_gb, resource.region, cloud),
        )
    elif isinstance(resource, Image):
        base.update(
            state=resource.state,
            name=resource.name,
            createTime=_iso(resource.create_time),
            retainUntil=tags.get(TAG_RETAIN_UNTIL),
            sizeGb=resource.size_gb or None,
            snapshotIds=list(resource.snapshot_ids),
            monthlyUsd=storage_monthly(resource.size_gb, resource.region, cloud),
        )
    elif isinstance(resource, Bucket):
        base.update(arn=resource.arn)
    return base


def _detail(r: dict[str, Any]) -> str:
    kind = r["kind"]
    if kind == "instance" and not r.get("stoppedBilling"):
        return f"{r['instanceType']} {r['market']}"
    if kind in ("volume", "disk"):
        return f"{r['sizeGb']} GiB {r['volumeType']}; " + (
            f"attached to {', '.join(r['attachedTo'])}" if r["attachedTo"] else "unattached"
        )
    if kind == "instance" and r.get("releaseTime"):
        return f"{r['instanceType']} {r['market']}; released at {r['releaseTime']}"
    if kind == "image":
        return (r["name"] + (f"; {r['sizeGb']} GiB" if r.get("sizeGb") else "")
                + (f" in {', '.join(r['snapshotIds'])}" if r.get("snapshotIds") else "")
                + (f"; retained until {r['retainUntil']}" if r.get("retainUntil") else ""))
    if kind in ("address", "eip"):
        return f"{r['publicIp']}; " + (f"associated with {r['instanceId'] or '?'}" if r["associated"] else "unassociated")
    if kind == "snapshot":
        return f"{r['sizeGb']} GiB of {r['volumeId'] or '?'}" + (
            f"; retained until {r['retainUntil']}" if r.get("retainUntil") else ""
        )
    if kind == "spot-request":
        held = f"instance {r['instanceId'] or '-'}" + (f" ({r['instanceState']})" if r.get("instanceState") else "")
        text = " ".join(x for x in (r.get("requestType"), r.get("interruption")) if x)
        text += f"; {r['statusCode']}" if r.get("statusCode") else ""
        text += f"; {held}; " + (f"managed by its {r['managedBy']}'s tags" if r["managed"] else "NOT managed")
        if r.get("instanceGone"):
            text = "INSTANCE GONE, a new one will be launched; " + text
        return text.lstrip("; ")
    if kind == "instance" and r.get("stoppedBilling"):
        return f"{r['instanceType']} {r['market']}; stopped" + (" by a reclaim" if r.get("stoppedByReclaim") else "") \
            + f": {r['stoppedBilling']}"
    return ""


def _money(value: float | None, show: Any = usd) -> str:
    return "-" if value is None else show(value)


def rows(inventories: list[RegionInventory], now: datetime, cloud: str = "aws") -> list[dict[str, Any]]:
    """Every resource's record; first the dangerous ones: persistent spot requests whose instance is gone (EC2
    launches a new instance for them)."""
    out = [row(res, now, cloud, inv) for inv in inventories for res in inv.resources()]
    return sorted(out, key=lambda r: not r.get("instanceGone"))


def orphan_warning(records: list[dict[str, Any]]) -> str | None:
    """One line naming the persistent requests whose instance is gone, and who cancels them."""
    orphans = [r for r in records if r.get("instanceGone")]
    if not orphans:
        return None
    named = ", ".join(f"{r['id']} ({r['region']}, {r['state']}, {'managed' if r['managed'] else 'NOT managed'})"
                      for r in orphans)
    return (f"{len(orphans)} persistent spot request(s) whose instance is gone will launch new instances: {named}; "
            "`gpulease reap --execute` cancels a managed one past its deadline, an unmanaged one is its owner's to "
            "cancel (aws ec2 cancel-spot-instance-requests)")


def print_table(inventories: list[RegionInventory], now: datetime, console: Console, cloud: str = "aws") -> None:
    table = Table(title=f"gpulease-managed resources ({cloud})", show_lines=False)
    for column in ("region", "kind", "id", "owner / experiment", "state", "detail", "age", "expires at", "retain", "per hour",
                   "spent", "per month"):
        table.add_column(column, justify="right" if column in ("age", "per hour", "spent", "per month") else "left")
    total_monthly = 0.0
    total_hourly = 0.0
    total_stopped: float | None = 0.0
    any_stopped = False
    total_spent = 0.0
    records = rows(inventories, now, cloud)
    for r in records:
        if r.get("state") == "running":
            total_hourly += r.get("hourlyUsd") or 0.0
        if r["kind"] == "instance" and r.get("stoppedBilling") and cloud == "aws":
            any_stopped = True
            # One stopped instance of unknown cost makes the total unknown, never a smaller number.
            total_stopped = None if total_stopped is None or r.get("hourlyUsd") is None else total_stopped + r["hourlyUsd"]
        total_spent += r.get("spendUsd") or 0.0
        age = r.get("ageHours")
        state = r.get("state") or ""
        table.add_row(*map(shown, (
            r["region"],
            r["kind"],
            r["id"],
            f"{r['owner'] or '-'} / {r['experiment'] or '-'}",
        )),
            f"[bold red]{shown(state)} (!)[/bold red]" if r.get("instanceGone") else shown(state),
            *map(shown, (
                _detail(r),
                "" if age is None else f"{age:.1f}h",
                r["expiresAt"] or "-",
                r["retain"] or "",
                _money(r.get("hourlyUsd"), usd_per_hour) if r["kind"] == "instance" else "",
                _money(r.get("spendUsd")) if r["kind"] == "instance" else "",
                _money(r.get("monthlyUsd"), usd_per_month) if r["kind"] in ("image", "snapshot") else "",
            )),
        )
        total_monthly += r.get("monthlyUsd") or 0.0
    if Measurement.get(console, console.options.update_width(10_000), table).maximum <= console.width:
        console.print(table)
    else:  # narrower than the rows: a block per resource, so that no id, name or price is cut short
        _print_blocks(records, console, table.title)
    console.print(f"running instances cost {_money(total_hourly, usd_per_hour)}; spent so far {_money(total_spent)} (estimate)"
                  + (f"; stopped instances {usd_per_hour(total_stopped)}"
                     " (volumes and address only)" if any_stopped else "")
                  + (f"; images and snapshots store for {_money(total_monthly, usd_per_month)}" if total_monthly else ""))
    if (warning := orphan_warning(records)) is not None:
        console.print(f"[bold red]warning[/bold red]: {shown(warning)}", soft_wrap=True)


def _print_blocks(records: list[dict[str, Any]], console: Console, title: Any) -> None:
    """Each resource as its id and kind on a line, then its other fields wrapped under it."""
    console.print(str(title), markup=False)
    for r in records:
        state = f"{r.get('state') or ''}{' (!)' if r.get('instanceGone') else ''}"
        age = r.get("ageHours")
        fields = [("owner / experiment", f"{r['owner'] or '-'} / {r['experiment'] or '-'}"), ("detail", _detail(r)),
                  ("age", "" if age is None else f"{age:.1f}h"), ("expires at", r["expiresAt"] or "-"),
                  ("retain", r["retain"] or "")]
        if r["kind"] == "instance":
            fields += [("per hour", _money(r.get("hourlyUsd"), usd_per_hour)), ("spent", _money(r.get("spendUsd")))]
        if r["kind"] in ("image", "snapshot"):
            fields.append(("per month", _money(r.get("monthlyUsd"), usd_per_month)))
        console.print(f"{r['id']}  {r['kind']} in {r['region']}, {state}".rstrip(", "), markup=False, overflow="ignore",
                      crop=False)
        shown = "; ".join(f"{name} {value}" for name, value in fields if value)
        console.print(wrapped(f"    {shown}", console.width, hang=4), markup=False, overflow="ignore", crop=False)


def collect_inventories(args: argparse.Namespace, regions: list[str]) -> list[RegionInventory]:
    clients = clients_from_args(args)
    if args.cloud == "alicloud":
        from gpulease.inventory.alicloud_collect import collect as collect_alicloud

        return collect_alicloud(clients, regions, buckets=args.buckets)
    from gpulease.inventory.collect import collect as collect_aws

    try:
        return collect_aws(clients, regions, buckets=args.buckets)
    except aws.CREDENTIAL_ERRORS as exc:
        raise aws.credentials_problem(exc) from None


def run(args: argparse.Namespace) -> int:
    regions = resolve_regions(args.region)
    now = clock.utcnow()
    inventories = collect_inventories(args, regions)
    errors = [e for inv in inventories for e in inv.errors]
    if args.format == "json":
        payload = {
            "cloud": args.cloud,
            "regions": regions,
            "at": now.isoformat(),
            "resources": (records := rows(inventories, now, args.cloud)),
            "orphanedSpotRequests": [r["id"] for r in records if r.get("instanceGone")],
            "errors": errors,
        }
        print_json("ls", payload, ok=not errors, legacy=payload,
                   errors=[error_entry("listing-failed", str(e)) for e in errors])
    else:
        print_table(inventories, now, output_console(), args.cloud)
    for error in errors:
        print(f"gpulease ls: {error}", file=sys.stderr)
    return 1 if errors else 0
