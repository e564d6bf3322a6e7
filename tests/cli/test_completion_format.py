"""Bash completion after `--format`: only its choices."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def gl(*args: str, columns: int = 100, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": str(columns)}
    return subprocess.run([sys.executable, "-m", "gpulease", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_completion_after_format_offers_only_its_choices(tmp_path: Path) -> None:
    script = gl("completion", "bash").stdout
    (tmp_path / "c.bash").write_text(script)
    drive = (f'source {tmp_path}/c.bash; COMP_WORDS=(gpulease plan --format ""); COMP_CWORD=3; _gpulease; '
             'printf "%s\\n" "${COMPREPLY[@]}"')
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    words = subprocess.run(["bash", "-c", drive], cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=60).stdout.split()
    assert sorted(words) == ["json", "markdown", "text"], words


def _complete(tmp_path: Path, *typed: str) -> list[str]:
    (tmp_path / "c.bash").write_text(gl("completion", "bash").stdout)
    (tmp_path / "cfg.yaml").write_text("x: 1\n")
    words = " ".join(f'"{w}"' for w in typed)
    drive = (f'source {tmp_path}/c.bash; COMP_WORDS=(gpulease {words}); COMP_CWORD={len(typed)}; _gpulease; '
             'printf "%s\\n" "${COMPREPLY[@]}"')
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    return subprocess.run(["bash", "-c", drive], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=60).stdout.split()


def test_completion_after_an_option_that_takes_a_value_offers_files(tmp_path: Path) -> None:
    words = _complete(tmp_path, "plan", "--output", "cf")
    assert words == ["cfg.yaml"], words
    assert not [w for w in _complete(tmp_path, "plan", "--config", "") if w.startswith("-") or "lora" in w]


def test_completion_asks_for_stacks_with_a_two_second_bound() -> None:
    assert "timeout 2 gpulease completion stacks" in gl("completion", "bash").stdout


def test_completion_help_is_a_short_description() -> None:
    out = gl("completion", "--help").stdout
    assert "``" not in out and "Standard library only" not in out, out
    assert 'eval "$(gpulease completion bash)"' in " ".join(out.split()), out


def test_completion_after_region_offers_the_clouds_regions_not_files(tmp_path: Path) -> None:
    (tmp_path / "us-notes.txt").write_text("a file TAB must not offer after --region\n")
    # status, ls, logs: every region the spec knows; init and size: only those the catalog prices (below).
    assert _complete(tmp_path, "ls", "--cloud", "alicloud", "--regions", "cn-h") == [
        "cn-huhehaote", "cn-hangzhou", "cn-heyuan", "cn-hongkong"]
    aws = _complete(tmp_path, "ls", "--cloud", "aws", "--regions", "us-")
    assert sorted(aws) == ["us-east-1", "us-east-2", "us-gov-east-1", "us-gov-west-1", "us-west-1", "us-west-2"], aws
    assert _complete(tmp_path, "ls", "--cloud=aws", "--regions", "cn-") == ["cn-north-1", "cn-northwest-1"]
    # bash splits --cloud=aws at the "=" (COMP_WORDBREAKS): the same cloud.
    assert _complete(tmp_path, "ls", "--cloud", "=", "aws", "--regions", "cn-") == ["cn-north-1", "cn-northwest-1"]
    # No cloud on the line (status names a stack, not a cloud): both clouds' regions.
    both = _complete(tmp_path, "status", "mine", "--region", "cn-")
    assert "cn-north-1" in both and "cn-hangzhou" in both and "us-notes.txt" not in both, both
    assert _complete(tmp_path, "ls", "--cloud", "alicloud", "--regions", "cn-hang") == ["cn-hangzhou"]
    assert _complete(tmp_path, "logs", "mine", "--region", "") and not _complete(tmp_path, "logs", "mine", "--region", "us-n")


def test_completion_after_init_cloud_offers_the_clouds(tmp_path: Path) -> None:
    words = _complete(tmp_path, "init", "--cloud", "")
    assert sorted(words) == ["alicloud", "aws"], words


def test_completion_after_init_region_offers_only_the_regions_init_can_price(tmp_path: Path) -> None:
    from gpulease.core.catalog import load_catalog

    catalog = load_catalog()
    for cloud in ("aws", "alicloud"):
        offered = _complete(tmp_path, "init", "--cloud", cloud, "--region", "")
        assert sorted(offered) == catalog.regions_of(cloud), (cloud, offered)
    assert "us-gov-west-1" not in _complete(tmp_path, "init", "--cloud", "aws", "--region", "us-")
    # No cloud on the line: the priced regions of both clouds, still none init refuses.
    both = _complete(tmp_path, "init", "--region", "")
    assert sorted(both) == sorted({*catalog.regions_of("aws"), *catalog.regions_of("alicloud")}), both

