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
