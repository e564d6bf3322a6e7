"""Side effects of a callback run offline that the audit hook does not refuse: libc through ctypes, a file
descriptor, mapping or socket the program opened before, mkfifo/mknod, a signal through a pidfd."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gpulease.review.engine import review
from tests.review.test_unknown_compute import _write
from tests.review.test_unknown_compute_more import HEAD
from tests.support.clock import FIXED_NOW


def _run(tmp_path: Path, name: str, body: str) -> Path:
    d = _write(tmp_path, name, HEAD + body)
    review([str(d)], now=FIXED_NOW)
    return d


def test_ctypes_unlink_is_refused(tmp_path: Path) -> None:
    keep = tmp_path / "keep.txt"
    keep.write_text("kept")
    _run(tmp_path, "ctypes", f"import ctypes\nU.apply(lambda t: ctypes.CDLL(None).unlink(b'{keep}'))\n")
    assert keep.exists()


def test_a_write_to_a_descriptor_opened_before_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    out.write_text("")
    _run(tmp_path, "fd", f"import os\nfd = os.open('{out}', os.O_WRONLY)\nU.apply(lambda t: os.write(fd, t.encode()))\n")
    assert out.read_text() == ""


def test_a_write_through_a_mapping_made_before_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "m.bin"
    f.write_text("keep")
    _run(tmp_path, "mmap", f"import mmap\nfh = open('{f}', 'r+b')\nm = mmap.mmap(fh.fileno(), 0)\n"
                           "def cb(t):\n    m[0:1] = b'Z'\n    m.flush()\nU.apply(cb)\n")
    assert f.read_text() == "keep"


@pytest.mark.parametrize("call", ["mkfifo", "mknod"])
def test_mkfifo_and_mknod_are_refused(tmp_path: Path, call: str) -> None:
    made = tmp_path / "made"
    _run(tmp_path, call, f"import os\nU.apply(lambda t: os.{call}('{made}'))\n")
    assert not made.exists()


def test_a_signal_through_a_pidfd_is_refused(tmp_path: Path) -> None:
    victim = subprocess.Popen(["sleep", "60"])
    try:
        _run(tmp_path, "pidfd", "import os, signal\nU.apply(lambda t: signal.pidfd_send_signal("
                                f"os.pidfd_open({victim.pid}), signal.SIGTERM))\n")
        assert victim.poll() is None
    finally:
        victim.kill()
        victim.wait()
