"""``gpulease cost <stack>``: what a stack costs per hour, at worst until its deadline, and after destroy.

Each line shows the date of the price behind it; prices older than ``--max-price-age`` days are named in a
warning (the command still succeeds: a stale price is a reason to refresh, not bad input)."""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console
from rich.markup import escape

from gpulease.cli.common import add_max_age_option, catalog_overrides, stale_json, stale_warning, wide_console
from gpulease.cli.config_option import add_config_option, parse_config
from gpulease.cli.conventions import camel_keys, error_entry, print_json
from gpulease.cli.cost_rounding import experiments_rounded, lines_rounded, node_rounded
from gpulease.cli.fit_table import Col, distinct_keys, render
from gpulease.cli.shown import shown
from gpulease.cli.stack_arg import FOLDER_ACCEPTED, stack_type
from gpulease.core import clock
from gpulease.core.catalog.freshness import line_prices, stale
from gpulease.core.catalog.models import date_label
from gpulease.core.cost import SHARED, StackCost
from gpulease.core.cost.cluster import cluster_costs
from gpulease.core.money import usd, usd_per_hour, usd_per_month
from gpulease.core.printable import printable
from gpulease.core.shown import shown_path
from gpulease.review import redact, stacks
from gpulease.review.cost_text import bounded
from gpulease.review.engine import estimate, render_target
from gpulease.review.phases import phase_line, phase_prices
from gpulease.review.report import budget_total, common_name_prefix


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "cost",
        help="estimate what stacks cost: per hour, worst case until the deadline, and per month after destroy",
    )
    p.add_argument("stacks", nargs="+", type=stack_type(FOLDER_ACCEPTED), help="stack names in stacks/, stack files, or Pulumi project directories")
    p.add_argument("--catalog", action="append", metavar="FILE", help="a catalog override file (prices, types)")
    add_config_option(p, " (the same reading as plan --config)")
    add_max_age_option(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    with catalog_overrides(args.catalog):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    console = wide_console()
    now = clock.utcnow()
    overrides = parse_config(args.config)  # a bad --config is one line, exit 2, before any stack is rendered
    results = []
    failed = False
    for target in args.stacks:
        for project_dir, stack_file in stacks.resolve(target):
            rendering = render_target(project_dir, stack_file, overrides=overrides)
            hide = redact.Redactor(redact.rendering_secrets(rendering))  # every line below: secrets as [secret]
            shown = redact.RedactingConsole(console, hide)
            if rendering.error is None and (bound := redact.too_many(hide.values)) is not None:
                rendering.error = bound
            if rendering.error:
                failed = True
                results.append({"stack": rendering.stack, "error": hide.text(rendering.error),
                                "stackFile": shown_path(stack_file) if stack_file is not None else None})
                if not args.json:
                    # its own lines, as plan prints them (a spec error lists one problem a line), each escaped
                    first, *rest = [ln for ln in rendering.error.splitlines() if ln.strip()] or [""]
                    shown.print(f"[red]{escape(printable(rendering.stack))}: {escape(printable(first))}[/red]")
                    for line in rest:
                        shown.print(f"[red]  {escape(printable(line))}[/red]")
                continue
            cost = estimate(rendering)
            old = stale(line_prices(cost.lines, cost.region), now, args.max_price_age)
            phases = phase_prices(rendering)  # None unless the stack declares its phase
            results.append(hide.data({"stack": rendering.stack, "error": None, **cost.as_dict(),
                            "clusters": [c.as_dict() for c in cluster_costs(cost)],
                            "maxPriceAgeDays": args.max_price_age, "stalePrices": stale_json(old, now),
                            **({"phases": [p.as_dict() for p in phases]} if phases is not None else {})}))
            if not args.json:
                print_cost(rendering.stack, cost, shown)
                if phases is not None:
                    shown.print(phase_line(phases))
                if (warning := stale_warning(old, now, args.max_price_age)) is not None:
                    shown.print(f"[yellow]warning[/yellow]: {warning}")
    if args.json:
        errors = [error_entry("bad-input", str(r["error"]), file=r.get("stackFile")) for r in results if r["error"]]
        print_json("cost", {"stacks": camel_keys(results)}, ok=not failed, errors=errors)
    return 2 if failed else 0


def _known(value: float, reason: str | None, show: Any = usd) -> str:
    """A figure of the per-experiment table, or ``unknown`` while an item in it has no price."""
    return "unknown" if reason is not None else show(value)


def _usd(value: float | None, show: Any = usd) -> str:
    return "?" if value is None else show(value)


def print_cost(stack: str, cost: StackCost, console: Console) -> None:
    """The lines, then the totals. Names never end in ``…``: the names' shared prefix is said once in the title,
    figures do not wrap, text cells wrap; the experiment column only when there are several, the price dates in
    their own column from 100 columns up, else below the table."""

    several = len({line.experiment for line in cost.lines}) > 1
    prefix = common_name_prefix([line.resource for line in cost.lines])
    title = f"gpulease cost: {printable(stack)} ({cost.cloud}, {cost.region or 'region unknown'})"
    if prefix:
        title += f"; resource names start {printable(prefix)}"
    console.print(f"[bold]{escape(title)}[/bold]", overflow="fold")
    names = [line.resource[len(prefix):] if prefix and line.resource.startswith(prefix) else line.resource
             for line in cost.lines]
    # Every cell is rich markup: what the program named (experiments, resources, items) is escaped for rich and for
    # the terminal (``shown``); the lines below the table print the names as plain text.
    cols = [Col("experiment", figure=True, cells=[shown(line.experiment) for line in cost.lines], drop=5)] if several else []
    cols += [
        Col("resource", figure=True, cells=[shown(n) for n in names]),
        Col("item", cells=[shown(line.item) for line in cost.lines]),
        Col("per hour", "right", True, [_usd(line.hourly_usd, usd_per_hour) for line in cost.lines], drop=4),
        Col("cap", "right", True, [_usd(line.max_hourly_usd, usd_per_hour) for line in cost.lines], drop=3,
            below="cap per hour"),
        Col("hours", "right", True, ["?" if line.runtime_hours is None else f"{line.runtime_hours:g}"
                                     for line in cost.lines], drop=4),
        Col("worst case", "right", True, [_usd(line.worst_case_usd) for line in cost.lines]),
        Col("after destroy", "right", True, [_usd(line.after_destroy_monthly_usd, usd_per_month) if line.retained
                                             else "" for line in cost.lines], drop=2),
        Col("price date", cells=[price_date(line) for line in cost.lines], drop=1, below=None),
    ]
    hours = [e.runtime_hours for e in cost.experiments if e.runtime_hours is not None]
    until = f" ({max(hours):g} h)" if hours else ""
    spot = any(line.max_hourly_usd != line.hourly_usd for line in cost.lines)
    if cost.hourly_reason is None:
        console.print(f"[bold]per hour[/bold]: {usd_per_hour(cost.hourly_usd)}"
                      + (f" (at the spot cap {usd_per_hour(cost.max_hourly_usd)})" if spot else " (on-demand: no spot cap)"))
    else:
        console.print(f"[bold]per hour[/bold]: {escape(bounded(cost.hourly_usd, cost.hourly_reason, usd_per_hour(cost.hourly_usd)))}")
    expected = escape(bounded(cost.expected_usd, cost.expected_reason, usd(cost.expected_usd))
                      if cost.expected_reason is None or cost.expected_reason != cost.hourly_reason else "unknown (the same unpriced items)")
    console.print(
        f"[bold]until the deadline{until}[/bold]: expected {expected}, "
        + (f"[bold]worst case {usd(cost.worst_case_usd)}[/bold]" if cost.worst_case_known
           else f"[bold]worst case unknown[/bold]: {escape(cost.worst_case_reason or 'an instance is unpriced')}")
        + (f" of budget {usd(budget)}" if (budget := budget_total(cost)) is not None else "")
        + lines_rounded(cost)
    )
    after = bounded(cost.after_destroy_monthly_usd, cost.after_destroy_reason, usd_per_month(cost.after_destroy_monthly_usd))
    console.print(f"[bold]after destroy[/bold]: {escape(after)} for retained disks and buckets")
    keys = distinct_keys([printable(n) for n in names], [printable(line.item) for line in cost.lines])
    out = render(console, cols, keys, "each line")
    if any(col.header == "price date" for col in out):
        dates = sorted({price_date(line) for line in cost.lines if price_date(line)})
        if dates:
            console.print(f"price dates: {', '.join(dates)}", overflow="fold")
    if len(cost.experiments) > 1:
        _experiments_table(cost, console)
    for cluster in cluster_costs(cost):
        if cluster.unknown_reason is not None:
            console.print(f"[bold]cluster {shown(cluster.experiment)}[/bold]: {cluster.nodes} nodes, cost unknown because "
                          f"{escape(cluster.unknown_reason)}")
            continue
        console.print(
            f"[bold]cluster {shown(cluster.experiment)}[/bold]: {cluster.nodes} nodes at {usd_per_hour(cluster.node_hourly_usd)} each "
            f"(worst case {usd(cluster.node_worst_case_usd)} per node"
            f"{node_rounded(cost, cluster.experiment, cluster.node_worst_case_usd)}), {usd_per_hour(cluster.cluster_hourly_usd)} for the "
            f"cluster with what the nodes share, worst case {usd(cluster.cluster_worst_case_usd)}"
        )
    for exp in cost.experiments:
        if exp.budget_usd is not None and exp.worst_case_known and exp.worst_case_usd > exp.budget_usd:
            console.print(
                f"[red]over budget[/red] {shown(exp.name)}: worst case {usd(exp.worst_case_usd)} > budget {usd(exp.budget_usd)}"
            )
    for note in cost.notes:
        console.print(f"note: {shown(note)}")
    for missing in cost.unknown_prices:
        console.print(f"[yellow]unknown price[/yellow]: {shown(missing)} (not counted)")
    console.print(f"Prices: {shown(cost.price_catalog)}; oldest price used {date_label(cost.prices_as_of)}; override with --catalog FILE.")


def price_date(line: Any) -> str:
    """The date of a line's price, and of its cap when that is another price (a spot line's on-demand cap)."""
    if line.price_as_of is None:
        return ""
    return date_label(line.price_as_of) + (f" (cap {date_label(line.cap_as_of)})" if line.cap_as_of else "")


def _experiments_table(cost: StackCost, console: Console) -> None:
    exps = cost.experiments
    over = [exp.budget_usd is not None and exp.worst_case_known and exp.worst_case_usd > exp.budget_usd for exp in exps]
    budgets = ["" if exp.budget_usd is None else usd(exp.budget_usd) for exp in exps]
    names = [f"{exp.name} (shared)" if exp.shared and exp.name != SHARED else exp.name for exp in exps]
    cols = [
        Col("experiment", figure=True, cells=[shown(n) for n in names]),
        Col("per hour", "right", True, [_known(e.hourly_usd, e.hourly_reason, usd_per_hour) for e in exps], drop=3),
        Col("hours", "right", True, ["?" if e.runtime_hours is None else f"{e.runtime_hours:g}" for e in exps], drop=4),
        Col("expected", "right", True, [_known(e.expected_usd, e.expected_reason) for e in exps], drop=2),
        Col("worst case", "right", True, [usd(e.worst_case_usd) if e.worst_case_known else "unknown" for e in exps]),
        Col("budget", "right", True, [f"[red]{b}[/red]" if o else b for b, o in zip(budgets, over, strict=True)], drop=5),
        Col("after destroy", "right", True,
            [_known(e.after_destroy_monthly_usd, e.after_destroy_reason, usd_per_month) for e in exps], drop=1),
    ]
    render(console, cols, names, "per experiment", simple=False, each="each experiment")
    for note in experiments_rounded(cost):
        console.print(f"note: {shown(note)}")
