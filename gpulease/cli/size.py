"""``gpulease size``: how much GPU memory a workload needs, and the instance types that hold it, cheapest first."""

from __future__ import annotations

import argparse
from typing import Any

from rich import box
from rich.table import Table

from gpulease.cli.common import add_max_age_option, catalog_overrides, stale_json, stale_warning, wide_console
from gpulease.cli.conventions import camel_keys, error_entry, print_json
from gpulease.core import clock
from gpulease.core.catalog import OVERRIDES_ENV, CatalogError, load_catalog
from gpulease.core.catalog.freshness import DatedPrice, describe_catalog, stale
from gpulease.core.catalog.models import date_label
from gpulease.core.flag_numbers import number
from gpulease.core.money import usd_per_hour
from gpulease.core.sizing import (
    DEFAULT_HEADROOM,
    METHODS,
    OPTIMIZERS,
    PRECISIONS,
    WORKLOAD_SETTINGS,
    Workload,
    estimate,
    find_offers,
    model_shape,
)
from gpulease.core.sizing.workload import default

DEFAULT_REGION = {"aws": "us-east-1", "alicloud": "cn-hangzhou"}

_TRAINING_ROWS = (
    ("weights", "weights_gb", "P·b (qlora: P·0.516) + adapters T·b"),
    ("gradients", "gradients_gb", "T·b"),
    ("optimizer states", "optimizer_gb", "AdamW moments T·8 (8-bit: T·2) + fp32 master T·4 in mixed precision"),
    ("activations", "activations_gb", "L·s·B·h·34·b/2 (checkpointing: L·2·s·B·h·b/2 + one layer) + logits"),
    ("framework overhead", "overhead_gb", "1 GB CUDA context + 10 % fragmentation"),
)
_INFERENCE_ROWS = (
    ("weights", "weights_gb", "P·b (qlora: P·0.516)"),
    ("KV cache", "kv_cache_gb", "2·L·kv_heads·head_dim·s·B·b"),
    ("activations", "activations_gb", "prefill working set s·B·(4h + 2·ffn)·b + logits"),
    ("framework overhead", "overhead_gb", "1 GB CUDA context + 10 % fragmentation"),
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "size",
        help="estimate GPU memory for training or serving a model and list the instance types that fit",
        description="Estimate GPU memory per GPU (weights, gradients, optimizer states, activations, overhead) "
        "and list the catalog's instance types that hold it with headroom, cheapest first.",
    )
    p.add_argument("--params", required=True, help="model size: a preset (1B 3B 7B 8B 13B 14B 32B 34B 70B 405B) or e.g. 7e9")
    # The workload's options: one per setting of ``Workload``, named and defaulted after it (see _run).
    p.add_argument("--method", choices=METHODS, default=default("method"))
    p.add_argument("--precision", choices=PRECISIONS, default=default("precision"))
    p.add_argument("--seq-len", type=_positive, default=default("seq_len"),
                   help=f"tokens per sequence (default {default('seq_len')})")
    p.add_argument("--batch", type=_positive, default=default("batch"),
                   help=f"sequences per step, split across GPUs (default {default('batch')})")
    p.add_argument("--gpus", type=_positive, help="only instance types with this many GPUs")
    # A cluster (gpulease/cli/size_cluster.py): the workload across several nodes, with the network between them.
    p.add_argument("--nodes", type=_positive, default=1, help="fit across this many nodes of one type (default 1)")
    p.add_argument("--parallel", choices=("zero3", "ddp"), default="zero3",
                   help="with --nodes: zero3 shards the states over every GPU, ddp replicates them (default zero3)")
    p.add_argument("--grad-checkpointing", action="store_true", default=default("grad_checkpointing"),
                   help="recompute activations in the backward pass")
    p.add_argument("--inference", action="store_true", default=default("inference"),
                   help="size for serving: weights + KV cache")
    p.add_argument("--cloud", choices=tuple(DEFAULT_REGION), default="aws")
    p.add_argument("--region", help="price region (default: us-east-1 on aws, cn-hangzhou on alicloud)")
    p.add_argument("--lora-rank", type=_positive, default=default("lora_rank"))
    p.add_argument("--headroom", type=number("a fraction", 0, 0.9, example="0.1"), default=DEFAULT_HEADROOM, help="fraction of GPU memory kept free (default 0.1)")
    p.add_argument("--optimizer", choices=OPTIMIZERS, default=default("optimizer"),
                   help="adamw, or adamw-8bit (bitsandbytes)")
    p.add_argument("--no-master-weights", dest="master_weights", action="store_false", default=default("master_weights"),
                   help="pure bf16 training: no fp32 master copy of the weights")
    p.add_argument("--eager-attention", dest="flash_attention", action="store_false", default=default("flash_attention"),
                   help="attention without FlashAttention/SDPA (stores scores)")
    shape = p.add_argument_group("explicit model shape (instead of, or on top of, a preset)")
    shape.add_argument("--hidden", type=_positive)
    shape.add_argument("--layers", type=_positive)
    shape.add_argument("--heads", type=_positive)
    shape.add_argument("--kv-heads", type=_positive)
    p.add_argument("--limit", type=number("a number of offers", 0, 100_000, whole=True, example="10"), default=10, help="show this many offers (0: all)")
    p.add_argument("--catalog", action="append", metavar="FILE", help=f"a catalog override file (also {OVERRIDES_ENV})")
    add_max_age_option(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


_positive = number("a whole number of at least 1", 1, 10**9, whole=True, accepted="1 or more", example="8")


def run(args: argparse.Namespace) -> int:
    with catalog_overrides(args.catalog):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    try:
        shape = model_shape(args.params, hidden=args.hidden, layers=args.layers, heads=args.heads, kv_heads=args.kv_heads)
    except ValueError as exc:
        raise CatalogError(f"--params: {exc}") from None
    workload = Workload(shape=shape, **{name: getattr(args, name) for name in WORKLOAD_SETTINGS})
    catalog = load_catalog()
    region = args.region or DEFAULT_REGION[args.cloud]
    if args.region is not None:
        from components.spec.regions import region_problems

        # A typo named as one, with the nearest region.
        for _, problem in region_problems(args.cloud, region, {}, "--region", cloud_setting="--cloud ", owner="--cloud"):
            raise CatalogError(f"--region: {problem}")
    if region not in catalog.regions_of(args.cloud):
        raise CatalogError(
            f"--region: the catalog has no {args.cloud} prices in {region}; priced regions: "
            f"{', '.join(catalog.regions_of(args.cloud))} (add one with --catalog FILE)"
        )
    if args.nodes > 1:
        from gpulease.cli import size_cluster  # only a cluster's sizing needs the fabric table

        return size_cluster.run(args, workload, catalog, region)
    offers = find_offers(workload, catalog, args.cloud, region, gpus=args.gpus, headroom=args.headroom)
    breakdown = estimate(workload, args.gpus or 1)
    shown = offers if args.limit <= 0 else offers[: args.limit]
    now = clock.utcnow()
    old = stale(offer_prices(shown), now, args.max_price_age)
    if args.json:
        out = _as_json(workload, breakdown, offers, args, region, catalog.as_of)
        out.update(priceCatalog=describe_catalog(catalog), maxPriceAgeDays=args.max_price_age, stalePrices=stale_json(old, now))
        print_json("size", camel_keys(out), ok=bool(offers), legacy=out,
                   errors=[] if offers else [error_entry("no-fit", f"no {args.cloud} instance type in {region} holds "
                                                        "this workload")])
        return 0 if offers else 1
    console = wide_console()
    console.print(f"[bold]{workload.describe()}[/bold]")
    console.print(_breakdown_table(breakdown, workload))
    if not offers:
        console.print(
            f"[red]No {args.cloud} instance type in {region} holds this with {args.headroom:.0%} headroom.[/red] "
            "Try --method lora/qlora, --grad-checkpointing, a smaller --batch or --seq-len, or more GPUs."
        )
        return 1
    if console.width < NARROW_WIDTH:
        for line in offers_lines(shown, len(offers), args.cloud, region):
            console.print(line, overflow="fold")
    else:
        console.print(_offers_table(shown, len(offers), args.cloud, region, console.width))
    if console.width < DATED_WIDTH:
        console.print(price_dates_line(shown), overflow="fold")
    if (hint := smaller_gpu_hint(workload, catalog, args, region, offers)) is not None:
        console.print(hint, overflow="fold")
    grouped: dict[str, list[str]] = {}
    for offer in shown:
        for warning in offer.warnings:
            grouped.setdefault(warning, []).append(offer.instance.type)
    for warning, types in grouped.items():
        console.print(f"[yellow]warning[/yellow] ({', '.join(types)}): {warning}")
    console.print(
        f"Prices: on-demand USD/h from the {describe_catalog(catalog)}, each price dated in the table; spot is the cheapest zone's "
        "current price where a refresh recorded one, else on-demand less the family's typical discount (est.)."
    )
    if (warning := stale_warning(old, now, args.max_price_age)) is not None:
        console.print(f"[yellow]warning[/yellow]: {warning}")
    return 0


SMALLER_SETTINGS = (
    ({"grad_checkpointing": True}, "--grad-checkpointing"),
    ({"batch": 1}, "--batch 1"),
    ({"batch": 1, "grad_checkpointing": True}, "--batch 1 --grad-checkpointing"),
)
"""Settings ``size`` tries when the cheapest fit needs a big GPU: what a user changes first to fit a smaller one."""


def smaller_gpu_hint(workload: Workload, catalog: Any, args: argparse.Namespace, region: str,
                     offers: list[Any]) -> str | None:
    """One line naming the setting that fits a one-GPU type with less memory than the cheapest fit's, or None."""
    if not offers or workload.inference:
        return None
    single = [o for o in offers if o.instance.gpu_count == 1]
    smallest = min((o.instance.gpu_memory_gb for o in single), default=None)
    for changes, flags in SMALLER_SETTINGS:
        if all(getattr(workload, k) == v for k, v in changes.items()):
            continue
        settings = {name: getattr(workload, name) for name in WORKLOAD_SETTINGS}
        tried = Workload(shape=workload.shape, **{**settings, **changes})
        found = [o for o in find_offers(tried, catalog, args.cloud, region, gpus=1, headroom=args.headroom)
                 if smallest is None or o.instance.gpu_memory_gb < smallest]
        if found:
            best = found[0]
            return (f"smaller GPU: with {flags} this needs {best.estimate.total_gb:.1f} GB per GPU and fits "
                    f"{best.instance.type} ({best.instance.describe_gpus()}, {usd_per_hour(best.on_demand_usd)} on-demand)")
    return None


def offer_prices(offers: list[Any]) -> list[DatedPrice]:
    """The dated prices the offers show: each on-demand price, and each current spot price."""
    found = []
    for o in offers:
        found.append(DatedPrice(f"{o.instance.type} on-demand in {o.region}", o.on_demand_as_of))
        if o.spot_zone:
            found.append(DatedPrice(f"{o.instance.type} spot in {o.spot_zone}", o.spot_as_of))
    return found


def _breakdown_table(est: Any, workload: Workload) -> Table:
    title = f"memory per GPU ({est.gpus} GPU{'s' if est.gpus > 1 else ''})"
    table = Table(title=title, title_justify="left")
    table.add_column("component", overflow="fold")
    table.add_column("GB", justify="right", no_wrap=True)
    table.add_column("formula", overflow="fold")  # a long formula wraps, never ends in …
    for label, attr, formula in _INFERENCE_ROWS if workload.inference else _TRAINING_ROWS:
        table.add_row(label, f"{getattr(est, attr):.1f}", formula)
    trainable = "" if workload.inference else f"T = {est.trainable_params / 1e6:,.0f}M trainable parameters"
    table.add_row("[bold]total[/bold]", f"[bold]{est.total_gb:.1f}[/bold]", trainable)
    return table


def _offers_table(offers: list[Any], total: int, cloud: str, region: str, width: int = 160) -> Table:
    """Instance types and prices never end in ``…`` (they do not wrap; other cells do). From 120 columns the
    bandwidth, link, vCPU, RAM and price date columns too; below, the dates are said under the table."""
    more = f", {total - len(offers)} more with --limit 0" if total > len(offers) else ""
    wide = width >= 120
    table = Table(title=f"{cloud} instance types in {region} that fit, cheapest first{more}", title_justify="left",
                  box=box.SIMPLE_HEAD, pad_edge=False)
    columns = [("instance type", "left", True), ("GPUs", "left", False), ("need/GPU GB", "right", True),
               ("free GB", "right", True)]
    if wide:
        columns += [("mem BW GB/s", "right", True), ("link", "left", True), ("vCPU", "right", True),
                    ("RAM GB", "right", True)]
    columns += [("on-demand", "right", True), ("spot", "right", True)]
    dated = width >= DATED_WIDTH
    if dated:
        columns.append(("price date", "left", False))
    for col, justify, key in columns:
        table.add_column(col, justify=justify, no_wrap=key, overflow="fold")  # type: ignore[arg-type]
    for o in offers:
        it = o.instance
        link = "NVLink" if it.interconnect == "nvlink" else "PCIe"
        if it.gpu_count > 1 and it.interconnect == "pcie":
            link = "[yellow]PCIe (!)[/yellow]"
        row = [it.type, it.describe_gpus(), f"{o.estimate.total_gb:.1f}", f"{o.headroom_gb:.1f}"]
        if wide:
            row += [f"{it.memory_bandwidth_gbps:g}", link, str(it.vcpu), f"{it.ram_gb:g}"]
        row += [usd_per_hour(o.on_demand_usd), f"{usd_per_hour(o.spot_usd)} {o.spot_zone}" if o.spot_zone
                else f"{usd_per_hour(o.spot_usd)} est."]
        if dated:
            row.append(date_label(o.on_demand_as_of) + (f" (spot {date_label(o.spot_as_of)})" if o.spot_zone else ""))
        table.add_row(*row)
    return table


NARROW_WIDTH = 64
"""Below this many columns the offers are a list, one block per type: a table of six columns would cut them."""
DATED_WIDTH = 150
"""From this many columns the table has a price date column; below, the dates are one line under it."""


def offers_lines(offers: list[Any], total: int, cloud: str, region: str) -> list[str]:
    """The offers for a narrow terminal: the type and its GPUs on one line, its fit and prices indented below
    (wrapped between words, never cut)."""
    more = f", {total - len(offers)} more with --limit 0" if total > len(offers) else ""
    out = [f"{cloud} instance types in {region} that fit, cheapest first{more}:"]
    for o in offers:
        it = o.instance
        spot = f"{usd_per_hour(o.spot_usd)} in {o.spot_zone}" if o.spot_zone else f"{usd_per_hour(o.spot_usd)} est."
        out += [f"{it.type}  {it.describe_gpus()}",
                f"  need {o.estimate.total_gb:.1f} GB/GPU, {o.headroom_gb:.1f} GB free; on-demand "
                f"{usd_per_hour(o.on_demand_usd)}, spot {spot}"]
    return out


def price_dates_line(offers: list[Any]) -> str:
    dates = [date_label(d) for d in sorted({o.on_demand_as_of for o in offers})]
    spot = [date_label(d) for d in sorted({o.spot_as_of for o in offers if o.spot_zone})]
    return f"price dates: on-demand {', '.join(dates)}" + (f"; spot {', '.join(spot)}" if spot else "")


def _as_json(workload: Workload, est: Any, offers: list[Any], args: argparse.Namespace, region: str, as_of: str) -> dict:
    s = workload.shape
    return {
        "workload": {
            "params": s.params,
            "preset": s.name,
            "reference": s.reference,
            "shape": {"layers": s.layers, "hidden": s.hidden, "heads": s.heads, "kvHeads": s.kv_heads,
                      "intermediate": s.intermediate, "vocab": s.vocab},
            "method": workload.method,
            "precision": workload.precision,
            "seqLen": workload.seq_len,
            "batch": workload.batch,
            "gradCheckpointing": workload.grad_checkpointing,
            "inference": workload.inference,
            "loraRank": workload.lora_rank,
        },
        "estimate": est.as_dict(),
        "cloud": args.cloud,
        "region": region,
        "headroom": args.headroom,
        "pricesAsOf": as_of,
        "offers": [o.as_dict() for o in offers],
    }
