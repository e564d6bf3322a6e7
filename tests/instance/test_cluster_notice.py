"""A spot notice on one node of a cluster makes every node save and sync: the watchdog that sees it tells its peers
over the (loopback) network and leaves a marker in the bucket; every peer runs its own hook, sync and shutdown.
Three watchdogs run in this process, one per loopback address (127.0.0.1-3), each with its own stand-ins."""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from instance import cluster as cl
from instance import watchdog
from tests.support.instance import (
    DEADLINE_EPOCH,
    FakeClock,
    MetadataServer,
    MetadataState,
    executable,
    iso,
    make_rig,
)

START = DEADLINE_EPOCH - 6 * 3600
ADDRESSES = ["127.0.0.1", "127.0.0.2", "127.0.0.3"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cluster(rank: int, port: int, **extra: Any) -> dict[str, Any]:
    return {"cluster_id": "test.exp1", "rank": rank, "nodes": len(ADDRESSES), "gpus_per_node": 8,
            "addresses": ADDRESSES, "rendezvous_port": 29500, "notice_port": port, "join_timeout_seconds": 900,
            "fabric": "tcp", "fabric_env": {}, "notice_poll_seconds": 30, **extra}


def fake_storage(bin_dir: Path, bucket: Path, log: Path) -> Path:
    """``aws s3 cp SRC DST``: s3://bucket/key is the file bucket/key; anything else is a local path."""
    return executable(bin_dir / "aws-copy", f"""import os, shutil, sys
args = sys.argv[1:]
src, dst = args[2], args[3]
def local(uri):
    return os.path.join({str(bucket)!r}, uri[len("s3://"):]) if uri.startswith("s3://") else uri
with open({str(log)!r}, "a") as fh:
    fh.write(" ".join(args) + "\\n")
if not os.path.exists(local(src)):
    sys.exit(1)
os.makedirs(os.path.dirname(local(dst)) or ".", exist_ok=True)
shutil.copyfile(local(src), local(dst))
""")


def node(tmp_path: Path, rank: int, port: int, metadata_url: str, bucket: Path, **extra: Any):
    root = tmp_path / f"node{rank}"
    root.mkdir()
    ranks = root / "hook-ranks"
    hook = executable(root / "hook", f"""import os
with open({str(ranks)!r}, "a") as fh:
    fh.write(os.environ["GPULEASE_NODE_RANK"] + "/" + os.environ["GPULEASE_NNODES"] + " " + os.environ["GPULEASE_REASON"] + "\\n")
""")
    copy = fake_storage(root, bucket, root / "storage.log")
    rig = make_rig(
        root, metadata_url=metadata_url, checkpoint_hook=str(hook),
        cluster=cluster(rank, port, notice_uri="s3://bucket/ckpt/_gpulease/cluster/",
                        copy_command=[str(copy), "s3", "cp", "{src}", "{dst}", "--region", "{region}"], **extra),
    )
    clock = FakeClock(START)
    watchdog.configure_logging({**rig.settings, "log_file": str(tmp_path / "watchdogs.log")}, clock)
    return rig, watchdog.Watchdog(rig.settings, clock), ranks


@pytest.fixture
def servers():
    with MetadataServer(MetadataState(cloud="aws", instance_action={"action": "terminate", "time": iso(START + 120)})) as noticed, \
            MetadataServer(MetadataState(cloud="aws")) as quiet:
        yield noticed, quiet


def test_a_notice_on_one_node_makes_every_node_run_its_hook_sync_and_shutdown(tmp_path: Path, servers) -> None:
    noticed, quiet = servers
    port, bucket = free_port(), tmp_path / "bucket"
    nodes = [node(tmp_path, r, port, (noticed if r == 1 else quiet).url, bucket) for r in range(3)]
    dogs = [dog for _, dog, _ in nodes]
    try:
        for r in (0, 2):
            dogs[r].run(max_ticks=1)  # listening, nothing seen
            assert not dogs[r].done
        started = time.monotonic()
        dogs[1].run(max_ticks=5)  # sees the instance-action notice, tells nodes 0 and 2, then its own sequence
        assert dogs[1].done and time.monotonic() - started < 60
        for r in (0, 2):
            dogs[r].run(max_ticks=5)
            assert dogs[r].done, f"node {r} did not act on its peer's notice"
    finally:
        for dog in dogs:
            dog.cluster.stop()
    for rank, (rig, _, ranks) in enumerate(nodes):
        assert rig.names() == ["sync", "shutdown"], f"node {rank}: {rig.names()}"
        reason = "spot-interruption" if rank == 1 else "cluster-spot-interruption"
        assert ranks.read_text() == f"{rank}/3 {reason}\n"
    log = (tmp_path / "watchdogs.log").read_text()
    assert "told 2 of 2 peers of the spot notice" in log
    assert log.count("cluster-spot-interruption: node 1 of the cluster got a spot notice (spot instance-action terminate") == 2
    # The marker outlives node 1, for a peer whose listener was down.
    marker = json.loads((bucket / "bucket/ckpt/_gpulease/cluster/notice.json").read_text())
    assert (marker["cluster"], marker["from"]) == ("test.exp1", 1)


def test_a_peer_whose_listener_was_down_hears_through_the_bucket_marker(tmp_path: Path, servers) -> None:
    noticed, quiet = servers
    port, bucket = free_port(), tmp_path / "bucket"
    nodes = [node(tmp_path, r, port, (noticed if r == 1 else quiet).url, bucket) for r in range(3)]
    dogs = [dog for _, dog, _ in nodes]
    try:
        dogs[0].run(max_ticks=1)
        started = time.monotonic()
        dogs[1].run(max_ticks=5)  # node 2 is not listening yet: 3 bounded attempts, then on
        assert dogs[1].done and time.monotonic() - started < 60
        dogs[2].run(max_ticks=8)  # its first marker read finds the notice
        assert dogs[2].done
    finally:
        for dog in dogs:
            dog.cluster.stop()
    log = (tmp_path / "watchdogs.log").read_text()
    assert "told 1 of 2 peers of the spot notice; not reached: 2 (the bucket marker is written for them)" in log
    assert "read node 1's spot notice from the bucket marker" in log
    assert nodes[2][2].read_text() == "2/3 cluster-spot-interruption\n"


def test_a_marker_from_before_this_node_booted_is_an_earlier_clusters_and_ignored(tmp_path: Path) -> None:
    stored: dict[str, str] = {}

    def marker_io(direction: str, src: str, dst: str) -> bool:
        if direction == "put":
            stored[dst] = Path(src).read_text()
            return True
        if src not in stored:
            return False
        Path(dst).write_text(stored[src])
        return True

    settings = {"state_dir": str(tmp_path), "cluster": cluster(0, free_port(), notice_uri="s3://b/p/_gpulease/cluster/")}
    logged: list[str] = []
    old = cl.ClusterNotices(settings, log=lambda e, m: logged.append(m), marker_io=marker_io, now=lambda: 1000.0)
    old.cluster = {**old.cluster, "rank": 1}
    old._write_marker(cl.notice_message(old.cluster, "spot", None, 1000.0))
    mono = [0.0]
    later = cl.ClusterNotices(settings, log=lambda e, m: logged.append(m), marker_io=marker_io,
                              monotonic=lambda: mono[0], not_before=5000.0)
    assert later.pending() is None, "a notice older than this boot is ignored"
    fresh = cl.ClusterNotices(settings, log=lambda e, m: logged.append(m), marker_io=marker_io,
                              monotonic=lambda: mono[0], not_before=500.0)
    assert fresh.pending()["from"] == 1
    # Read at most every notice_poll_seconds.
    stored.clear()
    calls = []
    polled = cl.ClusterNotices(settings, log=lambda e, m: None, marker_io=lambda *a: calls.append(a) or False,
                               monotonic=lambda: mono[0])
    for t in (0.0, 10.0, 29.0, 30.0, 45.0, 61.0):
        mono[0] = t
        polled.pending()
    assert len(calls) == 3  # at 0, 30 and 61


def test_only_a_notice_naming_this_cluster_and_another_node_is_heeded(tmp_path: Path) -> None:
    notices = cl.ClusterNotices({"cluster": cluster(0, free_port())}, log=lambda e, m: None)
    assert not notices.accept({"cluster": "other.stack", "from": 1})
    assert not notices.accept({"cluster": "test.exp1", "from": 0})  # itself
    assert not notices.accept({"cluster": "test.exp1", "from": 7})  # no such node
    assert not notices.accept(["test.exp1"])
    assert not notices.accept(cl.hello_message("test.exp1", 2))  # a peer's wait, not a notice
    assert notices.pending() is None
    assert notices.accept({"cluster": "test.exp1", "from": 2, "reason": "r"})
    assert notices.pending()["from"] == 2


def test_a_watchdog_listens_on_its_own_private_address_only(tmp_path: Path) -> None:
    port = free_port()
    with MetadataServer(MetadataState(cloud="aws")) as quiet:
        _, dog, _ = node(tmp_path, 2, port, quiet.url, tmp_path / "bucket")
        try:
            dog.run(max_ticks=1)
            assert cl.reachable("127.0.0.3", port, 2.0)
            assert not cl.reachable("127.0.0.1", port, 2.0), "not on every address"
        finally:
            dog.cluster.stop()


def test_telling_unreachable_peers_is_bounded(tmp_path: Path) -> None:
    port = free_port()  # nobody listens there
    started = time.monotonic()
    told = cl.broadcast(cluster(1, port), {"cluster": "test.exp1", "from": 1}, attempts=3, timeout=0.5, pause=0.1)
    assert told == {0: False, 2: False}
    assert time.monotonic() - started < 10


def test_peers_that_accept_but_never_answer_are_told_at_once_not_one_after_another() -> None:
    port = free_port()
    hanging = [f"127.0.0.{i}" for i in range(10, 20)]
    servers = [socket.create_server((address, port)) for address in hanging]  # never accepted, never answered
    try:
        started = time.monotonic()
        told = cl.broadcast(cluster(0, port) | {"addresses": ["127.0.0.1", *hanging], "nodes": 11},
                            {"cluster": "test.exp1", "from": 0}, attempts=2, timeout=0.5, pause=0.1)
        took = time.monotonic() - started
    finally:
        for s in servers:
            s.close()
    assert told == dict.fromkeys(range(1, 11), False)
    assert took < 6, f"{took:.1f} s: one peer after another would take 10 x 2 x 0.6 = 12 s"


def listening(rank: int, port: int, **extra: Any) -> cl.ClusterNotices:
    """Node ``rank``'s watchdog listener on its own loopback address."""
    notices = cl.ClusterNotices({"cluster": cluster(rank, port, **extra)}, log=lambda e, m: None,
                                bind=ADDRESSES[rank])
    notices.start()
    assert notices.server is not None
    return notices


def test_the_peers_check_names_the_node_it_cannot_reach(tmp_path: Path) -> None:
    port = free_port()
    node0 = listening(0, port)
    try:
        result = cl.check_peers({"cluster": cluster(1, port)}, limit=1.5)
        assert result["ok"] is False
        assert result["error"] == f"not reachable within 2 s: node 2 ({ADDRESSES[2]}:{port})"
        node2 = listening(2, port)
        try:
            assert cl.check_peers({"cluster": cluster(1, port)}, limit=5)["ok"] is True
        finally:
            node2.stop()
    finally:
        node0.stop()
    assert node0.pending() is None, "a peer's wait is not a spot notice"


def test_a_listener_that_never_speaks_or_answers_as_another_node_is_not_a_peer() -> None:
    """Any program on the notice port (a plain socket that accepts and stays silent, another cluster's watchdog, a
    node with another rank) is not the peer's watchdog: the wait goes on to its bound and names the node."""
    port = free_port()
    silent = socket.create_server((ADDRESSES[0], port))  # accepts, never answers
    other = listening(2, port, cluster_id="other.stack")  # node 2's address, another cluster's watchdog
    try:
        started = time.monotonic()
        result = cl.check_peers({"cluster": cluster(1, port)}, limit=1.5)
        took = time.monotonic() - started
    finally:
        silent.close()
        other.stop()
    assert result["error"] == (f"not reachable within 2 s: node 0 ({ADDRESSES[0]}:{port}), "
                               f"node 2 ({ADDRESSES[2]}:{port})")
    assert 1.5 <= took < 8
    wrong_rank = listening(0, port)  # node 0's watchdog where node 2 is expected
    try:
        assert not cl.wait_for_watchdog(ADDRESSES[0], port, "test.exp1", 2, 0.5)
        assert cl.wait_for_watchdog(ADDRESSES[0], port, "test.exp1", 0, 0.5)
    finally:
        wrong_rank.stop()


def test_a_port_wait_takes_its_whole_bound_before_it_gives_up() -> None:
    port = free_port()  # nobody listens there
    for wait in (cl.wait_for_port, lambda h, p, limit: cl.wait_for_watchdog(h, p, "test.exp1", 0, limit)):
        started = time.monotonic()
        assert not wait("127.0.0.1", port, 2.5)
        took = time.monotonic() - started
        assert 2.5 <= took < 4.5, f"gave up after {took:.2f} s of 2.5"


def test_the_launcher_is_installed_as_a_command(tmp_path: Path) -> None:
    target = tmp_path / "bin" / "gpulease-launch"
    cl.install_launcher("/opt/gpulease", str(target))
    assert target.read_text() == '#!/bin/sh\nexec python3 /opt/gpulease/gpulease_launch.py "$@"\n'
    assert target.stat().st_mode & 0o111 == 0o111


def test_threads_left_behind_are_none(tmp_path: Path) -> None:
    notices = cl.ClusterNotices({"cluster": cluster(0, free_port()), "state_dir": str(tmp_path)}, log=lambda e, m: None,
                                bind="127.0.0.1")
    before = threading.active_count()
    notices.start()
    notices.stop()
    time.sleep(0.3)
    assert threading.active_count() <= before


def test_a_peer_that_hangs_past_its_timeout_does_not_hold_the_broadcast(monkeypatch) -> None:
    import time as _time

    from instance import cluster as _cl

    monkeypatch.setattr(_cl, "send_notice", lambda *a, **k: _time.sleep(30) or True)
    cluster = {"rank": 0, "notice_port": 1, "addresses": ["127.0.0.1", "127.0.0.2"]}
    started = _time.monotonic()
    told = _cl.broadcast(cluster, {"reason": "x"}, attempts=1, timeout=0.2, pause=0.1)
    assert told == {1: False} and _time.monotonic() - started < 5
