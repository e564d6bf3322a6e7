"""The bootstrap on a cluster node: it writes cluster.env and installs gpulease-launch, and the node is ready only
when every peer answers on the notice port (a missing peer is named in the ready marker)."""

from __future__ import annotations

import socket
from pathlib import Path

from instance import cluster as cl
from instance import instance_setup as setup
from tests.support.instance import MetadataServer, MetadataState, ext4_image, make_boot_rig

SCRIPT = Path(setup.__file__)
ADDRESSES = ["127.0.0.1", "127.0.0.2", "127.0.0.3"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def boot(tmp_path: Path, port: int, listening: list[str]):
    image = ext4_image(tmp_path / "disk.img", {"model.pt": "weights"})
    servers = [cl.ClusterNotices({"cluster": {"cluster_id": "test.exp1", "rank": ADDRESSES.index(address), "nodes": 3,
                                             "notice_port": port}}, log=lambda *_: None, bind=address)
               for address in listening]  # the peers' watchdogs, each answering as its node
    for s in servers:
        s.start()
    try:
        with MetadataServer(MetadataState(cloud="aws")) as server:
            rig = make_boot_rig(tmp_path, image, metadata_url=server.url)
            rig.settings.update(
                stack="test",
                cluster={"cluster_id": "test.exp1", "rank": 1, "nodes": 3, "gpus_per_node": 8, "addresses": ADDRESSES,
                         "rendezvous_port": 29500, "notice_port": port, "join_timeout_seconds": 900, "fabric": "tcp",
                         "fabric_env": {"NCCL_IB_DISABLE": "1"}},
                cluster_env_path=str(tmp_path / "etc" / "cluster.env"),
                launcher_path=str(tmp_path / "usr" / "gpulease-launch"),
                install_dir="/opt/gpulease",
                peer_wait_seconds=1.5,
            )
            done = rig.run(SCRIPT)
    finally:
        for s in servers:
            s.stop()
    return rig, done


def test_a_node_whose_peer_does_not_answer_is_not_ready_and_names_it(tmp_path: Path) -> None:
    port = free_port()
    rig, done = boot(tmp_path, port, listening=["127.0.0.1"])
    assert done.returncode == 1, done.stdout
    assert rig.marker["ready"] is False and rig.marker["failed"] == ["peers"]
    assert rig.marker["checks"]["peers"]["error"] == f"not reachable within 2 s: node 2 (127.0.0.3:{port})"
    env = cl.read_env(str(tmp_path / "etc" / "cluster.env"))
    assert (env["GPULEASE_NODE_RANK"], env["MASTER_ADDR"], env["NCCL_IB_DISABLE"]) == ("1", "127.0.0.1", "1")
    launcher = (tmp_path / "usr" / "gpulease-launch").read_text()
    assert launcher == '#!/bin/sh\nexec python3 /opt/gpulease/gpulease_launch.py "$@"\n'
    assert "cluster node 1 of 3: cluster.env written, gpulease-launch installed; rendezvous 127.0.0.1:29500" in done.stdout


def test_a_node_that_sees_every_peer_is_ready(tmp_path: Path) -> None:
    rig, done = boot(tmp_path, free_port(), listening=["127.0.0.1", "127.0.0.3"])
    assert done.returncode == 0, done.stdout
    assert rig.marker["ready"] is True and rig.marker["checks"]["peers"] == {"ok": True, "rank": 1, "nodes": 3}
