"""Multi-range downloads and resumes judged by what the answers say about the file's identity and length."""

from __future__ import annotations

import json
from pathlib import Path

from instance.staging_fetch import Engine, FileJob
from instance.staging_files import Folder, StagingError
from instance.staging_http import Client, Deadline
from tests.instance._scripted_server import answer, serve

SIZE = 400


def _engine(root: Path) -> Engine:
    deadline = Deadline(10, "the test deadline")
    return Engine(Folder(str(root)), Client(3, deadline), deadline, connections=1, piece_size=100, split_above=150,
                  retry_pause=0.01, log=lambda _l: None)


def _ranges(headers: dict[str, str]) -> tuple[int, int]:
    a, _, b = headers["range"].split("=")[1].partition("-")
    return int(a), int(b) if b else SIZE - 1


def test_pieces_of_two_versions_without_a_validator_are_not_reported_verified(tmp_path: Path) -> None:
    """The server changes the file after the first piece and sends neither ETag nor Last-Modified: the pieces
    cannot be shown to be of one file (the same reason a .part without a validator is never resumed)."""
    def handler(_path: str, headers: dict[str, str], n: int) -> bytes:
        body = (b"A" if n == 1 else b"B") * SIZE
        if "range" not in headers:
            return answer("200 OK", body)
        a, b = _ranges(headers)
        return answer("206 Partial", body[a:b + 1], (("Content-Range", f"bytes {a}-{b}/{SIZE}"),))

    url = serve(handler)
    try:
        [result] = _engine(tmp_path).run([FileJob(url + "/f", "f", size=SIZE, what="f")])
    except StagingError:
        return
    data = (tmp_path / "f").read_bytes()
    assert not (result["verified"] and len(set(data)) > 1), f"spliced {sorted(set(data))} reported verified"


def test_a_range_answer_of_unknown_complete_length_is_not_a_size_mismatch(tmp_path: Path) -> None:
    """RFC 9110 §14.4: ``Content-Range: bytes 0-99/*`` is a valid 206 (complete length unknown)."""
    def handler(_path: str, headers: dict[str, str], _n: int) -> bytes:
        a, b = _ranges(headers)
        return answer("206 Partial", (b"A" * SIZE)[a:b + 1], (("Content-Range", f"bytes {a}-{b}/*"),
                                                               ("ETag", '"v1"')))

    url = serve(handler)
    [result] = _engine(tmp_path).run([FileJob(url + "/f", "f", size=SIZE, what="f")])
    assert result["size"] == SIZE


def test_a_416_naming_a_shorter_file_of_another_validator_does_not_finish_the_part(tmp_path: Path) -> None:
    """A resumed stream (4 bytes, ETag "v1", size unknown) answered 416 with ``Content-Range: bytes */2`` and ETag
    "v2": the file on the server is 2 bytes of another version, not the 4 on disk."""
    (tmp_path / "f.part").write_bytes(b"AAAA")
    (tmp_path / "f.part.json").write_text(json.dumps({"mode": "stream", "size": None, "etag": '"v1"'}))

    def handler(_path: str, headers: dict[str, str], _n: int) -> bytes:
        if "range" in headers:
            return answer("416 Range Not Satisfiable", b"", (("Content-Range", "bytes */2"), ("ETag", '"v2"')))
        return answer("200 OK", b"BB", (("ETag", '"v2"'),))

    url = serve(handler)
    try:
        _engine(tmp_path).run([FileJob(url + "/f", "f", what="f")])
    except StagingError:
        return
    assert (tmp_path / "f").read_bytes() == b"BB", "the old 4 bytes were accepted as the file"


def test_a_redirect_to_a_location_with_a_space_or_non_ascii_is_refused_in_one_line() -> None:
    import pytest

    from instance.staging_http import redirect_target
    for location in ("http://a b/", "http://h/\u00e9", "http://h/\x01"):
        with pytest.raises(StagingError, match="which is not a URL"):
            redirect_target("https://hub/x", location)


def test_pieces_of_no_validator_are_fetched_again_as_one_stream_and_match_the_digest(tmp_path: Path) -> None:
    """The listing carries the file's SHA-256, so the by-size verdict decides nothing here: a 206 with neither
    ETag nor Last-Modified (RFC 9110 §8.8.1) cannot show its bytes are of one version with the other pieces, so the
    file is asked again as one stream, and the current version is staged, its digest matching."""
    import hashlib

    new = b"B" * SIZE

    def handler(_path: str, headers: dict[str, str], n: int) -> bytes:
        body = b"A" * SIZE if n == 1 else new  # the file changes after the first piece
        if "range" not in headers:
            return answer("200 OK", body)
        a, b = _ranges(headers)
        return answer("206 Partial", body[a:b + 1], (("Content-Range", f"bytes {a}-{b}/{SIZE}"),))

    url = serve(handler)
    job = FileJob(url + "/f", "f", size=SIZE, sha256=hashlib.sha256(new).hexdigest(), what="f")
    [result] = _engine(tmp_path).run([job])
    assert (tmp_path / "f").read_bytes() == new and result["verified"], result
