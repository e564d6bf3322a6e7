"""The bytes staging writes are the file's own: an answer whose ``Transfer-Encoding`` is not just ``chunked``
(``gzip, chunked``: RFC 9112 §6.1, the body is the gzip of the file, framed in chunks) carries a coded form of the
file, and a ``Content-Length`` beside it does not give the file's length (§6.3: "the Transfer-Encoding overrides the
Content-Length ... ought to be handled as an error"). It is refused, naming the coding (as a ``Content-Encoding``
other than identity is), or decoded to the file's bytes; never written as the file and reported verified by that
length."""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path

import pytest

from instance.staging_fetch import Engine, FileJob
from instance.staging_files import Folder, StagingError
from instance.staging_http import Client, Deadline
from tests.instance._scripted_server import answer, serve

DATA = b"hello world " * 100


def _chunked(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n0\r\n\r\n"


def test_a_gzip_transfer_coding_is_not_staged_as_the_file(tmp_path: Path) -> None:
    wire = _chunked(gzip.compress(DATA, mtime=0))
    url = serve(lambda _p, _h, _n: answer("200 OK", wire, (("Transfer-Encoding", "gzip, chunked"), ("ETag", '"v1"'))))
    deadline = Deadline(10, "the test deadline")
    engine = Engine(Folder(str(tmp_path)), Client(3, deadline), deadline, connections=1, piece_size=100,
                    split_above=10 ** 6, retry_pause=0.01, log=lambda _l: None)
    try:
        [result] = engine.run([FileJob(url + "/notes.txt", "notes.txt", what="notes.txt")])
    except StagingError as exc:
        assert "gzip" in str(exc), exc
        return
    staged = (tmp_path / "notes.txt").read_bytes()
    assert staged == DATA or not result["verified"], (
        f"the transfer-coded body ({len(staged)} bytes) was staged as the file and reported verified: {result}")


def test_a_chunked_answer_is_staged(tmp_path: Path) -> None:
    """``chunked`` alone (in any letter case) is framing ``http.client`` undoes: the file's own bytes; the
    ``Content-Length`` sent beside it (the framed length here, 12 bytes more) is not taken as the file's (§6.3)."""
    url = serve(lambda _p, _h, _n: answer("200 OK", _chunked(DATA), (("Transfer-Encoding", "Chunked"),)))
    deadline = Deadline(10, "the test deadline")
    engine = Engine(Folder(str(tmp_path)), Client(3, deadline), deadline, connections=1, piece_size=100,
                    split_above=10 ** 6, retry_pause=0.01, log=lambda _l: None)
    engine.run([FileJob(url + "/notes.txt", "notes.txt", sha256=hashlib.sha256(DATA).hexdigest(), what="notes.txt")])
    assert (tmp_path / "notes.txt").read_bytes() == DATA


@pytest.mark.parametrize("coding", ["gzip, chunked", "chunked, chunked", "br"])
def test_the_refusal_names_the_transfer_coding(tmp_path: Path, coding: str) -> None:
    url = serve(lambda _p, _h, _n: answer("200 OK", _chunked(DATA), (("Transfer-Encoding", coding),)))
    deadline = Deadline(10, "the test deadline")
    engine = Engine(Folder(str(tmp_path)), Client(3, deadline), deadline, connections=1, piece_size=100,
                    split_above=10 ** 6, retry_pause=0.01, log=lambda _l: None)
    with pytest.raises(StagingError, match=f"Transfer-Encoding '{coding}'"):
        engine.run([FileJob(url + "/notes.txt", "notes.txt", what="notes.txt")])
    assert not (tmp_path / "notes.txt").exists()
