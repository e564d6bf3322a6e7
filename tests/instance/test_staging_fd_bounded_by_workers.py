"""Staging opens every listed file's ``.part`` before any download (``Engine.run`` prepares all tasks first) and
keeps each descriptor open until the end: under the soft RLIMIT_NOFILE of 1024 that systemd gives a service by
default (the bootstrap unit sets no ``LimitNOFILE``), a hub repo of 1,500 files fails with "Too many open files"."""

from __future__ import annotations

import hashlib
import json
import resource
from pathlib import Path

from instance import staging
from tests.instance._scripted_server import answer, serve

N = 1500


def _hub() -> str:
    blob = hashlib.sha1(b"blob 1\0x").hexdigest()
    listing = json.dumps([{"type": "file", "path": f"d/f{i}.txt", "size": 1, "oid": blob} for i in range(N)]).encode()
    return serve(lambda path, _headers, _n: answer("200 OK", listing if "/tree/" in path else b"x"))


def test_a_repo_of_1500_files_stages_under_a_1024_descriptor_limit(tmp_path: Path) -> None:
    hub = _hub()
    settings = {"cloud": "aws", "region": "us-east-1", "mount_point": str(tmp_path), "hub_endpoints": {"hf": hub},
                "data_sources": [{"uri": "hf://many/files", "to": str(tmp_path / "t")}],
                "metadata_url": "http://127.0.0.1:9", "staging_retry_seconds": 0.01,
                "staging_read_timeout_seconds": 10}
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(1024, hard), hard))
    try:
        check = staging.Stager(settings, lambda _l: None).run()
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert check["ok"], check.get("error")
