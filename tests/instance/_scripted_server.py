"""A loopback HTTP/1.1 server whose answers a test writes as a function of (path, headers, request number)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable


def serve(handler: Callable[[str, dict[str, str], int], bytes]) -> str:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(20)
    count = [0]
    lock = threading.Lock()

    def one(c: socket.socket) -> None:
        f = c.makefile("rb")
        with c:
            while (line := f.readline()):
                headers = {}
                while (h := f.readline()) not in (b"\r\n", b""):
                    k, _, v = h.decode().partition(":")
                    headers[k.strip().lower()] = v.strip()
                with lock:
                    count[0] += 1
                    n = count[0]
                c.sendall(handler(line.decode().split()[1], headers, n))

    def loop() -> None:
        while True:
            c, _ = srv.accept()
            threading.Thread(target=one, args=(c,), daemon=True).start()

    threading.Thread(target=loop, daemon=True).start()
    return f"http://127.0.0.1:{srv.getsockname()[1]}"


def answer(status: str, body: bytes = b"", headers: tuple[tuple[str, str], ...] = ()) -> bytes:
    head = "".join(f"{k}: {v}\r\n" for k, v in headers) + f"Content-Length: {len(body)}\r\n"
    return f"HTTP/1.1 {status}\r\n{head}\r\n".encode("latin-1") + body
