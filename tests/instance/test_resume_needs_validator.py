"""A ``.part`` left by an interrupted staging of a file served without an ``ETag`` (no ``.part.json`` is written
then) is resumed with a bare ``Range`` request, no ``If-Range``: when the file changed on the server meanwhile, the
old bytes and the new are spliced (``AAAABBBB``) and the source is reported ``staged``, ok."""

from __future__ import annotations

from pathlib import Path

from instance import staging
from tests.instance._scripted_server import answer, serve

NEW = b"B" * 8


MODIFIED = (("Last-Modified", "Thu, 03 Dec 2026 17:00:00 GMT"),)  # no Date: not a strong validator


def _server() -> str:
    """Answers a bare Range (no If-Range) with a 206 of the new file, anything else with a 200 of it."""
    def handler(_path: str, headers: dict[str, str], _n: int) -> bytes:
        rng = headers.get("range")
        if rng and "if-range" not in headers:
            start = int(rng.split("=")[1].split("-")[0])
            return answer("206 P", NEW[start:], (("Content-Range", f"bytes {start}-{len(NEW) - 1}/{len(NEW)}"),
                                                  *MODIFIED))
        return answer("200 OK", NEW, MODIFIED)

    return serve(handler)


def test_a_part_file_without_a_validator_is_not_spliced_with_a_changed_file(tmp_path: Path) -> None:
    to = tmp_path / "t"
    to.mkdir()
    (to / "f.bin.part").write_bytes(b"AAAA")  # an earlier run's first half of AAAAAAAA
    settings = {"cloud": "aws", "region": "us-east-1", "mount_point": str(tmp_path),
                "data_sources": [{"uri": _server() + "/f.bin", "to": str(to)}], "metadata_url": "http://127.0.0.1:9",
                "staging_retry_seconds": 0.01, "staging_read_timeout_seconds": 5}
    check = staging.Stager(settings, lambda _l: None).run()
    staged = (to / "f.bin").read_bytes() if (to / "f.bin").exists() else None
    assert not (check["ok"] and staged != NEW), f"reported ok with {staged!r}, which the server never served"


class _Answer:
    def __init__(self, **headers: str) -> None:
        self.headers = headers

    def getheader(self, name: str, default: str | None = None) -> str | None:
        return self.headers.get(name, default)


def test_only_a_strong_validator_may_go_in_if_range() -> None:
    from instance.staging_fetch import if_range_validator
    modified, later = "Thu, 03 Dec 2026 17:00:00 GMT", "Thu, 03 Dec 2026 17:00:01 GMT"
    assert if_range_validator(_Answer(ETag='"v1"')) == '"v1"'
    assert if_range_validator(_Answer(ETag='W/"v1"', **{"Last-Modified": modified, "Date": later})) is None
    assert if_range_validator(_Answer(**{"Last-Modified": modified, "Date": later})) == modified
    assert if_range_validator(_Answer(**{"Last-Modified": modified, "Date": modified})) is None  # weak: same second
    assert if_range_validator(_Answer(**{"Last-Modified": modified})) is None
    assert if_range_validator(_Answer()) is None


def _ignoring_if_range(seen: list[dict[str, str]]) -> str:
    """Answers a Range with a 206 of the new file whatever If-Range says (its ETag is no longer the part's)."""
    def handler(_path: str, headers: dict[str, str], _n: int) -> bytes:
        seen.append(headers)
        if "range" in headers:
            start = int(headers["range"].split("=")[1].split("-")[0])
            return answer("206 P", NEW[start:], (("ETag", '"new"'),
                                                  ("Content-Range", f"bytes {start}-{len(NEW) - 1}/{len(NEW)}")))
        return answer("200 OK", NEW, (("ETag", '"new"'),))

    return serve(handler)


def test_a_206_with_another_validator_is_not_spliced_onto_the_part(tmp_path: Path) -> None:
    to = tmp_path / "t"
    to.mkdir()
    (to / "f.bin.part").write_bytes(b"AAAA")
    (to / "f.bin.part.json").write_text('{"mode": "stream", "size": 8, "etag": "\\"old\\""}')
    seen: list[dict[str, str]] = []
    settings = {"cloud": "aws", "region": "us-east-1", "mount_point": str(tmp_path),
                "data_sources": [{"uri": _ignoring_if_range(seen) + "/f.bin", "to": str(to)}],
                "metadata_url": "http://127.0.0.1:9", "staging_retry_seconds": 0.01,
                "staging_read_timeout_seconds": 5}
    check = staging.Stager(settings, lambda _l: None).run()
    assert seen[0].get("if-range") == '"old"' and seen[0]["range"] == "bytes=4-", seen
    assert check["ok"] and (to / "f.bin").read_bytes() == NEW, check


def test_a_part_file_of_no_validator_is_not_resumed_even_when_the_range_answer_has_one(tmp_path: Path) -> None:
    """The ``.part`` was written while the file had no validator (no ``.part.json``); the server now has another
    version with a strong ETag and honours a bare Range with a 206 of it. That ETag vouches for the bytes it sends,
    not for the four already on disk: the part is dropped and the file asked whole, with no Range."""
    to = tmp_path / "t"
    to.mkdir()
    (to / "f.bin.part").write_bytes(b"AAAA")
    seen: list[dict[str, str]] = []
    settings = {"cloud": "aws", "region": "us-east-1", "mount_point": str(tmp_path),
                "data_sources": [{"uri": _ignoring_if_range(seen) + "/f.bin", "to": str(to)}],
                "metadata_url": "http://127.0.0.1:9", "staging_retry_seconds": 0.01,
                "staging_read_timeout_seconds": 5}
    check = staging.Stager(settings, lambda _l: None).run()
    assert check["ok"] and (to / "f.bin").read_bytes() == NEW, (check, (to / "f.bin").read_bytes())
    assert "range" not in seen[0], seen
