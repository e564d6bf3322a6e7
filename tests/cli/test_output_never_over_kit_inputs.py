"""``plan --output`` never writes over a file plan reads, even with ``--force``: the shipped price catalog
(``instances.yaml``, ``prices.yaml``, which every plan loads to price the stack) and the kit's own modules are
among its inputs, under their own name or through a symlink or hard link. One line, exit 2, nothing written."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpulease.cli.main import main
from gpulease.core.catalog.loader import BASE_FILES


@pytest.fixture
def project(web_project: Path) -> Path:
    return web_project


@pytest.mark.parametrize("kind", ["symlink", "hardlink"])
@pytest.mark.parametrize("catalog", BASE_FILES, ids=lambda p: p.name)
def test_plan_never_writes_over_the_shipped_catalog_it_prices_with(project, tmp_path, capsys, checked_first, catalog,
                                                                    kind):
    alias = tmp_path / f"alias-{catalog.name}"
    if kind == "symlink":
        alias.symlink_to(catalog)
    else:
        try:
            os.link(catalog, alias)
        except OSError:
            pytest.skip("no hard link across these folders")
    before = catalog.read_bytes()
    assert main(["plan", str(project), "--output", str(alias), "--force"]) == 2
    err = capsys.readouterr().err
    assert "is a file this command reads" in err and err.count("\n") == 1, err
    assert catalog.read_bytes() == before


def test_plan_never_writes_over_a_module_of_the_kit_it_runs(project, tmp_path, capsys, checked_first):
    """The kit's own modules (``gpulease/core/same_file.py``, which this very check imports) are read by every plan,
    wherever the project lives: a program folder's modules are refused, and so are the kit's."""
    import gpulease.core.same_file as module

    original = Path(module.__file__)
    alias = tmp_path / "alias-same_file.py"
    alias.symlink_to(original)
    before = original.read_bytes()
    assert main(["plan", str(project), "--output", str(alias), "--force"]) == 2
    err = capsys.readouterr().err
    assert "is a file this command reads" in err and err.count("\n") == 1, err
    assert original.read_bytes() == before
