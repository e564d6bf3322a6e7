"""Bash completion after ``size --region`` offers the regions ``gpulease size`` accepts: it prices instance types,
so (like ``init``) only the regions the price catalog prices; a region TAB offers is never refused by the command."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpulease.cli.main import main
from gpulease.core.catalog import load_catalog
from tests.cli.test_completion_format import _complete


@pytest.mark.parametrize("cloud", ["aws", "alicloud"])
def test_size_region_completes_only_to_regions_size_accepts(tmp_path: Path, capsys, cloud: str) -> None:
    offered = _complete(tmp_path, "size", "--cloud", cloud, "--region", "")
    assert offered
    refused = []
    for region in offered:
        if region in load_catalog().regions_of(cloud):
            continue
        try:
            code = main(["size", "--params", "8B", "--cloud", cloud, "--region", region, "--json"])
        except SystemExit as exc:
            code = int(exc.code or 0)
        capsys.readouterr()
        if code == 2:
            refused.append(region)
        if len(refused) >= 3:
            break
    assert not refused, f"TAB after `size --cloud {cloud} --region` offers regions size refuses: {refused}"
