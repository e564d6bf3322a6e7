"""``gpulease plan``'s terminal report (rich): per stack its resources, policy violations, cost and verdict."""

from __future__ import annotations

from collections import Counter

from rich.console import Console
from rich.table import Table

from gpulease.review import report
from gpulease.review.engine import StackReview, exit_code
from gpulease.review.phases import phase_line, phase_prices


def print_terminal(reviews: list[StackReview], console: Console) -> None:
    for review in reviews:
        r = review.rendering
        console.rule(f"[bold]{review.name}[/bold]  ({review.stack_file_label})")
        if r.error and not r.partial:
            console.print(f"[red]error[/red]: {r.error}")
            continue
        if r.partial:
            console.print(f"[yellow]partial review[/yellow]: {r.error}. Only the {len(r.custom_resources)} resources "
                          "the review saw registered are judged below; the rest of the program (or what a component "
                          "without a model creates) was not seen.")
        table = Table(title=f"{len(r.custom_resources)} resources", show_lines=False)
        for column in ("type", "name", "retained", "replacement", "key properties"):
            table.add_column(column, overflow="fold")
        for res in r.custom_resources:
            table.add_row(report.type_label(res.type), res.name, "yes" if res.retain_on_delete else "",
                          report.replacement_options(res), report.key_properties(res.type, res.inputs))
        console.print(table)
        groups = report.grouped(review)
        if groups:
            vt = Table(title="policy violations", show_lines=True)
            vt.add_column("level", no_wrap=True)
            vt.add_column("policy", no_wrap=True)
            vt.add_column("resource", overflow="fold")
            vt.add_column("message", overflow="fold", ratio=1)
            for level in report.LEVEL_ORDER:
                for v in groups.get(level, []):
                    style = "red" if level == "mandatory" else "yellow"
                    vt.add_row(f"[{style}]{level}[/{style}]", v.policy, v.resource_name or "(stack)", v.detail)
            console.print(vt)
        if review.cost is not None:
            c = review.cost
            budget = report.budget_total(c)
            console.print(
                f"[bold]cost[/bold]: {report.usd(c.hourly_usd)}/h while running, worst case {report.worst(c)}"
                + (f" (budget {report.usd(budget)})" if budget is not None else "")
                + f", after destroy {report.usd(c.after_destroy_monthly_usd)}/month"
                + (f"  [yellow]unpriced: {'; '.join(c.unknown_prices)}[/yellow]" if c.unknown_prices else "")
            )
            console.print(f"[bold]prices[/bold]: oldest used {report.aged(report.prices_as_of(c), review)}, from the {c.price_catalog}")
            if (prices := phase_prices(r)) is not None:  # a stack that declares its phase: each phase's price
                console.print(phase_line(prices))
        for key in ("deadline", "instanceType", "sshCommand", "checkpointUri", "imageFrom"):
            if key in r.outputs:
                console.print(f"[bold]{key}[/bold]: {r.outputs[key]}")
        verdict = {"pass": "[green]PASS[/green]", "fail": "[red]FAIL[/red]",
                   "partial": "[yellow]PARTIAL[/yellow] (not a pass: a part of the program was not reviewed)"}[
            review.status]
        counts = Counter(v.level for v in review.policy.violations) if review.policy else Counter()
        console.print(f"{verdict}: {counts.get('mandatory', 0)} mandatory, {counts.get('advisory', 0)} advisory")
    console.print(f"exit code {exit_code(reviews)}")
