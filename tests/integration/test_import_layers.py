"""The import layers hold (contracts in pyproject.toml, checked with import-linter): the CLI over the operator tools
over the review engine over the pack over the program over the core; the core imports no Pulumi; the spec imports
no Pulumi; the operator side never imports the program's Pulumi modules; the instance scripts stand alone; no
package imports another in a cycle."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.paths import ROOT


def lint(root: Path, config: Path) -> subprocess.CompletedProcess[str]:
    # A process of its own: import-linter builds the graph from the packages importable there (cwd on sys.path).
    code = "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(config_filename=sys.argv[1], no_cache=True, no_logo=True))"
    return subprocess.run([sys.executable, "-c", code, str(config)], cwd=root, capture_output=True, text=True, timeout=120)


def test_every_import_contract_is_kept() -> None:
    done = lint(ROOT, ROOT / "pyproject.toml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "BROKEN" not in done.stdout and done.stdout.count("KEPT") == 6, done.stdout


@pytest.mark.parametrize(("module", "line", "contract"), [
    ("gpulease/core/vocabulary.py", "import pulumi", "The core is cloud-neutral"),
    ("components/spec/sections.py", "import pulumi_aws", "The spec and each cloud's spec rules import no Pulumi"),
    ("gpulease/review/report.py", "import components.aws.cloud", "The operator side reaches the program only by running it"),
    ("components/naming.py", "import gpulease.review.engine", "Layers"),
    ("instance/watchdog.py", "import yaml", "The instance-side scripts are standalone"),
])
def test_a_forbidden_import_breaks_its_contract(tmp_path: Path, module: str, line: str, contract: str) -> None:
    """Each contract can fail: a copy of the tree with one forbidden import added is refused by that contract."""
    for name in ("gpulease", "components", "policies", "instance"):
        subprocess.run(["cp", "-r", str(ROOT / name), str(tmp_path / name)], check=True)
    target = tmp_path / module
    target.write_text(target.read_text() + textwrap.dedent(f"\n\n{line}  # noqa\n"))
    config = tmp_path / "pyproject.toml"
    config.write_text((ROOT / "pyproject.toml").read_text())
    done = lint(tmp_path, config)
    assert done.returncode != 0, done.stdout
    report = done.stdout.split("Broken contracts", 1)[1]
    assert contract in " ".join(report.split()), done.stdout
