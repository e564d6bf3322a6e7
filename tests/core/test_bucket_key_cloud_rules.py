"""A bucket source's key is one the cloud can hold, checked at plan (``parse_source``, ``data.sources[N].uri``),
not on the paid instance: an OSS object name never starts with ``/`` (Alibaba Cloud, "Object naming conventions":
"cannot start with a forward slash (/) or a backslash (\\)"; ``oss://bucket//file`` names key ``/file``, and the
one-object grant ``acs:oss:*:*:bucket//file`` then names no object that can exist), and no key is longer than the
cloud allows (S3: 1,024 bytes of UTF-8, "Naming Amazon S3 objects"; OSS: 1,023 bytes)."""

from __future__ import annotations

import pytest

from gpulease.core.datasources import parse_source


@pytest.mark.parametrize("uri", ["oss://alice-data//weights.bin", "oss://alice-data//models/"])
def test_an_oss_key_starting_with_a_slash_is_refused(uri: str) -> None:
    with pytest.raises(ValueError):
        parse_source(uri)


@pytest.mark.parametrize(("scheme", "most"), [("s3", 1024), ("oss", 1023)])
def test_a_key_longer_than_the_cloud_allows_is_refused(scheme: str, most: int) -> None:
    key = "/".join(["d" * 200] * 6)[: most + 1 - len("x.bin")] + "x.bin"
    assert len(key.encode()) == most + 1
    with pytest.raises(ValueError):
        parse_source(f"{scheme}://alice-data/{key}")


@pytest.mark.parametrize(("scheme", "most"), [("s3", 1024), ("oss", 1023)])
def test_a_key_of_the_longest_length_is_accepted(scheme: str, most: int) -> None:
    key = "/".join(["d" * 200] * 6)[: most - len("x.bin")] + "x.bin"
    assert parse_source(f"{scheme}://alice-data/{key}").what == key


def test_an_s3_key_starting_with_a_slash_is_a_key_s3_can_hold() -> None:
    """S3 keys may start with ``/`` ("Naming Amazon S3 objects" limits only their length): ``s3://b//w.bin``
    names the key ``/w.bin``."""
    assert parse_source("s3://alice-data//weights.bin").what == "/weights.bin"


@pytest.mark.parametrize(("scheme", "most"), [("s3", 1024), ("oss", 1023)])
def test_a_prefix_leaves_room_for_a_name_under_it(scheme: str, most: int) -> None:
    """Every key under a prefix is longer than the prefix: one of the cloud's longest length holds no object."""
    fits = "/".join(["d" * 200] * 6)[: most - 2] + "/"
    assert len(fits.encode()) == most - 1
    assert parse_source(f"{scheme}://alice-data/{fits}").what == fits
    with pytest.raises(ValueError):
        parse_source(f"{scheme}://alice-data/{fits[:-1]}d/")

