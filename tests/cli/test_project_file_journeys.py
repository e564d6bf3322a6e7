"""Project files, cost messages, completion and prompted keys: what the review reads matches what Pulumi runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STACK = "config:\n  aws:region: us-east-1\n  gpulease-new:owner: bob@corp.io\n  gpulease-new:name: projexp\n"


def gl(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "gpulease", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def _project(where: Path) -> Path:
    shutil.copytree(ROOT / "templates" / "gpulease-experiment", where)
    text = (where / "Pulumi.yaml").read_text().replace("${PROJECT}", "myexp").replace("${DESCRIPTION}", "x")
    (where / "Pulumi.yaml").write_text(text[:text.index("template:")])
    (where / "Pulumi.dev.yaml").write_text(STACK)
    return where


def test_main_naming_a_file_reviews_that_file(tmp_path: Path) -> None:
    # Pulumi's Python host runs `main:` itself when it names a file (runpy.run_path); stacks.program_file agrees,
    # but the review ran <parent>/__main__.py: here a program of no resources, so the GPU program passed unseen.
    proj = _project(tmp_path / "proj")
    (proj / "__main__.py").rename(proj / "app.py")
    (proj / "__main__.py").write_text("import pulumi\npulumi.export('x', 1)\n")
    with (proj / "Pulumi.yaml").open("a") as f:
        f.write("main: app.py\n")
    out = gl("plan", ".", "--json", cwd=proj)
    report = json.loads(out.stdout)
    resources = report["data"]["stacks"][0]["resources"]
    assert resources, f"reviewed __main__.py, not app.py: {out.stdout[:400]}"


def test_a_pulumi_yml_project_reviews_the_stack_file_pulumi_reads(tmp_path: Path) -> None:
    # The Pulumi CLI names a stack's file after the project file's extension (DetectProjectStackPath:
    # Pulumi.<stack> + filepath.Ext(projPath)): with Pulumi.yml, stack dev is Pulumi.dev.yml.
    proj = _project(tmp_path / "proj")
    (proj / "Pulumi.yaml").rename(proj / "Pulumi.yml")
    (proj / "Pulumi.dev.yml").write_text(STACK.replace("projexp", "ymlexp"))
    out = gl("plan", "dev", cwd=proj)
    assert "Pulumi.dev.yml" in out.stdout, f"reviewed a file pulumi up -s dev does not read: {out.stdout[:300]}"


def test_cost_refusal_has_no_literal_backslash_n(tmp_path: Path) -> None:
    out = gl("cost", "aws-debug-t4", "--config", "budgetUsd=-5", cwd=ROOT)
    assert out.returncode == 2
    assert "\\n" not in out.stdout + out.stderr, (out.stdout + out.stderr)[:400]


def test_region_completion_after_region_equals(tmp_path: Path) -> None:
    script = gl("completion", "bash", cwd=ROOT).stdout
    (tmp_path / "c.bash").write_text(script)
    # bash splits `--region=us-` at '=' (COMP_WORDBREAKS): words gpulease init --region = us-
    probe = (f"source {tmp_path / 'c.bash'}; COMP_WORDS=(gpulease init --region = us-); COMP_CWORD=4; "
             "_gpulease; printf '%s\\n' \"${COMPREPLY[@]}\"")
    out = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, timeout=30)
    assert "us-east-1" in out.stdout.split(), out.stdout[:300]


def test_a_huge_catalog_price_is_refused_not_a_traceback(tmp_path: Path) -> None:
    # prices have a floor (1e-06 USD/h) but no ceiling: money.shown_value's Decimal.quantize raises InvalidOperation
    catalog = tmp_path / "cat.yaml"
    catalog.write_text("instances:\n  - cloud: aws\n    type: g4dn.xlarge\n    prices: {us-west-2: 1e30}\n"
                       "    asOf: 2026-11-30\n")
    out = gl("cost", "aws-debug-t4", "--catalog", str(catalog), cwd=ROOT)
    assert "Traceback" not in out.stderr, out.stderr[-400:]
    assert out.returncode == 2
    assert f"{catalog} line 2: instances[0]" in out.stderr and "at most" in out.stderr and "us-west-2" in out.stderr, out.stderr


def test_shown_value_of_a_large_finite_number_is_a_value_error_or_a_figure() -> None:
    # Decimal's default 28 digits made quantize raise InvalidOperation from 1e26 up, though ValueError is documented
    import pytest

    from gpulease.core import money

    assert money.usd(1e26) == "$100,000,000,000,000,000,000,000,000.00"
    assert money.usd_per_hour(-1e30).startswith("-$1,000,000,000,000,000,000,000,000,000,000.000")
    with pytest.raises(ValueError, match="below"):
        money.usd(1e200)


def test_completion_inside_a_foreign_project_offers_no_stack_the_commands_refuse(tmp_path: Path) -> None:
    # In a Pulumi project whose program is not the kit's, a bare kit stack name is refused (foreign_here), yet
    # `gpulease completion stacks` (what TAB offers) lists every kit stack there.
    proj = tmp_path / "other"
    proj.mkdir()
    (proj / "Pulumi.yaml").write_text("name: other\nruntime: python\n")
    (proj / "__main__.py").write_text("import pulumi\n")
    offered = gl("completion", "stacks", cwd=proj).stdout.split()
    refused = [n for n in offered[:3] if gl("plan", n, cwd=proj).returncode == 2]
    assert not refused, f"TAB offers {refused}, which plan refuses here"


def test_a_misspelt_prompted_key_is_refused_not_ignored(tmp_path: Path) -> None:
    # gpulease-new:budgetUSD (for budgetUsd) was ignored: the review took the default $60 budget and passed a
    # worst case of about $15 the user meant to cap at $5.
    proj = _project(tmp_path / "proj")
    (proj / "Pulumi.dev.yaml").write_text(STACK + '  gpulease-new:budgetUSD: "5"\n')
    out = gl("plan", "dev", cwd=proj)
    assert out.returncode != 0, out.stdout[:300]
    assert "gpulease-new:budgetUSD" in out.stdout + out.stderr
    assert "did you mean gpulease-new:budgetUsd" in out.stdout + out.stderr, out.stdout[:400]


def test_a_prompted_ssh_address_without_a_key_names_the_prompted_key(tmp_path: Path) -> None:
    proj = _project(tmp_path / "proj")
    (proj / "Pulumi.dev.yaml").write_text(STACK + "  gpulease-new:sshFrom: 203.0.113.7/32\n")
    out = gl("plan", "dev", cwd=proj)
    assert out.returncode == 2
    assert "gpulease-new:publicKey" in out.stdout + out.stderr, out.stdout[:400]


def test_main_naming_something_missing_is_refused_naming_main(tmp_path: Path) -> None:
    # Pulumi fails on a `main:` that names nothing; the review must not run the root __main__.py instead.
    for n, (main, missing) in enumerate([("nothere/", "nothere"), ("nothere.py", "nothere.py"),
                                         ("/etc/passwd", "etc/passwd")]):
        proj = _project(tmp_path / f"proj{n}")
        with (proj / "Pulumi.yaml").open("a") as f:
            f.write(f"main: {main}\n")
        out = gl("plan", ".", cwd=proj)
        assert out.returncode == 2, out.stdout[:300]
        assert "main:" in out.stderr and str(proj / missing) in out.stderr, out.stderr[:400]


def test_init_in_a_pulumi_yml_project_writes_the_yml_stack_file(tmp_path: Path) -> None:
    proj = _project(tmp_path / "proj")
    (proj / "Pulumi.yaml").rename(proj / "Pulumi.yml")
    (proj / "Pulumi.dev.yaml").unlink()
    out = gl("init", "--name", "t1", "--owner", "ada@example.org", "--params", "8B", "--method", "lora",
             "--no-port", "--budget", "60", "--no-review", cwd=proj)
    assert out.returncode == 0, out.stderr[-400:]
    assert (proj / "Pulumi.t1.yml").is_file() and not (proj / "Pulumi.t1.yaml").exists(), sorted(os.listdir(proj))


def test_a_folder_named_pulumi_yaml_is_not_the_project_file(tmp_path: Path) -> None:
    # The Pulumi CLI skips a directory named Pulumi.yaml and takes the Pulumi.yml beside it.
    proj = _project(tmp_path / "proj")
    (proj / "Pulumi.yaml").rename(proj / "Pulumi.yml")
    (proj / "Pulumi.dev.yaml").rename(proj / "Pulumi.dev.yml")
    (proj / "Pulumi.yaml").mkdir()
    out = gl("plan", "dev", cwd=proj)
    assert out.returncode == 0 and "Pulumi.dev.yml" in out.stdout, (out.stdout + out.stderr)[-400:]
