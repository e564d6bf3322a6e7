"""Staging against hostile files and servers: symlinks, FIFOs, devices and folders where files go; hubs whose
pagination loops, listings with the wrong types, servers that trickle, answer 503, cut a body that has no length,
or answer a range from the wrong offset. Every case ends in a failed (or unverified) source naming the path or
the reason, within its deadline, and nothing is written outside the source's folder."""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from instance import staging
from tests.support.staging import CdnServer, HubRepo, HubServer, git_blob_sha1

WEIGHTS = os.urandom(300_000)
CONFIG = b'{"hidden_size": 4096}\n'
TOKENIZER = b"tokenizer " * 1000
VICTIM = b"a checkpoint that must survive\n"


@pytest.fixture
def hub() -> Iterator[HubServer]:
    cdn = CdnServer()
    server = HubServer(cdn)
    try:
        yield server
    finally:
        server.close()
        cdn.close()


class Log(list):
    def __call__(self, line: str) -> None:
        self.append(line)

    def text(self) -> str:
        return "\n".join(self)


def settings_for(tmp_path: Path, hub: HubServer, sources: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"cloud": "aws", "region": "us-east-1", "data_sources": sources, "mount_point": str(tmp_path),
            "hub_endpoints": {"hf": hub.url, "modelscope": hub.url}, "metadata_url": "http://127.0.0.1:9",
            "staging_retry_seconds": 0.01, "staging_read_timeout_seconds": 5, **extra}


def bounded(call: Callable[[], dict[str, Any]], seconds: float = 10.0) -> dict[str, Any]:
    """``call()`` in a thread: a hang fails the test instead of hanging the suite."""
    out: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: out.update(value=call()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds} s"
    return out["value"]


def stage(tmp_path: Path, hub: HubServer, sources: list[dict[str, Any]], seconds: float = 10.0,
          **extra: Any) -> tuple[dict[str, Any], Log]:
    log = Log()
    check = bounded(lambda: staging.Stager(settings_for(tmp_path, hub, sources, **extra), log).run(), seconds)
    return check, log


def llama(hub: HubServer) -> dict[str, Any]:
    hub.add("meta/llama", HubRepo({"model.safetensors": WEIGHTS, "config.json": CONFIG, "sub/tokenizer.txt": TOKENIZER},
                                  lfs={"model.safetensors"}))
    return {"uri": "hf://meta/llama", "revision": "main"}


# --- confinement: symlinks, FIFOs, devices, folders ------------------------------------------------------------


def test_a_symlinked_subfolder_is_not_written_through(tmp_path: Path, hub: HubServer) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "tokenizer.txt").write_bytes(VICTIM)
    to = tmp_path / "models" / "llama"
    to.mkdir(parents=True)
    (to / "sub").symlink_to(outside)
    check, _ = stage(tmp_path, hub, [{**llama(hub), "to": str(to)}])
    assert check["ok"] is False
    assert f"{to}/sub is a symlink: refusing to follow it" in check["error"]
    assert (outside / "tokenizer.txt").read_bytes() == VICTIM and sorted(os.listdir(outside)) == ["tokenizer.txt"]


def test_a_stale_part_file_that_links_to_a_checkpoint_is_never_followed(tmp_path: Path, hub: HubServer) -> None:
    checkpoint = tmp_path / "checkpoints" / "step-9.pt"
    checkpoint.parent.mkdir()
    checkpoint.write_bytes(VICTIM)
    to = tmp_path / "models" / "llama"
    to.mkdir(parents=True)
    (to / "model.safetensors.part").symlink_to(checkpoint)
    check, _ = stage(tmp_path, hub, [{**llama(hub), "to": str(to)}])
    assert check["ok"] is False
    assert f"{to}/model.safetensors.part is a symlink: refusing to follow it" in check["error"]
    assert checkpoint.read_bytes() == VICTIM


