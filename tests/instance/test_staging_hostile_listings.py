"""Hub listings that name a path with characters that do not read as themselves, or one path twice: refused
before anything is downloaded, naming the entry (escaped: the log never carries a terminal escape raw)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from instance import staging_files, staging_hubs
from tests.instance.test_staging_hostile import stage
from tests.support.staging import CdnServer, HubRepo, HubServer, git_blob_sha1


@pytest.fixture
def hub() -> Iterator[HubServer]:
    cdn = CdnServer()
    server = HubServer(cdn)
    try:
        yield server
    finally:
        server.close()
        cdn.close()


@pytest.mark.parametrize(("name", "escaped", "code"), [
    ("evil\x1b[2J\nname\u202etxt.bin", "'evil\\x1b[2J\\x0aname\\u202etxt.bin'", "U+001B"),
    ("sub/a\u200bb.bin", "'sub/a\\u200bb.bin'", "U+200B"),
    ("x\u3164.bin", "'x\\u3164.bin'", "U+3164"),
])
def test_a_listed_path_with_a_hidden_character_is_refused_escaped(tmp_path: Path, hub: HubServer, name: str,
                                                                 escaped: str, code: str) -> None:
    data = b"payload"
    hub.add("org/m", HubRepo({name: data}, listing=[{"type": "file", "path": name, "size": len(data),
                                                     "oid": git_blob_sha1(data)}]))
    check, log = stage(tmp_path, hub, [{"uri": "hf://org/m", "to": str(tmp_path / "m")}])
    error = check["sources"][0]["error"]
    assert check["ok"] is False
    assert error == (f"refusing the path {escaped}: it holds {code}, a character that is not shown as itself; "
                     "accepted: names of visible characters")
    assert "\x1b" not in log.text() and "\u202e" not in log.text()
    assert [p for p in os.listdir(tmp_path / "m") if not p.startswith(".")] == [] if (tmp_path / "m").exists() else True
    assert not hub.cdn.requests  # nothing was downloaded


def test_rel_parts_keeps_visible_names() -> None:
    assert staging_files.rel_parts("sub/Über ünïcødé 模型.bin") == ["sub", "Über ünïcødé 模型.bin"]


def test_a_path_listed_twice_is_refused_before_any_download(tmp_path: Path, hub: HubServer) -> None:
    one, two = b"1" * 10, b"2" * 20
    listing = [{"type": "file", "path": "w.bin", "size": len(d), "oid": git_blob_sha1(d)} for d in (one, two)]
    hub.add("org/m", HubRepo({"w.bin": one}, listing=listing))
    check, _ = stage(tmp_path, hub, [{"uri": "hf://org/m", "to": str(tmp_path / "m")}])
    assert check["ok"] is False
    assert check["sources"][0]["error"] == ("hf://org/m: the listing names 'w.bin' twice; accepted: a listing "
                                            "naming each file once")
    assert not hub.cdn.requests


def test_a_modelscope_listing_naming_a_path_twice_is_refused() -> None:
    answer = {"Data": {"Files": [{"Path": "w.bin", "Size": 10}, {"Path": "a/b", "Size": 1},
                                 {"Path": "w.bin", "Size": 20}]}}
    with pytest.raises(staging_files.StagingError, match=r"^modelscope://org/m: the listing names 'w.bin' twice; "):
        staging_hubs.modelscope_files(lambda url: (answer, None), "https://hub", "org/m", "master", "modelscope://org/m")


NFC, NFD = "caf\u00e9", "cafe\u0301"  # é as one code point, and as e with a combining acute accent


@pytest.mark.parametrize(("paths", "first", "second"), [
    ([f"{NFC}.txt", f"{NFD}.txt"], "'cafe\\u0301.txt'", "'caf\\u00e9.txt'"),  # the hub lists sorted: e before é
    ([f"{NFD}/a.txt", "z.bin", f"{NFC}/b.txt"], "'cafe\\u0301'", "'caf\\u00e9'"),  # two folders of one name
])
def test_one_name_in_two_unicode_forms_is_refused_naming_both(tmp_path: Path, hub: HubServer, paths: list[str],
                                                              first: str, second: str) -> None:
    files = {path: path.encode() for path in paths}
    hub.add("org/m", HubRepo(files))
    check, _ = stage(tmp_path, hub, [{"uri": "hf://org/m", "to": str(tmp_path / "m")}])
    assert check["ok"] is False
    assert check["sources"][0]["error"] == (f"hf://org/m: the listing names {first} and {second}, one name in two "
                                            "Unicode forms (NFC and NFD); accepted: a listing naming each file and "
                                            "folder in one form")
    assert not hub.cdn.requests  # refused before anything is downloaded


def test_names_in_one_form_and_other_accents_are_staged(tmp_path: Path, hub: HubServer) -> None:
    files = {f"{NFC}/a.txt": b"a", f"{NFC}/b.txt": b"b", "cafe.txt": b"c", "caf\u00e8.txt": b"d"}  # e, é, è apart
    hub.add("org/m", HubRepo(files))
    check, _ = stage(tmp_path, hub, [{"uri": "hf://org/m", "to": str(tmp_path / "m")}])
    assert check["ok"] is True, check
    assert (tmp_path / "m" / NFC / "b.txt").read_bytes() == b"b"


def test_a_modelscope_listing_with_one_name_in_two_forms_is_refused() -> None:
    answer = {"Data": {"Files": [{"Path": f"{NFC}.bin", "Size": 10}, {"Path": f"{NFD}.bin", "Size": 20}]}}
    with pytest.raises(staging_files.StagingError, match=r"^modelscope://org/m: the listing names 'caf\\u00e9.bin' "
                                                         r"and 'cafe\\u0301.bin', one name in two Unicode forms"):
        staging_hubs.modelscope_files(lambda url: (answer, None), "https://hub", "org/m", "master", "modelscope://org/m")
