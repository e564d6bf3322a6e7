"""Staging asks every file with ``Accept-Encoding: identity``: the bytes it writes are the file's own. An answer
that comes back with ``Content-Encoding: gzip`` (a server or proxy that ignores the request) carries the
compressed form, whose length is not the file's: it is never staged as the file and reported verified by that
length (refused, naming the encoding, or decoded to the file's bytes)."""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path

from instance.staging_fetch import Engine, FileJob
from instance.staging_files import Folder, StagingError
from instance.staging_http import Client, Deadline
from tests.instance._scripted_server import answer, serve

DATA = b"hello world " * 100


def _engine(root: Path) -> Engine:
    deadline = Deadline(10, "the test deadline")
    return Engine(Folder(str(root)), Client(3, deadline), deadline, connections=1, piece_size=100, split_above=150,
                  retry_pause=0.01, log=lambda _l: None)


def test_a_gzip_encoded_answer_is_not_staged_as_the_file(tmp_path: Path) -> None:
    encoded = gzip.compress(DATA)
    url = serve(lambda _p, _h, _n: answer("200 OK", encoded, (("Content-Encoding", "gzip"), ("ETag", '"v1"'))))
    try:
        [result] = _engine(tmp_path).run([FileJob(url + "/notes.txt", "notes.txt", what="notes.txt")])
    except StagingError as exc:
        assert "gzip" in str(exc), exc
        return
    staged = (tmp_path / "notes.txt").read_bytes()
    assert staged == DATA or not result["verified"], (
        f"the gzip-encoded body ({len(staged)} bytes) was staged as the file and reported verified: {result}")


def test_gzip_encoded_ranges_are_not_joined_into_the_file(tmp_path: Path) -> None:
    """A listed size matching the encoded form (a listing made from what the server sends) does not make the
    encoded bytes the file: each 206 says ``Content-Encoding: gzip``."""
    encoded = gzip.compress(b"".join(hashlib.sha256(bytes([i])).digest() for i in range(20)), mtime=0)
    assert len(encoded) > 150  # several pieces

    def handler(_path: str, headers: dict[str, str], _n: int) -> bytes:
        a, _, b = headers["range"].split("=")[1].partition("-")
        first, last = int(a), int(b) if b else len(encoded) - 1
        return answer("206 Partial", encoded[first:last + 1], (
            ("Content-Range", f"bytes {first}-{last}/{len(encoded)}"), ("Content-Encoding", "gzip"),
            ("ETag", '"v1"')))

    url = serve(handler)
    try:
        [result] = _engine(tmp_path).run([FileJob(url + "/w.bin", "w.bin", size=len(encoded), what="w.bin")])
    except StagingError as exc:
        assert "gzip" in str(exc), exc
        return
    assert not result["verified"], f"gzip-encoded ranges were joined and reported verified: {result}"
