"""Settings on the instance are read strictly by every tool: a regular file, at most 256 KiB, strict UTF-8, one
JSON object, no key written twice; anything else is one clear line naming the file and what is wrong."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from instance import cloud_access

TOOLS = Path(cloud_access.__file__).parent
DUPLICATE = '{"cloud": "aws", "max_runtime_hours": 8, "data_disk_id": "vol-1", "max_runtime_hours": 800}'


def _bad(tmp_path: Path, kind: str) -> tuple[Path, str]:
    path = tmp_path / "settings.json"
    if kind == "duplicate":
        path.write_text(DUPLICATE)
        return path, "key 'max_runtime_hours' is written twice"
    if kind == "not-utf8":
        path.write_bytes(b'{"cloud": "aws\xff"}')
        return path, "not UTF-8 (byte 14)"
    if kind == "too-large":
        path.write_text('{"cloud": "' + "a" * (300 * 1024) + '"}')
        return path, f"bytes; at most {cloud_access.SETTINGS_MAX_BYTES} accepted"
    if kind == "fifo":
        os.mkfifo(path)
        return path, "not a regular file"
    if kind == "directory":
        path.mkdir()
        return path, "not a regular file"
    if kind == "symlink":
        (tmp_path / "real.json").write_text("{}")
        path.symlink_to(tmp_path / "real.json")
        return path, "cannot open"
    if kind == "list":
        path.write_text("[1, 2]")
        return path, "expected a JSON object, found list"
    if kind == "syntax":
        path.write_text('{"cloud": "aws",\n  oops}')
        return path, f"{path}:2: not JSON"
    for name, literal in NON_FINITE.items():
        if kind == name:
            path.write_text('{"cloud": "aws",\n "max_runtime_hours": ' + literal + "}")
            return path, ("is not a number JSON allows" if literal.isalpha() or literal.startswith("-I")
                          else "is not finite")
    path = tmp_path / "missing.json"
    return path, "cannot open"


NON_FINITE = {"nan": "NaN", "infinity": "Infinity", "minus-infinity": "-Infinity", "overflow": "1e999"}


NAMES = {"watchdog": "watchdog", "instance_setup": "bootstrap", "job_agent": "job-agent"}
KINDS = ["duplicate", "not-utf8", "too-large", "fifo", "directory", "symlink", "list", "syntax", "missing", *NON_FINITE]


@pytest.mark.parametrize("kind", KINDS)
def test_bad_settings_files_are_refused_with_the_reason(tmp_path: Path, kind: str) -> None:
    path, why = _bad(tmp_path, kind)
    with pytest.raises(cloud_access.SettingsError) as err:
        cloud_access.load_settings(str(path))
    assert str(err.value).startswith(str(path)) and why in str(err.value)


@pytest.mark.parametrize("tool", ["watchdog", "instance_setup", "job_agent"])
@pytest.mark.parametrize("kind", ["duplicate", "fifo", "not-utf8", "nan"])
def test_every_tool_exits_2_with_one_line_and_never_hangs_on_bad_settings(tmp_path: Path, tool: str, kind: str) -> None:
    path, why = _bad(tmp_path, kind)
    out = subprocess.run([sys.executable, str(TOOLS / f"{tool}.py")], capture_output=True, text=True, timeout=30,
                         env={"GPULEASE_SETTINGS": str(path), "PATH": os.environ["PATH"]})
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and why in lines[0] and "Traceback" not in out.stderr
    assert lines[0].startswith(f"gpulease-{NAMES[tool]}: cannot read settings: {path}")


@pytest.mark.parametrize("kind", ["duplicate", "fifo", "not-utf8", "directory"])
def test_the_loader_refuses_bad_settings_too(tmp_path: Path, kind: str) -> None:
    path, _ = _bad(tmp_path, kind)
    out = subprocess.run([sys.executable, str(TOOLS / "fetch_tools.py")], capture_output=True, text=True, timeout=30,
                         env={"GPULEASE_SETTINGS": str(path), "GPULEASE_INSTALL_DIR": str(tmp_path / "opt")})
    assert out.returncode == 2
    (line,) = out.stderr.strip().splitlines()
    assert line.startswith(f"gpulease-fetch-tools: cannot read settings: {path}: ")
    assert not (tmp_path / "opt").exists()