def test_a_stale_part_file_hard_linked_to_a_checkpoint_is_never_written_through(tmp_path: Path, hub: HubServer) -> None:
    """Everything under the mount is one file system: a `.part` may be a second name of a checkpoint."""
    checkpoint = tmp_path / "checkpoints" / "step-9.pt"
    checkpoint.parent.mkdir()
    checkpoint.write_bytes(VICTIM)
    to = tmp_path / "models" / "llama"
    to.mkdir(parents=True)
    os.link(checkpoint, to / "model.safetensors.part")
    check, _ = stage(tmp_path, hub, [{**llama(hub), "to": str(to)}])
    assert check["ok"] is False
    assert f"{to}/model.safetensors.part has 2 names (a hard link)" in check["error"]
    assert checkpoint.read_bytes() == VICTIM


@pytest.mark.parametrize("make", ["fifo", "folder", "dev-zero", "link-to-file", "fifo-part"])
def test_something_other_than_a_file_where_a_file_goes_fails_the_source(tmp_path: Path, hub: HubServer,
                                                                         make: str) -> None:
    to = tmp_path / "models" / "llama"
    to.mkdir(parents=True)
    victim = tmp_path / "victim.json"
    victim.write_bytes(VICTIM)
    where = to / ("config.json.part" if make == "fifo-part" else "config.json")
    {"fifo": lambda: os.mkfifo(where), "fifo-part": lambda: os.mkfifo(where), "folder": lambda: where.mkdir(), "dev-zero": lambda: where.symlink_to("/dev/zero"),
     "link-to-file": lambda: where.symlink_to(victim)}[make]()
    check, _ = stage(tmp_path, hub, [{**llama(hub), "to": str(to)}], seconds=5)
    assert check["ok"] is False
    expected = {"fifo": "is a FIFO where a file is expected", "fifo-part": "is a FIFO where a file is expected", "folder": "is a folder where a file is expected",
                "dev-zero": "is a symlink where a file is expected", "link-to-file": "is a symlink where a file is expected"}
    assert f"{where} {expected[make]}" in check["error"]
    assert victim.read_bytes() == VICTIM


def test_an_https_file_over_a_symlink_to_dev_zero_is_refused(tmp_path: Path, hub: HubServer) -> None:
    url = hub.cdn.put("big.bin", WEIGHTS)
    to = tmp_path / "raw"
    to.mkdir()
    (to / "big.bin").symlink_to("/dev/zero")
    check, _ = stage(tmp_path, hub, [{"uri": url, "to": str(to), "sha256": hashlib.sha256(WEIGHTS).hexdigest()}])
    assert check["ok"] is False and f"{to}/big.bin is a symlink where a file is expected" in check["error"]
    assert hub.cdn.ranges("big.bin") == []  # refused before anything was downloaded


def test_a_to_folder_that_is_itself_a_symlink_is_refused(tmp_path: Path, hub: HubServer) -> None:
    outside = tmp_path / "etc"
    outside.mkdir()
    (tmp_path / "models").symlink_to(outside)
    check, _ = stage(tmp_path, hub, [{**llama(hub), "to": str(tmp_path / "models" / "llama")}])
    assert check["ok"] is False and f"{tmp_path}/models is a symlink: refusing to follow it" in check["error"]
    assert list(outside.iterdir()) == []


@pytest.mark.parametrize("path", ["../raw2/x", "../../etc/cron.d/x", "a/../../x", "/etc/x", "a//b", "./x"])
def test_a_listing_path_that_leaves_the_folder_or_is_not_normal_is_refused(tmp_path: Path, hub: HubServer,
                                                                          path: str) -> None:
    hub.add("meta/evil", HubRepo({path: b"* * * * * root sh\n"}))
    check, _ = stage(tmp_path, hub, [{"uri": "hf://meta/evil", "to": str(tmp_path / "raw")}])
    assert check["ok"] is False and f"refusing the path {path!r}: it leaves its folder" in check["error"]
    assert not (tmp_path / "raw2").exists() and sorted(p.name for p in tmp_path.iterdir()) == ["raw"]


# --- listings, pagination and servers that never finish --------------------------------------------------------


