"""The bootstrap installs what staging needs before staging: on an Alibaba Cloud image without ossutil, the
bucket CLI is installed first, so an ``oss://`` source is copied with it instead of failing "ossutil is not
installed" (the install used to happen only in the bucket check, after staging). In process, the disk and the
stage itself stood in for; the order is what is checked."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from instance import instance_setup, staging


def test_the_bucket_cli_is_installed_before_the_stage_that_needs_it(tmp_path: Path, monkeypatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    order: list[str] = []
    install = tmp_path / "install.py"
    install.write_text(
        "import os, sys\n"
        f"p = {str(bin_dir / 'ossutil')!r}\n"
        "open(p, 'w').write('#!/bin/sh\\nexit 0\\n'); os.chmod(p, 0o755)\n"
        f"open({str(tmp_path / 'installed')!r}, 'w').write('yes')\n"
    )
    settings = {
        "cloud": "alicloud", "region": "cn-hangzhou", "data_disk_id": "d-bp1abcdefghij1234567", "phase": "prep",
        "mount_point": str(tmp_path / "data"), "state_dir": str(tmp_path / "state"), "checkpoint_uri": "",
        "metadata_url": "http://127.0.0.1:9", "metadata_timeout_seconds": 0.2,
        "bucket_check_command": ["ossutil", "ls", "{dst}"],
        "stage_commands": {"object": ["ossutil", "cp", "{src}", "{dst}"], "prefix": ["ossutil", "cp", "-r", "{src}",
                                                                                     "{dst}"]},
        "cli_install_command": [sys.executable, str(install)],
        "data_sources": [{"uri": "oss://bucket-a/raw/", "to": str(tmp_path / "data" / "raw")}],
    }
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(settings))
    monkeypatch.setenv("GPULEASE_SETTINGS", str(path))
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    (tmp_path / "data" / "logs").mkdir(parents=True)
    monkeypatch.setattr(instance_setup, "mount_data_disk", lambda s: order.append("disk") or {"ok": True})

    def stage(s, log):
        order.append("stage with ossutil" if shutil.which("ossutil") else "stage without ossutil")
        return {"ok": True, "sources": []}

    monkeypatch.setattr(staging, "stage_sources", stage)
    instance_setup.main()
    assert order == ["disk", "stage with ossutil"]
    assert (tmp_path / "installed").read_text() == "yes"
    log = (tmp_path / "data" / "logs" / "bootstrap.log").read_text()
    assert "ossutil not installed; installing" in log
