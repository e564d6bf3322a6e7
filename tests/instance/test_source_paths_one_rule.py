"""One rule for a source's path on both sides: ``gpulease plan`` (``gpulease/core/datasources.py``) and the instance's
staging (``instance/staging_files.py``, which cannot import gpulease) refuse the same names: encoded separators
(``%2F``, ``%2f``, ``%5C``), escapes that are not UTF-8 (``%FF``: saved as U+FFFD otherwise), ``.``/``..`` after decoding, a name over 255 bytes of UTF-8 (a file name over 245, the
room left for ``.part.json``), a path over 4096 bytes. The same table goes to both, the boundary (names of 240-256
bytes, ASCII and CJK) included, and both sides refuse at their entry points (the spec's URI, staging's parse)."""

from __future__ import annotations

import random

import pytest

from gpulease.core import datasources as plan_side
from instance import staging
from instance import staging_files as instance_side

CJK = "\u4e2d"  # three bytes in UTF-8: 85 of them are 255 bytes, 86 are 258


def _https(path: str) -> str:
    return f"https://files.example.org{path}"


TABLE: list[tuple[str, bool, bool]] = [  # (path, a URI path (encoded), refused)
    ("/data/train.jsonl", True, False),
    ("/a%2Fb.bin", True, True), ("/a%2fb.bin", True, True), ("/a%5Cb.bin", True, True), ("/a%5cb.bin", True, True),
    ("/a%252Fb.bin", True, False),  # %25 is a %: the name is a%2Fb.bin, no separator
    ("/model%FF.bin", True, True), ("/caf%C3.txt", True, True), ("/%ED%A0%80.bin", True, True),  # not UTF-8
    ("/caf%C3%A9/%E2%82%AC.txt", True, False), ("/%EF%BF%BD.bin", True, False),  # café/€, U+FFFD itself
    ("/%2e%2e/etc/passwd", True, True), ("/%2E/x.bin", True, True), ("/a/./x.bin", True, True),
    ("/a/../x.bin", True, True), ("/a/%2e%2e", True, True), ("/a..b/x..y.bin", True, False),
    ("/" + "a" * 240, True, False), ("/" + "a" * 245, True, False), ("/" + "a" * 246, True, True),
    ("/" + "a" * 255 + "/f.bin", True, False), ("/" + "a" * 256 + "/f.bin", True, True),
    ("/" + "a" * 256, True, True),
    ("/" + CJK * 81 + ".bin", True, True),  # 247 bytes: a folder name may be this long, a file name not
    ("/" + CJK * 81 + "/f.bin", True, False), ("/" + CJK * 85 + "/f.bin", True, False),
    ("/" + CJK * 86 + "/f.bin", True, True), ("/" + CJK * 86, True, True),
    ("/" + "%E4%B8%AD" * 86 + "/f", True, True),  # the same CJK name, percent-encoded: counted decoded
    ("/" + "%E4%B8%AD" * 85 + "/f", True, False),
    ("/" + ("a" * 200 + "/") * 20 + "f", True, False),  # 4022 bytes
    ("/" + ("a" * 200 + "/") * 21 + "f", True, True),  # 4223 bytes
    ("data/" + "k" * 245, False, False), ("data/" + "k" * 246, False, True), ("data/" + "k" * 256 + "/", False, True),
    ("data/" + "k" * 255 + "/", False, False), ("data/a%2Fb", False, False), ("data/../x", False, True),
]


@pytest.mark.parametrize(("path", "encoded", "refused"), TABLE, ids=[f"{len(p)}:{p[:24]}" for p, _, _ in TABLE])
def test_both_sides_give_the_table_the_same_verdict(path: str, encoded: bool, refused: bool) -> None:
    plan = plan_side.source_path_problem(path, encoded)
    instance = instance_side.source_path_problem(path, encoded)
    assert (plan is not None, instance is not None) == (refused, refused), (plan, instance)
    assert plan == instance  # the same words too: one rule


def test_generated_names_around_the_boundary_get_the_same_verdicts() -> None:
    rng = random.Random(23)
    alphabet = ["a", "\u00e9", CJK, "\U0001f600", ".", "%2F", "%2e", "%E4%B8%AD", "%FF", "%C3", "%A9", "/"]
    for _ in range(3000):
        path = "/" + "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 130)))
        for encoded in (True, False):
            assert plan_side.source_path_problem(path, encoded) == instance_side.source_path_problem(path, encoded), path


def test_the_limits_are_the_same_numbers() -> None:
    assert (plan_side.NAME_MAX, plan_side.PATH_MAX, plan_side.FILE_NAME_MAX) == (
        instance_side.NAME_MAX, instance_side.PATH_MAX, instance_side.FILE_NAME_MAX) == (255, 4096, 245)
    assert plan_side.LONGEST_SUFFIX == instance_side.LONGEST_SUFFIX


@pytest.mark.parametrize(("path", "encoded", "refused"), [row for row in TABLE if row[2]])
def test_both_entry_points_refuse_what_the_rule_refuses(path: str, encoded: bool, refused: bool) -> None:
    uri = _https(path) if encoded else f"s3://my-bucket/{path}"
    with pytest.raises(ValueError):
        plan_side.parse_source(uri)
    with pytest.raises(staging.StagingError):
        staging.parse_uri(uri)


@pytest.mark.parametrize("path", [p for p, encoded, refused in TABLE if encoded and not refused])
def test_both_entry_points_accept_what_the_rule_accepts(path: str) -> None:
    plan_side.parse_source(_https(path))
    assert staging.parse_uri(_https(path))[2] == path