def test_a_listing_whose_next_page_loops_fails_instead_of_reading_forever(tmp_path: Path, hub: HubServer) -> None:
    hub.add("meta/llama", HubRepo({"a.txt": b"a", "b.txt": b"b", "c.txt": b"c"}, loop_pages=True))
    check, _ = stage(tmp_path, hub, [{"uri": "hf://meta/llama", "to": str(tmp_path / "m")}])
    assert check["ok"] is False and "was already read (the pagination loops)" in check["error"]
    assert len([p for p, _ in hub.requests if "/tree/" in p]) == 1


def test_a_listing_longer_than_the_page_cap_fails(tmp_path: Path, hub: HubServer) -> None:
    hub.add("meta/llama", HubRepo({f"{n}.txt": b"x" for n in range(7)}))  # 8 entries, 2 a page: 4 pages
    check, _ = stage(tmp_path, hub, [{"uri": "hf://meta/llama", "to": str(tmp_path / "m")}], staging_max_pages=3)
    assert check["ok"] is False and "the listing has more than 3 pages; refusing to read on" in check["error"]


@pytest.mark.parametrize(("entry", "message"), [
    ({"type": "file", "path": "a.bin", "size": "abc", "oid": "0" * 40}, "has 'size' = 'abc' (str); accepted: int"),
    ({"type": "file", "path": "a.bin", "size": True, "oid": "0" * 40}, "has 'size' = 'True' (bool); accepted: int"),
    ({"type": "file", "path": "a.bin", "size": -1, "oid": "0" * 40}, "has 'size' = -1; accepted: a size of 0 to 17592186044416 bytes (16 TiB)"),
    ({"type": "file", "path": "a.bin", "oid": "0" * 40}, "has 'size' = 'None' (NoneType); accepted: int"),
    ({"type": "file", "path": 5, "size": 1, "oid": "0" * 40}, "has 'path' = '5' (int); accepted: str"),
    ({"type": "file", "path": "a.bin", "size": 1, "oid": "xyz"}, "has 'oid' = 'xyz'; accepted: 40 hexadecimal digits"),
    ({"type": "file", "path": "a.bin", "size": 1, "oid": "0" * 40, "lfs": {"oid": "0" * 64, "size": "1"}},
     "has 'size' = '1' (str); accepted: int"),
    ("a.bin", "the listing holds str 'a.bin' where an object is expected"),
])
def test_a_malformed_hub_listing_fails_the_source_naming_the_field(tmp_path: Path, hub: HubServer, entry: Any,
                                                                   message: str) -> None:
    hub.add("meta/bad", HubRepo({}, listing=[entry]))
    check, _ = stage(tmp_path, hub, [{"uri": "hf://meta/bad", "to": str(tmp_path / "m")}])
    assert check["ok"] is False and message in check["error"], check["error"]
    assert check["error"].startswith("hf://meta/bad: hf://meta/bad: ")


def test_a_trickling_server_is_cut_off_by_the_sources_deadline(tmp_path: Path, hub: HubServer) -> None:
    url = hub.cdn.put("slow.bin", b"x" * 400, trickle=0.02)  # 8 s in all, never a read slower than 20 ms
    started = time.monotonic()
    check, _ = stage(tmp_path, hub, [{"uri": url, "to": str(tmp_path / "raw")}], seconds=6,
                     staging_source_deadline_seconds=1.0)
    took = time.monotonic() - started
    assert check["ok"] is False and "past the source's deadline (1 s) while downloading" in check["error"]
    assert took < 3, took
    assert check["deadlines"] == {"stage_seconds": 28800.0, "source_seconds": 1.0, "read_timeout_seconds": 5.0}


def test_the_stage_deadline_bounds_every_source_after_it(tmp_path: Path, hub: HubServer) -> None:
    slow = hub.cdn.put("slow.bin", b"x" * 400, trickle=0.02)
    fast = hub.cdn.put("fast.bin", CONFIG)
    check, _ = stage(tmp_path, hub, [{"uri": slow, "to": str(tmp_path / "a")}, {"uri": fast, "to": str(tmp_path / "b")}],
                     seconds=6, staging_deadline_seconds=1.0)
    first, second = check["sources"]
    assert "past the stage's deadline (1 s)" in first["error"]
    assert "past the stage's deadline (1 s) while starting" in second["error"]
    assert check["deadlines"]["stage_seconds"] == 1.0
    assert hub.cdn.ranges("fast.bin") == []


