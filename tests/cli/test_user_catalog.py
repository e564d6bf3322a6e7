"""The user's catalog folder: price files every command reads by itself (no environment variable, no flag), where
``catalog refresh`` writes by default; a fresh file there clears the stale-price warning."""

from __future__ import annotations

import json

import pytest

from gpulease.cli.main import main
from gpulease.core import clock
from gpulease.core.catalog import CatalogError, load_catalog
from gpulease.core.catalog.user_folder import MAX_USER_FILES, user_catalog_dir
from tests.support.clock import FIXED_NOW

FRESH_G6 = ("instances:\n  - cloud: aws\n    type: g6.xlarge\n    prices: {us-east-1: 0.5}\n    asOf: 2026-11-30\n")


@pytest.fixture
def folder(tmp_path, monkeypatch):
    path = tmp_path / "catalog"
    path.mkdir()
    monkeypatch.setenv("GPULEASE_CATALOG_DIR", str(path))
    return path


def test_the_folder_is_xdg_config_by_default(monkeypatch, tmp_path):
    monkeypatch.delenv("GPULEASE_CATALOG_DIR")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert user_catalog_dir() == tmp_path / "xdg" / "gpulease" / "catalog"
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert user_catalog_dir() == tmp_path / "home" / ".config" / "gpulease" / "catalog"


def test_every_command_prices_with_the_folders_files_newest_name_last(folder, capsys):
    assert load_catalog().get("aws", "g6.xlarge").prices["us-east-1"] != 0.5
    (folder / "gpulease-prices-2026-11-01.yaml").write_text(FRESH_G6.replace("0.5", "0.6").replace("11-30", "11-01"))
    (folder / "gpulease-prices-2026-11-30.yaml").write_text(FRESH_G6)
    (folder / "notes.txt").write_text("not a price file")
    assert load_catalog().get("aws", "g6.xlarge").prices["us-east-1"] == 0.5  # the later name wins
    with clock.frozen(FIXED_NOW):
        assert main(["size", "--params", "1B", "--method", "lora", "--cloud", "aws", "--region", "us-east-1",
                     "--json", "--limit", "0"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert "gpulease-prices-2026-11-30.yaml" in doc["data"]["priceCatalog"]
    g6 = next(o for o in doc["data"]["offers"] if o["instanceType"] == "g6.xlarge")
    assert g6["onDemandUsdPerHour"] == 0.5


def test_a_bad_file_in_the_folder_is_one_line_naming_it(folder, capsys):
    (folder / "gpulease-prices-x.yaml").write_text("instances: [{cloud: aws}]\n")
    assert main(["size", "--params", "1B"]) == 2
    err = capsys.readouterr().err
    assert "gpulease-prices-x.yaml" in err and len(err.strip().splitlines()) == 1


def test_too_many_files_in_the_folder_is_refused(folder):
    for i in range(MAX_USER_FILES + 1):
        (folder / f"p{i:03d}.yaml").write_text("instances: []\n")
    with pytest.raises(CatalogError, match=f"holds {MAX_USER_FILES + 1} price files, more than {MAX_USER_FILES}"):
        load_catalog()


def test_the_stale_warning_is_said_once_and_briefly(capsys):
    with clock.frozen(FIXED_NOW):
        assert main(["size", "--params", "1B", "--method", "lora"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert out.count("stale prices") == 1
    warning = out[out.index("warning: stale prices"):]
    assert warning.startswith("warning: stale prices up to 548 days old (2025-06-01; ")
    assert "docs/config.md#price-catalog" in warning and len(warning) < 260


@pytest.mark.parametrize(("make", "problem"), [
    (lambda p: p.write_text("x\n"), "is not a folder"),
    (lambda p: p.symlink_to(p), "cannot be read (Too many levels of symbolic links)"),
    (lambda p: None, "does not exist"),
])
def test_a_catalog_dir_that_is_not_a_readable_folder_is_one_line_exit_2(tmp_path, monkeypatch, capsys, make, problem):
    named = tmp_path / "catalgo"
    make(named)
    monkeypatch.setenv("GPULEASE_CATALOG_DIR", str(named))
    assert main(["size", "--params", "1B", "--method", "lora"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (f"gpulease: GPULEASE_CATALOG_DIR={named}: {problem}; accepted: a folder of price files "
                            "(gpulease catalog refresh makes one), or GPULEASE_CATALOG_DIR unset for "
                            "~/.config/gpulease/catalog\n")


def test_the_default_folder_may_be_missing(tmp_path, monkeypatch):
    monkeypatch.delenv("GPULEASE_CATALOG_DIR")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "nothing-here"))
    assert load_catalog().get("aws", "g6.xlarge") is not None
