"""``gpulease size --nodes N``: a workload across the nodes of a cluster, with the network between them per type."""

from __future__ import annotations

import argparse
from typing import Any

from rich.table import Table

from gpulease.cli.common import stale_json, stale_warning, wide_console
from gpulease.cli.conventions import error_entry, print_json
from gpulease.core import clock
from gpulease.core.catalog import Catalog
from gpulease.core.catalog.freshness import DatedPrice, describe_catalog, stale
from gpulease.core.catalog.models import date_label
from gpulease.core.money import usd_per_hour
from gpulease.core.sizing import Workload
from gpulease.core.sizing.cluster import MFU, ClusterOffer, find_cluster_offers


def run(args: argparse.Namespace, workload: Workload, catalog: Catalog, region: str) -> int:
    offers = find_cluster_offers(workload, catalog, args.cloud, region, nodes=args.nodes, parallel=args.parallel,
                                 gpus=args.gpus, headroom=args.headroom)
    shown = offers if args.limit <= 0 else offers[: args.limit]
    now = clock.utcnow()
    old = stale([DatedPrice(f"{o.instance.type} on-demand in {o.region}", o.instance.price_date(o.region)) for o in shown],
                now, args.max_price_age)
    if args.json:
        doc = {
            "workload": workload.describe(), "cloud": args.cloud, "region": region, "nodes": args.nodes,
            "parallel": args.parallel, "headroom": args.headroom, "mfu": MFU, "offers": [o.as_dict() for o in offers],
            "priceCatalog": describe_catalog(catalog), "maxPriceAgeDays": args.max_price_age,
            "stalePrices": stale_json(old, now),
        }
        errors = [] if offers else [error_entry("no-fit", f"no {args.cloud} instance type in {region} holds "
                                                f"{workload.describe()} on {args.nodes} nodes")]
        print_json("size", doc, ok=bool(offers), errors=errors, legacy=doc)
        return 0 if offers else 1
    console = wide_console()
    how = "ZeRO-3: states sharded over every GPU" if args.parallel == "zero3" else "data parallel: states on every GPU"
    console.print(f"[bold]{workload.describe()}[/bold] on {args.nodes} nodes ({how})")
    if not offers:
        console.print(f"[red]No {args.cloud} instance type in {region} holds this on {args.nodes} nodes with "
                      f"{args.headroom:.0%} headroom.[/red] Try --parallel zero3, more --nodes, --grad-checkpointing or "
                      "a smaller --batch.")
        return 1
    console.print(_table(shown, len(offers), args.cloud, region, args.nodes))
    grouped: dict[str, list[str]] = {}
    for offer in shown:
        for warning in offer.warnings:
            grouped.setdefault(warning, []).append(offer.instance.type)
    for warning, types in grouped.items():
        console.print(f"[yellow]warning[/yellow] ({', '.join(types)}): {warning}")
    console.print(f"Step times: communication through each node's network (ZeRO-3 3·P·b, data parallel 2·T·b, times "
                  f"(n−1)/n) against compute at {MFU:.0%} of the GPUs' bf16 peak; see docs/clusters.md#sizing-and-cost. "
                  f"Prices: on-demand USD/h from the {describe_catalog(catalog)}.")
    if (warning := stale_warning(old, now, args.max_price_age)) is not None:
        console.print(f"[yellow]warning[/yellow]: {warning}")
    return 0


def _seconds(value: float | None) -> str:
    return "?" if value is None else f"{value:.2f}"


def _table(offers: list[ClusterOffer], total: int, cloud: str, region: str, nodes: int) -> Table:
    more = f", {total - len(offers)} more with --limit 0" if total > len(offers) else ""
    table = Table(title=f"{cloud} types in {region} that hold it on {nodes} nodes, cheapest cluster first{more}",
                  title_justify="left")
    for col, justify in (
        ("instance type", "left"), ("GPUs per node", "left"), ("need/GPU GB", "right"), ("within a node", "left"),
        ("between nodes", "left"), ("comm s/step", "right"), ("compute s/step", "right"), ("per node", "right"),
        ("cluster", "right"), ("price date", "left"),
    ):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for o in offers:
        it: Any = o.instance
        table.add_row(
            it.type, it.describe_gpus(), f"{o.estimate.total_gb:.1f}", o.within_node, o.fabric.title,
            _seconds(o.comm_seconds), _seconds(o.compute_seconds), usd_per_hour(o.node_usd), usd_per_hour(o.cluster_usd),
            date_label(it.price_date(o.region)),
        )
    return table
