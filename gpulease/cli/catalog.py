"""``gpulease catalog refresh``: fetch current prices from the clouds' price APIs into a dated override file.

    gpulease catalog refresh [--cloud aws|alicloud] [--regions R,...] [--output FILE] [--catalog FILE]
                             [--profile NAME] [--pricing-region REGION] [--allow-partial] [--json]

Exit codes: 0 written; 1 some calls failed (nothing written unless --allow-partial); 2 bad input or credentials.
The change report (type, region, old -> new, %) compares with the catalog in use: the shipped files plus
GPULEASE_CATALOG_OVERRIDES and --catalog files. The progress bar goes to stderr, the report to stdout.
"""

from __future__ import annotations

import argparse
import re
from datetime import datetime
from pathlib import Path

from rich.console import Console

from gpulease.catalog_refresh import changes, writer
from gpulease.catalog_refresh.aws import DEFAULT_PRICING_REGION, PRICING_REGIONS
from gpulease.catalog_refresh.fetched import Fetched
from gpulease.catalog_refresh.run import CLOUDS, Plan, default_regions, refresh
from gpulease.cli.common import catalog_overrides, wide_console
from gpulease.cli.conventions import error_entry, print_json
from gpulease.cli.output_file import add_force_option, check_output
from gpulease.cli.shown import shown as shown_value
from gpulease.core import clock
from gpulease.core.catalog import Catalog, CatalogError, load_catalog
from gpulease.core.catalog.freshness import describe_catalog
from gpulease.core.catalog.loader import override_paths
from gpulease.core.catalog.user_folder import USER_CATALOG_ENV, user_catalog_dir
from gpulease.core.errors import UserError
from gpulease.core.printable import printable

REGION = re.compile(r"^[a-z]{2}(?:-gov)?-[a-z]+(?:-\d+)?\Z")
EXIT_PARTIAL = 1


