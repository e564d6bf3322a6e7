"""A hub that trickles its answer's header lines a byte at a time holds the listing read past the source's
overall deadline: the per-read timeout never fires and no deadline check runs while http.client reads headers."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

from instance import staging


def _trickling_hub(stop: threading.Event) -> str:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(5)

    def serve() -> None:
        conn, _ = srv.accept()
        conn.recv(65536)
        conn.sendall(b"HTTP/1.1 200 OK\r\n")
        while not stop.is_set():
            try:
                conn.sendall(b"X")
            except OSError:
                return
            time.sleep(0.1)
        conn.close()

    threading.Thread(target=serve, daemon=True).start()
    return f"http://127.0.0.1:{srv.getsockname()[1]}"


def test_listing_with_trickled_headers_ends_at_the_source_deadline(tmp_path: Path) -> None:
    stop = threading.Event()
    hub = _trickling_hub(stop)
    settings = {"cloud": "aws", "region": "us-east-1", "mount_point": str(tmp_path),
                "data_sources": [{"uri": "hf://a/b", "to": str(tmp_path / "m")}],
                "hub_endpoints": {"hf": hub}, "metadata_url": "http://127.0.0.1:9",
                "staging_read_timeout_seconds": 2, "staging_source_deadline_seconds": 1,
                "staging_deadline_seconds": 2, "staging_attempts": 1}
    result: dict = {}
    t = threading.Thread(target=lambda: result.update(staging.Stager(settings, lambda _l: None).run()), daemon=True)
    t.start()
    t.join(8)
    stop.set()
    assert not t.is_alive(), "staging still reading the hub's trickled headers 8 s after a 1 s deadline"
    assert result["ok"] is False
