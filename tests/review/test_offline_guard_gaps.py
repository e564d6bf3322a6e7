"""Side effects of a callback run offline that Python's audit events alone do not cover: libc through ctypes and
a writable mmap (refused by their events), mkfifo/mknod and a signal through a pidfd (no event: refused by a
wrapper), and a write through a descriptor or mapping opened before (no event: a documented limit)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gpulease.review import offline_guard
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


LIMITS = {"fd": ("os.write", "descriptor"), "mmap": ("mmap", "mapping")}


@pytest.mark.parametrize("name", sorted(LIMITS))
def test_a_write_through_what_was_opened_before_is_a_documented_limit(tmp_path: Path, name: str) -> None:
    # Python raises no audit event for a write to a descriptor or a mapping already open: the hook cannot refuse
    # it. The limit is named in the guard's doc and in the user docs, and the write does happen.
    f = tmp_path / "out.bin"
    f.write_bytes(b"keep")
    body = (f"import os\nfd = os.open('{f}', os.O_WRONLY)\nU.apply(lambda t: os.write(fd, b'Z'))\n" if name == "fd" else
            f"import mmap\nfh = open('{f}', 'r+b')\nm = mmap.mmap(fh.fileno(), 0)\n"
            "def cb(t):\n    m[0:1] = b'Z'\n    m.flush()\nU.apply(cb)\n")
    _run(tmp_path, name, body)
    assert f.read_bytes() == b"Zeep"
    call, word = LIMITS[name]
    docs = (Path(__file__).parents[2] / "docs" / "policies.md").read_text()
    for text in (offline_guard.__doc__, docs):
        limits = text[text.index("Known limits"):]
        assert call in limits and word in limits


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