def test_transient_answers_are_retried_with_backoff_and_others_are_not(tmp_path: Path, hub: HubServer) -> None:
    url = hub.cdn.put("data.bin", WEIGHTS, statuses=[503, 429, 502])
    check, log = stage(tmp_path, hub, [{"uri": url, "to": str(tmp_path / "raw")}])
    assert check["ok"] is True, check
    assert (tmp_path / "raw" / "data.bin").read_bytes() == WEIGHTS
    assert len(hub.cdn.ranges("data.bin")) == 4
    assert "answered 503" in log.text() and "answered 429" in log.text() and "(attempt 3/5)" in log.text()
    gone = hub.cdn.put("gone.bin", WEIGHTS, statuses=[404])
    check, _ = stage(tmp_path, hub, [{"uri": gone, "to": str(tmp_path / "raw2")}])
    assert check["ok"] is False and "answered 404" in check["error"] and len(hub.cdn.ranges("gone.bin")) == 1


def test_transient_answers_stop_at_the_attempts(tmp_path: Path, hub: HubServer) -> None:
    url = hub.cdn.put("data.bin", WEIGHTS, statuses=[503] * 9)
    check, _ = stage(tmp_path, hub, [{"uri": url, "to": str(tmp_path / "raw")}], staging_attempts=3)
    assert check["ok"] is False and "gave up after 3 attempts" in check["error"]
    assert len(hub.cdn.ranges("data.bin")) == 3


def test_a_body_without_length_or_digest_is_unverified_never_staged(tmp_path: Path, hub: HubServer) -> None:
    url = hub.cdn.put("data.bin", WEIGHTS, no_length=True, cut_times=1)  # cut after half: looks like the end
    check, _ = stage(tmp_path, hub, [{"uri": url, "to": str(tmp_path / "raw")}])
    (result,) = check["sources"]
    assert check["ok"] is False and result["status"] == "unverified"
    assert "data.bin came with neither a length nor a digest" in result["error"] and "sha256" in result["error"]
    assert not (tmp_path / "raw" / staging.STATE_NAME).exists()
    # With its sha256 the same cut is caught (the digest differs) and a whole body is staged.
    sha = hashlib.sha256(WEIGHTS).hexdigest()
    hub.cdn.put("data.bin", WEIGHTS, no_length=True, cut_times=1)
    check, _ = stage(tmp_path, hub, [{"uri": url, "to": str(tmp_path / "raw3"), "sha256": sha}])
    assert check["ok"] is False and "digest mismatch" in check["error"]
    hub.cdn.put("data.bin", WEIGHTS, no_length=True)
    check, _ = stage(tmp_path, hub, [{"uri": url, "to": str(tmp_path / "raw4"), "sha256": sha}])
    assert check["ok"] is True and check["sources"][0]["status"] == "staged"


def test_a_range_answered_from_the_wrong_offset_fails(tmp_path: Path, hub: HubServer) -> None:
    url = hub.cdn.put("data.bin", WEIGHTS, cut_times=1, range_shift=10)
    check, _ = stage(tmp_path, hub, [{"uri": url, "to": str(tmp_path / "raw")}])
    half = len(WEIGHTS) // 2
    assert check["ok"] is False and f"asked for bytes from {half}, the server sent from {half + 10}" in check["error"]
    assert not (tmp_path / "raw" / "data.bin").exists()


def test_a_server_size_other_than_the_listings_fails(tmp_path: Path, hub: HubServer) -> None:
    entry = {"type": "file", "path": "config.json", "size": len(CONFIG) + 1, "oid": git_blob_sha1(CONFIG)}
    hub.add("meta/llama", HubRepo({"config.json": CONFIG}, listing=[entry]))
    check, _ = stage(tmp_path, hub, [{"uri": "hf://meta/llama", "to": str(tmp_path / "m")}])
    assert check["ok"] is False
    assert f"the server has {len(CONFIG)} bytes, the listing said {len(CONFIG) + 1}" in check["error"]


