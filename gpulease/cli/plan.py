"""``gpulease plan``: review stacks offline: resources, policy verdicts and cost, without credentials or CLI.

Exit codes: 0 clean (advisory findings allowed), 1 mandatory policy violations, 2 nothing could be reviewed for a
stack (unknown stack, invalid spec, a program that failed before registering anything, invalid policy config or
``--config``), 3 a stack was reviewed only in part (the program stopped part way: a lookup without an offline
answer, an error, an exit, a crash or the time limit; what it registered is judged, the rest is not). With
several stacks the worst wins, in the order 2, 3, 1, 0.
"""

from __future__ import annotations

import argparse
import io
import math
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from gpulease.cli.config_option import add_config_option, parse_config
from gpulease.cli.conventions import error_entry, json_text, one_line, piped_width
from gpulease.cli.output_file import OutputPathError, add_force_option, check_output, report_marker
from gpulease.cli.stack_arg import FOLDER_ACCEPTED, stack_type
from gpulease.core.errors import UserError
from gpulease.core.flag_numbers import number
from gpulease.core.terminal import Trimmed
from gpulease.review import report as plan_report
from gpulease.review import stacks
from gpulease.review.engine import exit_code, review
from gpulease.review.isolation import DEFAULT_TIMEOUT_S
from gpulease.review.organization import Organization, organization_note
from gpulease.review.organization import check_name as check_org_name
from gpulease.review.organization import resolve as resolve_organization
from gpulease.review.policy_runner import load_policy_config

PIPED_WIDTH = 160
"""Columns of the terminal report when it is not written to a terminal (a CI log, a file, a pipe) and
``COLUMNS`` is unset."""
def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "plan",
        help="review what stacks would create, with policy verdicts and cost, offline (no credentials, no Pulumi CLI)",
        description="Run each stack's program under mocks, check it with the gpulease-guardrails policy pack and "
        "estimate its cost. Exit 0 when clean (advisories allowed), 1 on mandatory violations, 2 on bad input.",
    )
    p.add_argument(
        "stacks",
        nargs="+",
        type=stack_type(FOLDER_ACCEPTED),
        help="stack names in stacks/, Pulumi.<stack>.yaml files, or Pulumi Python project directories (every stack)",
    )
    p.add_argument("--format", choices=("text", "markdown", "json"), default="text",
                   help="text: terminal report (`table`, its old name, still works); markdown: pull-request comment; "
                   "json: everything, machine-readable, in the JSON envelope")
    p.add_argument("--policy-config", type=Path, metavar="FILE",
                   help="policy config JSON, the same file `pulumi preview --policy-pack-config` takes")
    p.add_argument("--output", type=Path, metavar="FILE",
                   help="write the report to FILE instead of stdout (a new file or an earlier report; see --force)")
    add_force_option(p)
    add_config_option(p, ". A project without stack files is reviewed with these and the program's own defaults")
    p.add_argument("--stack", metavar="NAME", type=stack_type("a stack name of the project folder"),
                   help="for a project folder: review only this stack (its Pulumi.NAME.yaml, or, without one, a "
                   "stack of that name with only --config); default: every stack file, or `dev` when there is none")
    p.add_argument("--org", metavar="NAME",
                   help="the Pulumi organization of the stacks, which their physical names hash (default: from the "
                   "configured backend; `organization` on a self-managed one; unknown offline otherwise)")
    p.add_argument("--timeout", type=_positive_seconds, default=DEFAULT_TIMEOUT_S, metavar="SECONDS",
                   help=f"stop a program that runs longer (default {DEFAULT_TIMEOUT_S:g}); what it registered is "
                   "reviewed, marked partial")
    p.set_defaults(func=run)


MAX_TIMEOUT_S = 24 * 3600.0
"""The longest ``--timeout``: a day. Beyond it the clock arithmetic of the wait overflows (``1e300``)."""


_positive_seconds = number(f"a number of seconds above 0 and at most {MAX_TIMEOUT_S:g} (a day)", 0, MAX_TIMEOUT_S,
                           above=True, example=f"{DEFAULT_TIMEOUT_S:g}")


def finite_policy_config(config: Any, path: Path, where: str = "") -> Any:
    """Refuse a number the analyzer's protocol cannot carry (``1e999`` reads as infinity, ``NaN``), naming it."""
    if isinstance(config, dict):
        for key, value in config.items():
            finite_policy_config(value, path, f"{where}.{key}" if where else str(key))
    elif isinstance(config, list):
        for i, value in enumerate(config):
            finite_policy_config(value, path, f"{where}[{i}]")
    elif isinstance(config, float) and not math.isfinite(config):
        raise UserError(f"policy config {path}: {where}: {config} is not a finite number; accepted: a number "
                        "such as 24 or 0.5")
    return config


def stack_advice(reviews: list[Any]) -> dict[str, list[str]]:
    """The stack files' own advisories (``gpulease.lifecycle.advice``) by review name; stacks without any left out."""
    from gpulease.lifecycle.advice import config_advisories

    found = {r.name: config_advisories(r.rendering.stack, r.rendering.config) for r in reviews}
    return {name: lines for name, lines in found.items() if lines}


def catalog_advice() -> list[str]:
    """The price catalog's advisories: each override row that gave prices without a date (their age is unknown,
    so every price-age check counts them as stale). None when the catalog cannot be read: the review says why."""
    from gpulease.core.catalog import CatalogError, load_catalog

    try:
        undated = load_catalog().undated
    except (CatalogError, OSError):
        return []
    return [f"{row} have no date (the row has no asOf): their age is unknown, so they count as stale prices; "
            "accepted: asOf: YYYY-MM-DD in the row, the day the prices were read" for row in undated]