class RefreshInputError(UserError):
    """A refresh asked for something it cannot do: unknown regions, an ambiguous region list."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("catalog", help="manage the price catalog: refresh it from the clouds' price APIs")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    r = actions.add_parser(
        "refresh",
        help="fetch current on-demand, spot, storage and address prices into a dated override file",
        description="Fetch current prices for the catalog's GPU types (and new types of their families) and write "
        "them as a catalog override file. Exit 0 written, 1 some calls failed, 2 bad input.",
    )
    r.add_argument("--cloud", choices=CLOUDS, action="append", help="only this cloud (default: both)")
    r.add_argument("--regions", action="append", metavar="R,...",
                   help="regions to refresh, comma-separated (default: the regions the catalog prices); needs --cloud")
    r.add_argument("--output", type=Path, metavar="FILE",
                   help="the override file to write (default: gpulease-prices-<date>.yaml)")
    r.add_argument("--catalog", action="append", metavar="FILE", help="a catalog override file to compare with")
    add_force_option(r)
    r.add_argument("--profile", help="AWS profile (~/.aws/config) or Alibaba Cloud CLI profile (~/.aliyun/config.json)")
    r.add_argument("--pricing-region", choices=PRICING_REGIONS, default=DEFAULT_PRICING_REGION, metavar="REGION",
                   help=f"the AWS Price List Query API endpoint region: {', '.join(PRICING_REGIONS)} (default "
                   f"{DEFAULT_PRICING_REGION})")
    r.add_argument("--allow-partial", action="store_true",
                   help="write what was fetched even when some calls failed (the rest keeps its older prices)")
    r.add_argument("--json", action="store_true", help="print the change report as JSON")
    r.set_defaults(func=run)


def regions_of(args: argparse.Namespace, clouds: list[str], catalog: Catalog) -> dict[str, list[str]]:
    asked = [item.strip() for value in args.regions or [] for item in value.split(",") if item.strip()]
    if not asked:
        return {cloud: default_regions(catalog, cloud) for cloud in clouds}
    if len(clouds) != 1:
        raise RefreshInputError("--regions needs one --cloud (aws or alicloud): region names do not say which cloud")
    bad = [r for r in asked if not REGION.match(r)]
    if bad:
        raise RefreshInputError(f"--regions: {', '.join(bad)} is not a region name; accepted: e.g. us-east-1, cn-hangzhou")
    return {clouds[0]: list(dict.fromkeys(asked))}


def _clients(args: argparse.Namespace) -> Plan:
    from gpulease.catalog_refresh.alicloud import PriceClients as AliPriceClients
    from gpulease.catalog_refresh.aws import PriceClients as AwsPriceClients
    from gpulease.inventory.aws import credentials_problem

    def aws() -> AwsPriceClients:
        clients = AwsPriceClients(profile=args.profile)
        assert clients.session is not None
        if clients.session.get_credentials() is None:
            raise credentials_problem(RuntimeError("no credentials found"))
        return clients

    def alicloud() -> AliPriceClients:
        clients = AliPriceClients(profile=args.profile)
        clients.check_credentials()
        return clients

    return Plan(clouds=[], regions={}, aws_clients=aws, alicloud_clients=alicloud, pricing_region=args.pricing_region)


def make_plan(args: argparse.Namespace, clouds: list[str], regions: dict[str, list[str]]) -> Plan:
    """How to reach the clouds (tests replace this to point the clients at their loopback servers)."""
    plan = _clients(args)
    plan.clouds, plan.regions = clouds, regions
    return plan


def default_output(now: datetime) -> Path:
    """``<catalog folder>/gpulease-prices-<date>.yaml``: where every command finds it by itself (the folder is
    made, private to the user, when it is not there yet)."""
    folder = user_catalog_dir()
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise RefreshInputError(f"the catalog folder {folder} cannot be made ({exc.strerror or exc}); accepted: "
                                f"--output FILE, or {USER_CATALOG_ENV} naming a folder you can write") from None
    return folder / f"gpulease-prices-{now.date().isoformat()}.yaml"


def run(args: argparse.Namespace) -> int:
    now = clock.utcnow()
    output = args.output or default_output(now)
    check_output(output, reads=[*override_paths(), *(Path(f) for f in args.catalog or [])], force=args.force)
    with catalog_overrides(args.catalog):
        catalog = load_catalog()
    clouds = list(dict.fromkeys(args.cloud or CLOUDS))
    plan = make_plan(args, clouds, regions_of(args, clouds, catalog))
    console = wide_console()
    fetched = refresh(plan, catalog, now, Console(stderr=True))
    report = changes.compare(catalog, fetched)
    failures = [f for found in fetched for f in found.failures]
    written = not failures or args.allow_partial
    if written:
        doc = writer.document(catalog, fetched, now.date())
        try:
            writer.write(output, writer.render(doc, header(now, fetched, describe_catalog(catalog))))
        except CatalogError as exc:  # the loader refused what would have been written: a defect, said plainly
            raise RefreshInputError(f"the refreshed prices did not load as an override file: {exc}") from None
    if args.json:
        document = as_json(report, fetched, output if written else None)
        print_json("catalog refresh", document, ok=not failures, legacy=document,
                   errors=[error_entry("call-failed", str(f)) for f in failures])
    else:
        print_report(console, report, fetched, output if written else None)
    return EXIT_PARTIAL if failures else 0


def header(now: datetime, fetched: list[Fetched], compared_with: str) -> list[str]:
    lines = [f"Written by `gpulease catalog refresh` at {now.strftime('%Y-%m-%dT%H:%M:%SZ')}: a catalog override file.",
             "Use it with GPULEASE_CATALOG_OVERRIDES=<this file> or --catalog <this file>; the prices here are dated",
             "asOf (the refresh date), every other catalog price keeps its own date.", ""]
    for found in fetched:
        regions = sorted({r for (_, r) in found.on_demand} | {r for (r, _) in found.region_items})
        lines.append(f"{found.cloud}: {len(found.on_demand)} on-demand, {len(found.spot)} spot and "
                     f"{len(found.region_items)} storage/address prices in {', '.join(regions) or 'no region'}; "
                     f"{len(found.new_types)} new type(s); {len(found.failures)} failed call(s)")
    lines.append(f"Compared with: {compared_with}.")
    return lines


def as_json(report: changes.Report, fetched: list[Fetched], output: Path | None) -> dict:
    return {
        "output": str(output) if output else None,
        "changes": [c.as_dict() for c in report.changes],
        "unchanged": report.unchanged,
        "newTypes": report.new_types,
        "skipped": [s for found in fetched for s in found.skipped],
        "failures": [f for found in fetched for f in found.failures],
    }


def print_report(console: Console, report: changes.Report, fetched: list[Fetched], output: Path | None) -> None:
    if report.changes:
        console.print(changes.table(report))
    else:
        console.print(f"No price changed ({report.unchanged} checked).")
    if report.new_types:
        console.print(f"[bold]new instance types[/bold]: {shown_value(', '.join(report.new_types))}")
    skipped = [s for found in fetched for s in found.skipped]
    for line in skipped[:20]:
        console.print(f"skipped: {printable(line)}", markup=False)
    if len(skipped) > 20:
        console.print(f"skipped: ... and {len(skipped) - 20} more (--json lists them all)")
    for line in (f for found in fetched for f in found.failures):
        console.print(f"[red]failed[/red]: {shown_value(line)}")
    if output is not None:
        if output.resolve().parent == user_catalog_dir().resolve():
            console.print(f"Wrote {printable(output)}: in your catalog folder, so every command prices with it from now "
                          "on.", markup=False)
        else:
            shown = printable(output)
            console.print(f"Wrote {shown}. Use it: move it to {printable(user_catalog_dir())} (every command reads "
                          f"that folder), or GPULEASE_CATALOG_OVERRIDES={shown}, or --catalog {shown}.", markup=False)
    else:
        console.print("[red]Nothing written[/red]: some calls failed (retry, or pass --allow-partial to keep what was fetched).")