def test_a_staged_file_whose_size_changed_is_fetched_again(tmp_path: Path, hub: HubServer) -> None:
    src = {**llama(hub), "to": str(tmp_path / "m")}
    assert stage(tmp_path, hub, [src])[0]["ok"] is True
    with open(tmp_path / "m" / "config.json", "ab") as fh:
        fh.write(b" ")
    before = len(hub.cdn.requests)
    again, _ = stage(tmp_path, hub, [src])
    assert again["ok"] is True and again["sources"][0]["status"] == "staged"
    assert [p for p, _ in hub.cdn.requests[before:]] == ["/files/meta/llama/config.json"]
    assert (tmp_path / "m" / "config.json").read_bytes() == CONFIG


# --- parallel files and byte ranges -----------------------------------------------------------------------------

BIG = os.urandom(3 * 1024 * 1024 + 123)
PIECE = 512 * 1024


def parallel(**extra: Any) -> dict[str, Any]:
    return {"staging_split_above_bytes": 1024 * 1024, "staging_piece_bytes": PIECE, "staging_connections": 4, **extra}


def test_a_large_file_comes_as_parallel_ranges_verified_against_its_digest(tmp_path: Path, hub: HubServer) -> None:
    private = HubRepo({"model.safetensors": BIG, "config.json": CONFIG}, lfs={"model.safetensors"}, token="hf_" + "t" * 34)
    hub.add("meta/big", private)
    check, _ = stage(tmp_path, hub, [{"uri": "hf://meta/big", "to": str(tmp_path / "m")}],
                     **parallel(), hub_token_secret="unused")
    assert check["ok"] is False and "no hub token" in check["error"]  # no way to read the secret: nothing fetched
    private.token = None
    check, _ = stage(tmp_path, hub, [{"uri": "hf://meta/big", "to": str(tmp_path / "m")}], **parallel())
    assert check["ok"] is True, check
    assert (tmp_path / "m" / "model.safetensors").read_bytes() == BIG
    ranges = sorted(hub.cdn.ranges("meta/big/model.safetensors"), key=lambda r: int(r.split("=")[1].split("-")[0]))
    assert ranges == [f"bytes={a}-{min(a + PIECE, len(BIG)) - 1}" for a in range(0, len(BIG), PIECE)]
    assert hub.cdn.ranges("meta/big/config.json") == [None]
    assert not [p for p in (tmp_path / "m").iterdir() if p.name.endswith((".part", ".part.json"))]


def test_parallel_ranges_resume_across_a_reboot_from_what_is_on_disk(tmp_path: Path, hub: HubServer) -> None:
    hub.add("meta/big", HubRepo({"model.safetensors": BIG}, lfs={"model.safetensors"}))
    hub.cdn.files["meta/big/model.safetensors"].cut_times = 1
    src = {"uri": "hf://meta/big", "to": str(tmp_path / "m")}
    first, _ = stage(tmp_path, hub, [src], **parallel(staging_connections=1, staging_attempts=1))
    assert first["ok"] is False and "gave up after 1 attempts" in first["error"]
    assert (tmp_path / "m" / "model.safetensors.part.json").exists()
    asked = len(hub.cdn.ranges("meta/big/model.safetensors"))
    again, _ = stage(tmp_path, hub, [src], **parallel(staging_connections=1))  # the next boot
    assert again["ok"] is True, again
    assert (tmp_path / "m" / "model.safetensors").read_bytes() == BIG
    resumed = hub.cdn.ranges("meta/big/model.safetensors")[asked:]
    half = PIECE // 2
    # From where the cut left the first piece, in pieces again; nothing before the cut is asked twice.
    assert resumed == [f"bytes={a}-{min(a + PIECE, len(BIG)) - 1}" for a in range(half, len(BIG), PIECE)]
    ifr = [h.get("if-range") for p, h in hub.cdn.requests if p.endswith("model.safetensors")][asked:]
    assert set(ifr) == {hub.cdn.files["meta/big/model.safetensors"].etag}


