"""``plan --output`` never writes a file that Python would import in place of a module plan runs, even with
``--force``: an extension-module name (``plan.abi3.so``, ``plan.cpython-311-x86_64-linux-gnu.so``, ``__init__.so``)
beside a kit module is found before the ``.py`` (``importlib.machinery.EXTENSION_SUFFIXES`` come first in
``FileFinder``'s loaders), so a report written there breaks (or replaces) every later ``import`` of that module; and
a ``.pth`` file or ``sitecustomize.py`` in a site directory is read by every Python start, plan's included."""

from __future__ import annotations

import importlib.machinery
import site
import sys
from pathlib import Path

import pytest

import gpulease
from gpulease.cli.main import main

KIT = Path(gpulease.__file__).parent


@pytest.fixture
def project(web_project: Path) -> Path:
    return web_project


def _refused(project: Path, target: Path, capsys) -> None:
    existed = target.exists()
    try:
        assert main(["plan", str(project), "--output", str(target), "--force"]) == 2
    finally:
        if not existed and target.exists():
            target.unlink()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(target) in err, err


@pytest.mark.parametrize("suffix", importlib.machinery.EXTENSION_SUFFIXES)
def test_an_extension_module_name_beside_a_kit_module_is_refused(project, capsys, checked_first, suffix) -> None:
    """``gpulease/cli/plan<suffix>`` would be imported instead of ``gpulease/cli/plan.py``."""
    _refused(project, KIT / "cli" / f"plan{suffix}", capsys)


def test_an_extension_package_init_in_the_kit_is_refused(project, capsys, checked_first) -> None:
    """``gpulease/__init__.abi3.so`` would be imported instead of ``gpulease/__init__.py``."""
    _refused(project, KIT / f"__init__{importlib.machinery.EXTENSION_SUFFIXES[-1]}", capsys)


def test_an_extension_module_name_in_the_program_folder_is_refused(project, capsys, checked_first) -> None:
    """The program folder is first on the program's ``sys.path``: ``yaml.abi3.so`` there shadows PyYAML."""
    _refused(project, project / "yaml.abi3.so", capsys)


@pytest.mark.parametrize("name", ["gpulease-report.pth", "sitecustomize.py"])
def test_a_startup_file_in_a_site_directory_is_refused(project, capsys, checked_first, name) -> None:
    """Every Python start (the next plan's too) reads the site directory's ``.pth`` files (a line starting with
    ``import`` is run) and imports ``sitecustomize``."""
    folders = [Path(p) for p in site.getsitepackages() if Path(p).is_dir()]
    if not folders:
        pytest.skip("no site directory")
    _refused(project, folders[0] / name, capsys)


@pytest.mark.parametrize("name", ["plan.PY", "Plan.Py", "plan.ABI3.SO"])
def test_a_module_name_in_other_capitals_is_refused(project, capsys, checked_first, name) -> None:
    """APFS and NTFS are case-insensitive by default: ``plan.PY`` there is ``plan.py``."""
    _refused(project, KIT / "cli" / name, capsys)


def test_a_startup_module_in_a_sys_path_folder_is_refused(project, tmp_path, capsys, checked_first,
                                                          monkeypatch) -> None:
    """``site`` imports ``usercustomize`` (and ``sitecustomize``) from whichever ``sys.path`` folder holds it."""
    folder = tmp_path / "on-path"
    folder.mkdir()
    monkeypatch.setattr(sys, "path", [*sys.path, str(folder)])
    _refused(project, folder / "usercustomize.py", capsys)


def test_a_report_beside_the_project_that_python_does_not_import_is_written(project, tmp_path, monkeypatch) -> None:
    """The refusals name what Python imports, not every file: ``plan.md`` (or ``notes.pth.md``) is written."""
    monkeypatch.setattr("gpulease.cli.plan.review", lambda *a, **k: [])
    written = tmp_path / "notes.pth.md"
    main(["plan", str(project), "--output", str(written)])
    assert written.exists()
