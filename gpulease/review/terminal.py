"""``gpulease plan``'s terminal report (rich): per stack the answer first, then the details.

The answer fits the first screen of an 80×24 terminal: the verdict, each mandatory finding right below it (what
fails and why), the cost with the worst case against the budget, and the advisories in one line each; then what
the stack outputs (placeholders marked), and the resources last, grouped by type. Nothing a reader acts on is cut:
instance types, prices and names wrap (``overflow="fold"``), never end in ``…``."""

from __future__ import annotations

import re
from collections import Counter

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from gpulease.core.catalog.freshness import REFRESH_HINT
from gpulease.core.printable import printable
from gpulease.review import redact, report
from gpulease.review.cost_text import bounded, hourly, monthly
from gpulease.review.engine import StackReview, exit_code
from gpulease.review.phases import phase_line, phase_prices

OUTPUT_KEYS = ("deadline", "instanceType", "sshCommand", "checkpointUri", "imageFrom")
VERDICTS = {"pass": "[bold green]PASS[/bold green]", "fail": "[bold red]FAIL[/bold red]",
            "partial": "[bold yellow]PARTIAL[/bold yellow] (not a pass: a part of the program was not reviewed)"}


def _line(console: Console, markup: str) -> None:
    console.print(printable(markup), overflow="fold", highlight=False)


STALE_POLICY = "budget-prices-fresh"
_OLDER = re.compile(r"older than ([0-9.]+) days")


def _brief(policy: str, detail: str) -> str:
    """The stale-price advisory in one short line: the dates are on the ``prices:`` line just above, the list of
    every stale price in ``--format json``."""
    if policy != STALE_POLICY:
        return detail
    days = _OLDER.search(detail)
    undated = " or undated (an override row without asOf)" if " or undated:" in detail else ""
    return (f"prices older than {days.group(1) if days else 'the allowed'} days{undated} (their dates: the prices "
            f"line; each one: --format json); {REFRESH_HINT}")


def _findings(console: Console, review: StackReview, level: str) -> None:
    style = "red" if level == "mandatory" else "yellow"
    for v in report.grouped(review).get(level, []):
        text = Text.assemble((f"{level} ", f"bold {style}"), (v.policy, "bold"),
                             f" ({printable(v.resource_name or 'stack')}): {printable(_brief(v.policy, v.detail))}")
        console.print(text, overflow="fold")


def _cost(console: Console, review: StackReview) -> None:
    c = review.cost
    if c is None:
        return
    budget = report.budget_total(c)
    over = budget is not None and c.worst_case_known and c.worst_case_usd > budget
    against = ""
    if budget is not None:
        against = f" [red]over the budget {report.usd(budget)}[/red]" if over else f" of budget {report.usd(budget)}"
    # The figures' reasons quote the program's values (an instance type, a name): text, never markup.
    after = bounded(c.after_destroy_monthly_usd, c.after_destroy_reason, monthly(c.after_destroy_monthly_usd))
    _line(console, f"[bold]cost[/bold]: {escape(hourly(c))} while running, worst case "
          f"{escape(report.worst(c))}{against}, after destroy {escape(after)}"
          + (f"  [yellow]unpriced: {escape('; '.join(c.unknown_prices))}[/yellow]" if c.unknown_prices else ""))
    _line(console, f"[bold]prices[/bold]: oldest used {report.aged(report.prices_as_of(c), review)}, from the "
          f"{c.price_catalog}")
    if (prices := phase_prices(review.rendering)) is not None:  # a stack that declares its phase
        _line(console, phase_line(prices))


def _outputs(console: Console, review: StackReview) -> None:
    r = review.rendering
    placeholders = report.placeholder_outputs(r)
    for key in OUTPUT_KEYS:
        if key in r.outputs:
            mark = f" [dim]({report.PLACEHOLDER_NOTE})[/dim]" if key in placeholders else ""
            _line(console, f"[bold]{key}[/bold]: {escape(str(r.outputs[key]))}{mark}")


def _resources(console: Console, review: StackReview) -> None:
    """One entry per type (names of one type with the same notes together), the notes indented below: lines
    wrap at spaces, so a name is never broken mid-word unless it is wider than the screen."""
    r = review.rendering
    prefix = report.common_name_prefix([x.name for x in r.custom_resources])
    _line(console, f"[bold]{len(r.custom_resources)} resources[/bold]"
          + (f" (names start {prefix})" if prefix else "") + ":")
    for type_label, names, notes in report.resource_groups(r.custom_resources):
        short = [n[len(prefix):] if prefix and n.startswith(prefix) else n for n in names]
        console.print(Text.assemble("  ", (type_label, "cyan"), "  ", printable(", ".join(short))), overflow="fold")
        if notes:
            console.print(Text.assemble("      ", (printable(notes), "dim")), overflow="fold")


def print_terminal(reviews: list[StackReview], console: Console, notes: list[str] | None = None,
                   advice: dict[str, list[str]] | None = None, catalog: list[str] | None = None) -> None:
    """The report of every stack, then ``notes`` (the organization the names hash, when unknown) and the exit
    code; ``advice``: the stack file's own advisories (``gpulease.lifecycle.advice``) by review name; ``catalog``:
    the price catalog's advisories (undated override rows), once, with the first stack's. Every line goes through
    one redaction of the stacks' secret values first (``redact``)."""
    console = redact.RedactingConsole(console, redact.for_reviews(reviews))
    for index, review in enumerate(reviews):
        r = review.rendering
        title = printable(f"{review.name}  ({review.stack_file_label})")
        if len(title) + 6 <= console.width:
            console.rule(Text(title, style="bold"), characters="─")
        else:  # a rule cuts a long title with "…": the stack file's path goes whole on its own line
            console.rule(Text(printable(review.name), style="bold"), characters="─")
            # One line, never folded: a path cut across lines cannot be copied.
            console.print(printable(f"stack file: {review.stack_file_label}"), soft_wrap=True, markup=False,
                          highlight=False)
        if r.error and not r.partial:
            # Its own lines (a spec error lists one problem per line), each escaped on its own.
            first, *rest = [line for line in str(r.error).splitlines() if line.strip()] or [""]
            _line(console, f"[bold red]ERROR[/bold red] (not reviewed): {first}")
            for line in rest:
                _line(console, f"  {line}")
            continue
        counts = Counter(v.level for v in review.policy.violations) if review.policy else Counter()
        mandatory = counts.get("mandatory", 0) + counts.get("remediate", 0)
        _line(console, f"{VERDICTS[review.status]}: {mandatory} mandatory, {counts.get('advisory', 0)} advisory, "
              f"{len(r.custom_resources)} resources")
        if r.partial:
            _line(console, f"[yellow]partial review[/yellow]: {r.error}. Only the {len(r.custom_resources)} "
                  "resources registered before that are judged; the rest of the program was not seen.")
        _findings(console, review, "mandatory")
        _cost(console, review)
        _findings(console, review, "advisory")
        for line in (advice or {}).get(review.name, []):
            _line(console, f"[yellow]advisory[/yellow] (stack file): {line}")
        for line in catalog or [] if index == 0 else []:  # the catalog is every stack's: said once
            _line(console, f"[yellow]advisory[/yellow] (price catalog): {line}")
        _outputs(console, review)
        for note in notes or []:
            _line(console, f"[bold]names[/bold]: {note}")
        _resources(console, review)
    console.print(f"exit code {exit_code(reviews)}")
