"""A redirect to a scheme that is not http(s) is followed as HTTP: ``Location: file:///etc/passwd`` fails the source
with "AttributeError: 'NoneType' object has no attribute 'rfind'", and ``ftp://host:21/x`` is asked over HTTP on
port 21. It should be refused, naming the redirect and its scheme."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest

from instance import staging
from instance.staging_files import StagingError
from instance.staging_http import redirect_target


def _redirecting(location: bytes) -> str:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(5)

    def loop() -> None:
        while True:
            c, _ = srv.accept()
            c.recv(65536)
            c.sendall(b"HTTP/1.1 302 Found\r\nLocation: " + location + b"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            c.close()

    threading.Thread(target=loop, daemon=True).start()
    return f"http://127.0.0.1:{srv.getsockname()[1]}"


@pytest.mark.parametrize("location", [b"file:///etc/passwd", b"ftp://127.0.0.1:9/x", b"gopher://127.0.0.1:9/x"])
def test_a_redirect_to_another_scheme_is_refused_by_name(tmp_path: Path, location: bytes) -> None:
    url = _redirecting(location) + "/f.bin"
    settings = {"cloud": "aws", "region": "us-east-1", "mount_point": str(tmp_path),
                "data_sources": [{"uri": url, "to": str(tmp_path / "t")}], "metadata_url": "http://127.0.0.1:9",
                "staging_retry_seconds": 0.01, "staging_read_timeout_seconds": 5, "staging_attempts": 1}
    check = staging.Stager(settings, lambda _l: None).run()
    error = check["sources"][0]["error"]
    assert location.split(b":")[0].decode() in error and "Error:" not in error, error


def test_a_redirect_with_a_location_that_does_not_parse_is_refused_by_name(tmp_path: Path) -> None:
    url = _redirecting(b"http://[::1/x") + "/f.bin"
    settings = {"cloud": "aws", "region": "us-east-1", "mount_point": str(tmp_path),
                "data_sources": [{"uri": url, "to": str(tmp_path / "t")}], "metadata_url": "http://127.0.0.1:9",
                "staging_retry_seconds": 0.01, "staging_read_timeout_seconds": 5, "staging_attempts": 1}
    error = staging.Stager(settings, lambda _l: None).run()["sources"][0]["error"]
    assert "redirects to 'http://[::1/x'" in error and "Error:" not in error, error


def test_a_redirect_from_https_down_to_http_is_refused() -> None:
    with pytest.raises(StagingError, match="from https down to plain http"):
        redirect_target("https://hub.example/f.bin", "http://cdn.example/f.bin")
    with pytest.raises(StagingError, match="scheme ftp"):
        redirect_target("https://hub.example/f.bin", "ftp://cdn.example/f.bin")
    assert redirect_target("http://hub.example/a/f.bin", "/b/f.bin") == "http://hub.example/b/f.bin"
    assert redirect_target("https://hub.example/f.bin", "https://cdn.example/x") == "https://cdn.example/x"
    assert redirect_target("http://hub.example/f.bin", "https://cdn.example/x") == "https://cdn.example/x"
