"""Staging against numbers no server or hub should send: a non-ASCII digit in ``Retry-After`` or
``Content-Length`` (``²`` passes ``str.isdigit``), a listed size beyond any file system's largest file, a body
longer than the listing's size; and one source failing in a way nobody foresaw fails that source alone."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from instance import staging
from tests.instance.test_staging_hostile import WEIGHTS, stage
from tests.support.staging import CdnServer, HubRepo, HubServer


@pytest.fixture
def hub() -> Iterator[HubServer]:
    cdn = CdnServer()
    server = HubServer(cdn)
    try:
        yield server
    finally:
        server.close()
        cdn.close()


def test_ascii_digits_only() -> None:
    from instance.staging_http import ascii_digits

    assert ascii_digits("120") and not ascii_digits("\xb2") and not ascii_digits("\u0663") and not ascii_digits("")
    assert not ascii_digits("9" * 21)


def test_a_superscript_retry_after_is_no_wait_and_no_crash(tmp_path: Path, hub: HubServer) -> None:
    url = hub.cdn.put("data.bin", WEIGHTS, statuses=[503], retry_after="\xb2")
    check, log = stage(tmp_path, hub, [{"uri": url, "to": str(tmp_path / "raw")}])
    assert check["ok"] is True, check
    assert "answered 503" in log.text() and (tmp_path / "raw" / "data.bin").read_bytes() == WEIGHTS


@pytest.mark.parametrize("length", ["\xb2", "\xd9\xa3"])
def test_a_non_ascii_content_length_is_no_length(tmp_path: Path, hub: HubServer, length: str) -> None:
    url = hub.cdn.put("data.bin", WEIGHTS, length_header=length)
    sha = hashlib.sha256(WEIGHTS).hexdigest()
    check, _ = stage(tmp_path, hub, [{"uri": url, "to": str(tmp_path / "raw"), "sha256": sha}])
    assert check["ok"] is True, check
    assert (tmp_path / "raw" / "data.bin").read_bytes() == WEIGHTS


@pytest.mark.parametrize("size", [2 ** 63, 16 * 1024 ** 4 + 1])
def test_a_listed_size_beyond_the_largest_file_is_refused_before_any_space_is_taken(
        tmp_path: Path, hub: HubServer, size: int) -> None:
    entry = {"type": "file", "path": "w.bin", "size": size, "oid": "0" * 40}
    hub.add("org/m", HubRepo({"w.bin": b"A" * 10}, listing=[entry]))
    check, _ = stage(tmp_path, hub, [{"uri": "hf://org/m", "to": str(tmp_path / "m")}])
    assert check["ok"] is False
    assert check["sources"][0]["error"].endswith(
        f"the listing's entry 'w.bin' has 'size' = {size}; accepted: a size of 0 to 17592186044416 bytes (16 TiB)")
    assert not (tmp_path / "m" / "w.bin").exists() and not (tmp_path / "m" / "w.bin.part").exists()


def test_a_body_longer_than_the_listed_size_fails_the_source(tmp_path: Path, hub: HubServer) -> None:
    listed = b"A" * 50
    hub.add("org/m", HubRepo({"w.bin": listed}, lfs={"w.bin"}))
    hub.cdn.put("org/m/w.bin", b"A" * 100, no_length=True)  # no length: the body ends where the server closes
    check, _ = stage(tmp_path, hub, [{"uri": "modelscope://org/m", "to": str(tmp_path / "m")}])
    assert check["ok"] is False, check
    assert "the server sent more than the listing's 50 bytes" in check["sources"][0]["error"]
    assert not (tmp_path / "m" / staging.STATE_NAME).exists()
    hub.cdn.put("org/m/w.bin", listed, no_length=True)  # the same length as listed: staged
    check, _ = stage(tmp_path, hub, [{"uri": "modelscope://org/m", "to": str(tmp_path / "m")}])
    assert check["ok"] is True, check


def test_one_source_failing_unforeseen_fails_it_alone_naming_it(tmp_path: Path, hub: HubServer,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    first = hub.cdn.put("first.bin", WEIGHTS)
    second = hub.cdn.put("second.bin", WEIGHTS)
    real = staging.Stager.fetch

    def fetch(self: staging.Stager, src: dict[str, Any], *args: Any) -> Any:
        if src["uri"] == first:
            raise OverflowError("Python int too large to convert to C long")
        return real(self, src, *args)

    monkeypatch.setattr(staging.Stager, "fetch", fetch)
    check, log = stage(tmp_path, hub, [{"uri": first, "to": str(tmp_path / "a")},
                                       {"uri": second, "to": str(tmp_path / "b")}])
    one, two = check["sources"]
    assert check["ok"] is False
    assert one["ok"] is False and one["error"] == "OverflowError: Python int too large to convert to C long"
    assert f"staging {first} FAILED: OverflowError" in log.text()
    assert two["ok"] is True and (tmp_path / "b" / "second.bin").read_bytes() == WEIGHTS
