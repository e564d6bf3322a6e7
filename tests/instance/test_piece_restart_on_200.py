"""Pieces of a file downloaded by ranges are joined only when they are of one version (docs/workflow.md, "Piece
validators"): a 200 answering a ranged request is the whole of the server's current version, and the pieces
already on disk (of the version the part was begun with) are never kept beside its bytes."""

from __future__ import annotations

import json
from pathlib import Path

from instance.staging_fetch import Engine, FileJob
from instance.staging_files import Folder, StagingError
from instance.staging_http import Client, Deadline
from tests.instance._scripted_server import answer, serve

SIZE = 400


def _engine(root: Path, connections: int = 1) -> Engine:
    deadline = Deadline(10, "the test deadline")
    return Engine(Folder(str(root)), Client(3, deadline), deadline, connections=connections, piece_size=100,
                  split_above=150, retry_pause=0.3, log=lambda _l: None)


def _ranges(headers: dict[str, str]) -> tuple[int, int]:
    a, _, b = headers["range"].split("=")[1].partition("-")
    return int(a), int(b) if b else SIZE - 1


def _ranged(body: bytes, etag: str, headers: dict[str, str]) -> bytes:
    """The server's version ``body`` (ETag ``etag``): a 206 when If-Range names it (or is absent), else a 200."""
    if "range" not in headers or headers.get("if-range", etag) != etag:
        return answer("200 OK", body, (("ETag", etag),))
    a, b = _ranges(headers)
    return answer("206 Partial", body[a:b + 1], (("Content-Range", f"bytes {a}-{b}/{SIZE}"), ("ETag", etag)))


def _not_spliced(root: Path, result: dict) -> None:
    data = (root / "f").read_bytes()
    assert not (result["verified"] and len(set(data)) > 1), (
        f"a file of bytes {sorted(set(data))} from two versions was reported verified")
    assert len(set(data)) == 1, f"the staged file joins two versions: bytes {sorted(set(data))}"



def _staged_whole_or_refused(tmp_path: Path, url: str) -> None:
    """Staging ``url`` either fails (refused) or stages one version's bytes, never pieces of two."""
    try:
        [result] = _engine(tmp_path).run([FileJob(url + "/f", "f", size=SIZE, what="f")])
    except StagingError:
        return
    _not_spliced(tmp_path, result)

def test_a_200_to_the_first_piece_after_a_reboot_does_not_join_the_pieces_on_disk(tmp_path: Path) -> None:
    """After a reboot, pieces 100-399 of version "v1" are on disk; the server now holds "v2" and answers the
    request for bytes 0-99 (``If-Range: "v1"``) with a 200 of the whole new file, as RFC 9110 §13.1.5 says. The
    part must be downloaded again from 0 (as a 200 to any other piece is), not finished as v2's first 100 bytes
    followed by v1's other 300."""
    (tmp_path / "f.part").write_bytes(b"A" * SIZE)
    (tmp_path / "f.part.json").write_text(json.dumps(
        {"mode": "pieces", "size": SIZE, "etag": '"v1"', "done": [[100, SIZE]], "url": "x"}))

    url = serve(lambda _p, headers, _n: _ranged(b"B" * SIZE, '"v2"', headers))
    _staged_whole_or_refused(tmp_path, url)


def test_a_200_to_a_retried_first_piece_does_not_join_the_pieces_already_written(tmp_path: Path) -> None:
    """The first piece is answered 503; the other pieces arrive as 206s of "v1"; then the file changes to "v2"
    and the retried first piece (``If-Range: "v1"``) is answered with a 200 of the whole new version. The pieces
    of v1 already written must be dropped, not joined to v2's first bytes and reported verified."""
    seen = {"first": 0}

    def handler(_path: str, headers: dict[str, str], _n: int) -> bytes:
        if "range" in headers and _ranges(headers)[0] == 0:
            seen["first"] += 1
            if seen["first"] == 1:
                return answer("503 Service Unavailable")
        if seen["first"] >= 2:
            return _ranged(b"B" * SIZE, '"v2"', headers)
        return _ranged(b"A" * SIZE, '"v1"', headers)

    url = serve(handler)
    _staged_whole_or_refused(tmp_path, url)


def test_a_first_piece_of_no_validator_is_not_joined_to_pieces_that_bring_one(tmp_path: Path) -> None:
    """The first piece is answered with a 200 carrying neither ETag nor Last-Modified (a server that ignores
    ``Range``); the file then changes and the other pieces come as 206s with ETag "v2". Nothing shows the first
    100 bytes are of v2, so they are not joined to its pieces and reported verified."""
    def handler(_path: str, headers: dict[str, str], n: int) -> bytes:
        if n == 1:
            return answer("200 OK", b"A" * SIZE)
        return _ranged(b"B" * SIZE, '"v2"', headers)

    url = serve(handler)
    _staged_whole_or_refused(tmp_path, url)


def test_a_modelscope_file_listed_without_sha256_is_not_staged_from_two_versions(tmp_path: Path) -> None:
    """ModelScope lists ``Sha256`` only for some files: a large file listed with its size alone is downloaded in
    pieces, and only the pieces' shared validator shows they are of one version. After a reboot with v1's pieces
    100-399 on disk, the server answers the first piece with a 200 of v2: the source is not "staged" with v2's
    first bytes before v1's."""
    from instance.staging import Stager

    to = tmp_path / "m"
    to.mkdir()
    (to / "w.bin.part").write_bytes(b"A" * SIZE)
    (to / "w.bin.part.json").write_text(json.dumps(
        {"mode": "pieces", "size": SIZE, "etag": '"v1"', "done": [[100, SIZE]], "url": "x"}))

    def handler(path: str, headers: dict[str, str], _n: int) -> bytes:
        if "/repo/files" in path:
            return answer("200 OK", json.dumps({"Data": {"Files": [{"Path": "w.bin", "Size": SIZE,
                                                                    "Type": "blob"}]}}).encode())
        return _ranged(b"B" * SIZE, '"v2"', headers)

    url = serve(handler)
    settings = {"data_sources": [{"uri": "modelscope://org/m", "to": str(to)}], "hub_endpoints": {"modelscope": url},
                "staging_split_above_bytes": 150, "staging_piece_bytes": 100, "staging_connections": 1,
                "staging_retry_seconds": 0.01, "staging_deadline_seconds": 20}
    check = Stager(settings, lambda _l: None).run()
    [source] = check["sources"]
    if source["status"] == "staged":
        data = (to / "w.bin").read_bytes()
        assert len(set(data)) == 1, f"staged from two versions: bytes {sorted(set(data))}; {source}"
