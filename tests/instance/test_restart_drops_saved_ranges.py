"""When a 200 restarts a file that was being downloaded in pieces (docs/workflow.md, "Piece validators": "the pieces
already written ... are dropped and the file is read from that answer, from byte 0, as one stream"), the part's
state file (``<file>.part.json``) drops them too: it never goes on naming the earlier version's ranges over bytes
that are now another version's, so a later run (after a reboot, or the next attempt of the stage) never joins
them to that version's other pieces and reports the file verified."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Callable
from pathlib import Path

from instance.staging_fetch import Engine, FileJob
from instance.staging_files import Folder, StagingError
from instance.staging_http import Client, Deadline

SIZE = 400


def _serve(handler: Callable[[dict[str, str]], tuple[bytes, bool]]) -> str:
    """A loopback HTTP/1.1 server: ``handler(headers)`` gives (the answer's bytes, close the connection after it)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(20)

    def one(c: socket.socket) -> None:
        f = c.makefile("rb")
        with c:
            while f.readline():
                headers = {}
                while (h := f.readline()) not in (b"\r\n", b""):
                    k, _, v = h.decode().partition(":")
                    headers[k.strip().lower()] = v.strip()
                data, close = handler(headers)
                c.sendall(data)
                if close:
                    c.shutdown(socket.SHUT_RDWR)
                    return

    def loop() -> None:
        while True:
            c, _ = srv.accept()
            threading.Thread(target=one, args=(c,), daemon=True).start()

    threading.Thread(target=loop, daemon=True).start()
    return f"http://127.0.0.1:{srv.getsockname()[1]}"


def _engine(root: Path) -> Engine:
    deadline = Deadline(20, "the test deadline")
    return Engine(Folder(str(root)), Client(3, deadline), deadline, connections=1, piece_size=100, split_above=150,
                  attempts=3, retry_pause=0.01, log=lambda _l: None)


def _v1(headers: dict[str, str]) -> tuple[bytes, bool]:
    """The origin: version "v1" (all ``A``), ETag "v1", ranges honoured under If-Range."""
    body = b"A" * SIZE
    if "range" in headers and headers.get("if-range", '"v1"') == '"v1"':
        a, _, b = headers["range"].split("=")[1].partition("-")
        first, last = int(a), int(b) if b else SIZE - 1
        part = body[first:last + 1]
        return (f'HTTP/1.1 206 Partial\r\nETag: "v1"\r\nContent-Range: bytes {first}-{last}/{SIZE}\r\n'
                f"Content-Length: {len(part)}\r\n\r\n").encode() + part, False
    return f'HTTP/1.1 200 OK\r\nETag: "v1"\r\nContent-Length: {SIZE}\r\n\r\n'.encode() + body, False


def _mirror_cut(_headers: dict[str, str]) -> tuple[bytes, bool]:
    """A mirror that ignores Range and sends no validator, serving another version (all ``B``), cut at byte 250."""
    return f"HTTP/1.1 200 OK\r\nContent-Length: {SIZE}\r\n\r\n".encode() + b"B" * 250, True


def test_a_restarted_file_is_not_joined_to_the_earlier_versions_pieces_on_the_next_run(tmp_path: Path) -> None:
    (tmp_path / "f.part").write_bytes(b"A" * SIZE)  # v1's pieces 100-199 and 300-399 from an earlier boot
    (tmp_path / "f.part.json").write_text(json.dumps(
        {"mode": "pieces", "size": SIZE, "etag": '"v1"', "done": [[100, 200], [300, SIZE]], "url": "x"}))

    mirror = _serve(_mirror_cut)
    with contextlib.suppress(StagingError):  # the mirror's answers were cut every time: the source failed
        _engine(tmp_path).run([FileJob(mirror + "/f", "f", size=SIZE, what="f")])
    state = json.loads((tmp_path / "f.part.json").read_text()) if (tmp_path / "f.part.json").exists() else {}
    on_disk = (tmp_path / "f.part").read_bytes() if (tmp_path / "f.part").exists() else b""
    claimed = [r for r in state.get("done", []) if state.get("etag") == '"v1"' and set(on_disk[r[0]:r[1]]) - {65}]
    assert not claimed, (f"the state file still names v1's ranges {claimed} over bytes the restart replaced "
                         f"(state {state}, part {sorted(set(on_disk))})")

    origin = _serve(_v1)
    try:
        [result] = _engine(tmp_path).run([FileJob(origin + "/f", "f", size=SIZE, what="f")])
    except StagingError:
        return
    data = (tmp_path / "f").read_bytes()
    assert set(data) == {65}, f"the staged file joins two versions (bytes {sorted(set(data))}): {result}"
