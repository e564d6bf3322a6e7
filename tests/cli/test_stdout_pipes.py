"""Standard output to a reader that goes away, or to a full disk, with real processes and pipes: a closed pipe
ends quietly with the command's own exit code (the answer stands), a write error is one line on stderr, exit 1;
never a BrokenPipeError or OSError traceback, never rich's silent exit 1. Real processes are the point here (the
interpreter's own last flush at exit is part of what is tested): four of them, about a second each."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

GPULEASE = str(Path(sys.executable).with_name("gpulease"))
ROOT = Path(__file__).resolve().parents[2]


def _closed_pipe(*argv: str) -> subprocess.CompletedProcess[bytes]:
    """Run ``gpulease argv`` with its stdout a pipe whose reader is already gone."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run([GPULEASE, *argv], stdout=write, stderr=subprocess.PIPE, cwd=ROOT, timeout=60,
                              check=False)
    finally:
        os.close(write)


@pytest.mark.parametrize("argv", [("completion", "bash"), ("schema",)])
def test_a_closed_pipe_ends_quietly_with_the_command_s_own_code(argv: tuple[str, ...]) -> None:
    done = _closed_pipe(*argv)
    assert (done.returncode, done.stderr) == (0, b"")


def test_rich_output_cut_by_head_keeps_the_verdict_s_exit_code() -> None:
    done = subprocess.run(["bash", "-c", f"{GPULEASE} plan aws-lora-7b | head -1 >/dev/null; exit ${{PIPESTATUS[0]}}"],
                          capture_output=True, cwd=ROOT, timeout=120, check=False)
    assert (done.returncode, done.stderr) == (0, b"")  # aws-lora-7b PASSes: exit 0, as without the pipe


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
def test_a_full_disk_is_one_line_and_exit_1() -> None:
    with open("/dev/full", "w") as full:
        done = subprocess.run([GPULEASE, "schema"], stdout=full, stderr=subprocess.PIPE, cwd=ROOT, timeout=60,
                              check=False)
    assert done.returncode == 1
    assert done.stderr.decode() == ("gpulease: cannot write the output to standard output: No space left on device "
                                    "(ENOSPC)\n")