def test_a_range_from_the_wrong_offset_fails_a_parallel_file(tmp_path: Path, hub: HubServer) -> None:
    hub.add("meta/big", HubRepo({"model.safetensors": BIG}, lfs={"model.safetensors"}))
    hub.cdn.files["meta/big/model.safetensors"].range_shift = 1
    check, _ = stage(tmp_path, hub, [{"uri": "hf://meta/big", "to": str(tmp_path / "m")}], **parallel())
    assert check["ok"] is False and "the server sent from" in check["error"]


def test_a_parallel_file_with_a_wrong_digest_is_refused_and_dropped(tmp_path: Path, hub: HubServer) -> None:
    hub.add("meta/big", HubRepo({"model.safetensors": BIG}, lfs={"model.safetensors"}, lie_about="model.safetensors"))
    check, _ = stage(tmp_path, hub, [{"uri": "hf://meta/big", "to": str(tmp_path / "m")}], **parallel())
    assert check["ok"] is False and "digest mismatch" in check["error"] and "0" * 64 in check["error"]
    assert sorted(os.listdir(tmp_path / "m")) == []


@pytest.mark.parametrize("name", [".gpulease-source.json", "sub/model.safetensors.part", "weights.part.json"])
def test_a_listed_file_named_as_stagings_own_records_is_refused(tmp_path: Path, hub: HubServer, name: str) -> None:
    hub.add("meta/odd", HubRepo({"config.json": CONFIG, name: b'{"evil": 1}'}))
    to = tmp_path / "models" / "odd"
    check, _ = stage(tmp_path, hub, [{"uri": "hf://meta/odd", "revision": "main", "to": str(to)}])
    assert check["ok"] is False
    assert f"{to}/{name}: the source lists a file named as staging's own records" in check["error"]


@pytest.mark.parametrize("name", [".gpulease-source.json", "x.part", "x.part.json", "a.tmp"])
def test_a_one_file_source_named_as_stagings_own_records_is_refused(tmp_path: Path, hub: HubServer, name: str) -> None:
    url = hub.cdn.put(name, b"important data\n" * 100)
    to = tmp_path / "raw"
    check, _ = stage(tmp_path, hub, [{"uri": url, "to": str(to)}])
    assert check["ok"] is False
    assert f"{to}/{name}: the source lists a file named as staging's own records" in check["error"]


@pytest.mark.parametrize("uri", ["s3://bucket-a/dir/.gpulease-source.json", "s3://bucket-a/x.part",
                                 "oss://bucket-a/k.part.json"])
def test_a_bucket_object_named_as_stagings_own_records_is_refused(tmp_path: Path, hub: HubServer, uri: str) -> None:
    to = tmp_path / "raw"
    check, _ = stage(tmp_path, hub, [{"uri": uri, "to": str(to)}], stage_commands={"object": ["true"]})
    assert check["ok"] is False
    assert f"{to}/{uri.rsplit('/', 1)[-1]}: the source lists a file named as staging's own records" in check["error"]


def test_a_file_downloads_retry_after_is_honoured(tmp_path: Path, hub: HubServer) -> None:
    url = hub.cdn.put("data.bin", WEIGHTS, statuses=[503], retry_after="1")
    started = time.monotonic()
    check, _ = stage(tmp_path, hub, [{"uri": url, "to": str(tmp_path / "raw")}])
    assert check["ok"] is True, check
    assert time.monotonic() - started >= 1.0  # the server's 1 s, not the 10 ms backoff of these settings
    assert len(hub.cdn.ranges("data.bin")) == 2


def test_a_retry_after_past_the_sources_deadline_fails_at_once(tmp_path: Path, hub: HubServer) -> None:
    url = hub.cdn.put("data.bin", WEIGHTS, statuses=[429], retry_after="50")
    started = time.monotonic()
    check, _ = stage(tmp_path, hub, [{"uri": url, "to": str(tmp_path / "raw")}], staging_source_deadline_seconds=5.0)
    assert check["ok"] is False and "no time left for another attempt before" in check["error"]
    assert time.monotonic() - started < 3.0 and len(hub.cdn.ranges("data.bin")) == 1
