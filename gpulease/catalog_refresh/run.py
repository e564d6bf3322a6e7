"""One refresh: each cloud's regions, step by step, under one rich progress bar; the results per cloud."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from gpulease.catalog_refresh.alicloud import AlicloudRefresh
from gpulease.catalog_refresh.aws import DEFAULT_PRICING_REGION, AwsRefresh
from gpulease.catalog_refresh.fetched import Fetched
from gpulease.core.catalog import Catalog

if TYPE_CHECKING:
    from gpulease.inventory.alicloud_clients import AlicloudClients
    from gpulease.inventory.aws import AwsClients

CLOUDS = ("aws", "alicloud")


@dataclass
class Plan:
    """What to refresh: clouds, their regions, and how to reach them."""

    clouds: list[str]
    regions: dict[str, list[str]]
    aws_clients: Callable[[], AwsClients] | None = None
    alicloud_clients: Callable[[], AlicloudClients] | None = None
    pricing_region: str = DEFAULT_PRICING_REGION


def default_regions(catalog: Catalog, cloud: str) -> list[str]:
    """The regions the catalog prices for ``cloud``: instance prices and storage rows."""
    return sorted(set(catalog.regions_of(cloud)) | {r.region for r in catalog.regions if r.cloud == cloud})


def _progress(console: Console) -> Progress:
    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    TextColumn("{task.fields[step]}"), console=console)


def refresh(plan: Plan, catalog: Catalog, now: datetime, console: Console) -> list[Fetched]:
    """Every cloud of ``plan``; a failed step is recorded in its ``Fetched.failures``, the others go on."""
    out = []
    with _progress(console) as progress:
        for cloud in plan.clouds:
            found = Fetched(cloud, now.date())
            regions = plan.regions[cloud]
            if cloud == "aws":
                _aws(plan, catalog, now, regions, found, progress)
            else:
                _alicloud(plan, catalog, now, regions, found, progress)
            out.append(found)
    return out


def _aws(plan: Plan, catalog: Catalog, now: datetime, regions: list[str], found: Fetched, progress: Progress) -> None:
    assert plan.aws_clients is not None
    job = AwsRefresh(plan.aws_clients(), catalog, now, plan.pricing_region)
    task = progress.add_task("aws", total=3 * len(regions), step="")
    for region in regions:
        progress.update(task, step=f"{region}: on-demand prices")
        job.step(found, f"{region} on-demand prices", lambda r=region: job.instances(r, found))
        progress.advance(task)
        progress.update(task, step=f"{region}: storage and address prices")
        job.step(found, f"{region} storage prices", lambda r=region: job.storage(r, found))
        progress.advance(task)
        progress.update(task, step=f"{region}: spot prices")
        types = sorted({name for (name, r) in found.on_demand if r == region})
        job.step(found, f"{region} spot prices", lambda r=region, t=types: job.spot(r, t, found))
        progress.advance(task)
    progress.update(task, step="done")


def _alicloud(plan: Plan, catalog: Catalog, now: datetime, regions: list[str], found: Fetched, progress: Progress) -> None:
    assert plan.alicloud_clients is not None
    job = AlicloudRefresh(plan.alicloud_clients(), catalog, now)
    task = progress.add_task("alicloud", total=None, step="instance types")
    if regions:
        job.step(found, f"{regions[0]} instance types", lambda: job.discover(regions[0], found))
    types = sorted(set(job.known) | set(found.new_types))
    progress.update(task, total=len(regions) * (2 * len(types) + 1))
    for region in regions:
        for name in types:
            progress.update(task, step=f"{region}: {name} on-demand")
            job.step(found, f"{name} on-demand in {region}", lambda r=region, n=name: job.instance(r, n, found))
            progress.advance(task)
        progress.update(task, step=f"{region}: disks")
        job.step(found, f"{region} disk prices", lambda r=region: job.disks(r, found))
        progress.advance(task)
        for name in types:
            progress.advance(task)
            if (name, region) not in found.on_demand:
                continue
            progress.update(task, step=f"{region}: {name} spot")
            job.step(found, f"{name} spot in {region}", lambda r=region, n=name: job.spot(r, n, found))
    progress.update(task, step="done")