def plan_json(reviews: list[Any], organizations: Iterable[Organization] = (),
              advice: dict[str, list[str]] | None = None, catalog: list[str] | None = None) -> str:
    """The envelope; ``exitCode`` and ``stacks`` also stay at the top level for one release (their old place)."""
    doc = plan_report.to_json(reviews)
    found = list(organizations)
    legacy = dict(doc)
    doc["stackFileAdvisories"] = dict(advice or {})
    doc["catalogAdvisories"] = list(catalog or [])
    doc["organizations"] = [{"name": o.name if o.known else None, "known": o.known, "foundBy": o.found_by}
                            for o in found]
    errors = [error_entry("bad-input" if s["status"] == "error" else "partial", str(s["error"]),
                          file=s["stackFile"])
              for s in doc["stacks"] if s["error"]]
    return json_text("plan", doc, ok=doc["exitCode"] == 0, errors=errors, legacy=legacy)


def kit_folders() -> list[Path]:
    """The kit's own package folders (``gpulease``, ``components``, ``policies``), wherever they are installed: every
    plan imports their modules, whatever project it reviews."""
    import components
    import gpulease
    import policies

    return [Path(package.__file__).parent for package in (gpulease, components, policies)]


def plan_inputs(args: argparse.Namespace) -> tuple[list[Path], list[Path]]:
    """The files ``plan`` reads (stack files, each project's Pulumi.yaml, the policy config, the shipped price
    catalog and its override files) and the folders whose modules it imports (the kit's own, each program's): never
    its output."""
    from gpulease.core.catalog.loader import BASE_FILES, override_paths

    reads: list[Path] = [args.policy_config] if args.policy_config else []
    reads += [*BASE_FILES, *override_paths(), *(Path(p) for p in (getattr(args, "catalog", None) or []))]
    programs: list[Path] = kit_folders()
    for target in args.stacks:
        try:
            found = stacks.resolve_targets(target, stack=args.stack)
        except UserError:
            continue  # the review says what is wrong with the name, in its own words
        for project_dir, stack_file, _ in found:
            reads += [project_dir / "Pulumi.yaml", project_dir / "Pulumi.yml", *([stack_file] if stack_file else [])]
            programs += [project_dir, *_main_folder(project_dir)]
    return reads, programs


def _main_folder(project_dir: Path) -> list[Path]:
    """The folder ``main:`` of the project file names (the program may live outside the project folder)."""
    try:
        main = stacks.project_meta(project_dir).get("main")
    except UserError:
        return []
    if not isinstance(main, str) or not main.strip():
        return []
    folder = project_dir / main
    return [folder if folder.suffix.lower() != ".py" else folder.parent]


def run(args: argparse.Namespace) -> int:
    if args.org is not None:
        check_org_name(args.org)
    if args.output:
        reads, programs = plan_inputs(args)
        check_output(args.output, reads=reads, sources=programs, force=args.force)
    config = (finite_policy_config(load_policy_config(args.policy_config), args.policy_config)
              if args.policy_config else None)
    overrides = parse_config(args.config)
    organizations: dict[Path, Organization] = {}

    def organization_of(project_dir: Path) -> str:
        found = organizations.setdefault(project_dir, resolve_organization(project_dir, args.org))
        return found.name

    reviews = review(args.stacks, policy_config=config, overrides=overrides, stack=args.stack, timeout=args.timeout,
                     organization=organization_of)
    names_note = organization_note(organizations.values())
    advice = stack_advice(reviews)
    catalog = catalog_advice()
    if args.format == "text":
        # Imported for the table only: rich is about a tenth of plan's start-up beyond the SDK it needs anyway.
        from rich.console import Console

        from gpulease.cli.common import report_console
        from gpulease.review.terminal import print_terminal

        buffer = io.StringIO()
        # A file or a CI log: as wide as COLUMNS says, else wide enough for the tables.
        console = Console(file=Trimmed(buffer), width=piped_width(PIPED_WIDTH)) if args.output else report_console(PIPED_WIDTH)
        print_terminal(reviews, console, notes=[names_note] if names_note else [], advice=advice, catalog=catalog)
        text = f"{report_marker('plan')}\n{buffer.getvalue()}" if args.output else ""
    elif args.format == "markdown":
        text = plan_report.markdown(reviews) + (f"\n_{names_note}_\n" if names_note else "")
        text += "".join(f"\n- advisory ({name}, stack file): {line}" for name, found in advice.items()
                        for line in found) + ("\n" if advice else "")
        text += "".join(f"\n- advisory (price catalog): {line}" for line in catalog) + ("\n" if catalog else "")
    else:
        text = plan_json(reviews, organizations.values(), advice, catalog)
        for r in reviews:  # the envelope on stdout, and the one line a CI log or a wrapper reads on stderr
            if r.rendering.error and not r.rendering.partial:
                print(f"gpulease: {r.name}: {one_line(str(r.rendering.error))}", file=sys.stderr)
    if args.output:
        try:
            args.output.write_text(text)
        except OSError as exc:
            raise OutputPathError(f"--output {args.output}: cannot be written ({exc.strerror or exc})") from None
    elif args.format != "text":
        sys.stdout.write(text)
    return exit_code(reviews)
