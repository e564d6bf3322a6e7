"""A cluster node's launch, for real: the settings the program renders for each node → the bootstrap's
``cluster.env`` → ``gpulease-launch`` → ``torchrun``. Two "nodes" are two processes on loopback: they form a gloo
process group and complete an all-reduce; a node lost mid-job ends the job on the other instead of hanging it. Every
node, rank 0 included, waits for its peers' watchdogs (the real listener, ``ClusterNotices``) before the job starts,
bounded and saying why."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from components.cluster import cluster_settings
from components.plan import ClusterPlacement, PlacedExperiment, Placement
from components.spec.experiment import ExperimentSpec
from gpulease.core.catalog import load_catalog
from gpulease.core.catalog.fabric import fabric_of
from instance import cluster as cl
from instance import gpulease_launch
from tests.support.paths import ROOT
from tests.support.specs import experiment

LAUNCHER = ROOT / "instance" / "gpulease_launch.py"
TORCHRUN = f"{sys.executable} -m torch.distributed.run"

TRAIN = """
import json, os, sys
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
value = torch.tensor([float(rank + 1)])
dist.all_reduce(value)
with open(os.path.join(sys.argv[1], f"rank{rank}.json"), "w") as fh:
    json.dump({"rank": rank, "world": dist.get_world_size(), "sum": value.item(), "node": os.environ["GROUP_RANK"],
               "master": os.environ["MASTER_ADDR"] + ":" + os.environ["MASTER_PORT"],
               "async_errors": os.environ.get("TORCH_NCCL_ASYNC_ERROR_HANDLING")}, fh)
if len(sys.argv) > 2 and sys.argv[2] == "lose-node-1":
    if rank == 1:
        os._exit(1)  # the node is gone: no goodbye to its peers
    dist.all_reduce(value)  # rank 0 waits in a collective with a peer that no longer exists
dist.destroy_process_group()
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def node_settings(rank: int, *, port: int, nodes: int = 2, gpus: int = 1, join: int = 60,
                  notice: int = 29400) -> dict[str, Any]:
    """What the program puts in node ``rank``'s settings (components/cluster.py), every node on loopback."""
    spec = ExperimentSpec.model_validate(experiment(nodes=nodes, cluster={
        "rendezvousPort": port, "noticePort": notice, "joinTimeoutSeconds": join}))
    itype = load_catalog().get("aws", "g5.12xlarge")
    placed = PlacedExperiment(
        itype.model_copy(update={"gpu_count": gpus}), Placement("us-east-1a", "vpc-1", "subnet-1"), "ami-1",
        ClusterPlacement(nodes=nodes, addresses=tuple(f"127.0.0.{r + 1}" for r in range(nodes)), fabric=fabric_of("aws", "g5.12xlarge"),
                         fabric_interfaces=0, low_latency=False),
    )
    cluster = cluster_settings(spec, placed, rank, stack="test", shared_uri="s3://bucket/ckpt/")
    return {"stack": "test", "experiment": spec.name, "cluster": json.loads(cluster.model_dump_json())}


def bootstrap_env(tmp_path: Path, rank: int, **kw: Any) -> Path:
    """The bootstrap's cluster.env for node ``rank`` (instance_setup calls the same function)."""
    path = tmp_path / f"node{rank}" / "cluster.env"
    cl.write_cluster_env(node_settings(rank, **kw), str(path))
    return path


@contextmanager
def watchdogs(notice: int, *, nodes: int = 2) -> Iterator[None]:
    """The nodes' watchdogs listening for notices (``ClusterNotices``, the watchdog's own listener): node r on
    127.0.0.(r+1), each answering a peer's hello as itself."""
    listeners = [cl.ClusterNotices(node_settings(rank, port=free_port(), nodes=nodes, notice=notice),
                                   log=lambda *_: None, bind=f"127.0.0.{rank + 1}") for rank in range(nodes)]
    for notices in listeners:
        notices.start()
        assert notices.server is not None
    try:
        yield
    finally:
        for notices in listeners:
            notices.stop()


def launch(env_file: Path, *args: str) -> subprocess.Popen:
    env = {**os.environ, "GPULEASE_CLUSTER_ENV": str(env_file), "GPULEASE_TORCHRUN": TORCHRUN, "OMP_NUM_THREADS": "1"}
    return subprocess.Popen([sys.executable, str(LAUNCHER), *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def finish(proc: subprocess.Popen, limit: float) -> tuple[int, str]:
    try:
        out, _ = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        pytest.fail(f"still running after {limit} s:\n{out[-3000:]}")
    return proc.returncode, out


def test_cluster_env_holds_rank_peers_rendezvous_and_fabric_and_reads_back(tmp_path: Path) -> None:
    path = bootstrap_env(tmp_path, 1, port=29555, nodes=3, gpus=8)
    text = path.read_text()
    assert text.startswith("# gpulease cluster.env: node 1 of 3 (test/exp1)")
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    values = cl.read_env(str(path))
    assert {k: values[k] for k in ("GPULEASE_NODE_RANK", "GPULEASE_NNODES", "GPULEASE_GPUS_PER_NODE", "MASTER_ADDR",
                                   "MASTER_PORT", "GPULEASE_FABRIC", "GPULEASE_MAX_RESTARTS", "NCCL_IB_DISABLE",
                                   "TORCH_NCCL_ASYNC_ERROR_HANDLING", "GPULEASE_CLUSTER_ID")} == {
        "GPULEASE_NODE_RANK": "1", "GPULEASE_NNODES": "3", "GPULEASE_GPUS_PER_NODE": "8", "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": "29555", "GPULEASE_FABRIC": "tcp", "GPULEASE_MAX_RESTARTS": "0", "NCCL_IB_DISABLE": "1",
        "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1", "GPULEASE_CLUSTER_ID": "test.exp1"}
    # A shell sources it and the command it starts sees every value (export lines: `source cluster.env; torchrun`),
    # without `set -a`.
    show = "import os; print(os.environ['MASTER_ADDR'] + ':' + os.environ['MASTER_PORT'], os.environ['NCCL_SOCKET_IFNAME'])"
    out = subprocess.run(["sh", "-c", f'. {path}; "{sys.executable}" -c "{show}"'], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "127.0.0.1:29555 ^lo,docker"
    # systemd's EnvironmentFile reads the same KEY=value lines; the export line has no "=" and is ignored there.
    last = text.splitlines()[-1]
    assert last.startswith("export GPULEASE_CLUSTER_ID GPULEASE_NODE_RANK ") and "=" not in last


def test_cluster_env_quotes_what_needs_it_and_refuses_a_line_break() -> None:
    text = cl.render_env({"A": "plain-1.2,3", "B": "has space"}, "h")
    assert text == "# h\nA=plain-1.2,3\nB='has space'\nexport A B\n"
    with pytest.raises(ValueError, match="refusing"):
        cl.render_env({"A": "x\nB=evil"}, "h")


def test_the_launcher_runs_torchrun_with_a_static_rendezvous_at_rank_0_and_no_restarts(tmp_path: Path) -> None:
    path = bootstrap_env(tmp_path, 1, port=29600, nodes=4, gpus=8, join=900)
    env = {**os.environ, "GPULEASE_CLUSTER_ENV": str(path), "GPULEASE_TORCHRUN": "torchrun"}
    out = subprocess.run([sys.executable, str(LAUNCHER), "--print", "train.py", "--lr", "3e-4"], env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [
        "torchrun", "--nnodes", "4", "--nproc-per-node", "8", "--node-rank", "1", "--master-addr", "127.0.0.1",
        "--master-port", "29600", "--rdzv-backend", "static", "--rdzv-id", "test.exp1", "--rdzv-conf", "timeout=900",
        "--max-restarts", "0", "--monitor-interval", "5", "train.py", "--lr", "3e-4"]


def test_a_node_whose_rendezvous_never_answers_gives_up_with_a_message(tmp_path: Path) -> None:
    notice = free_port()
    path = bootstrap_env(tmp_path, 1, port=free_port(), join=60, notice=notice)
    lines = path.read_text().replace("GPULEASE_JOIN_TIMEOUT_SECONDS=60", "GPULEASE_JOIN_TIMEOUT_SECONDS=2")
    path.write_text(lines)
    started = time.monotonic()
    with watchdogs(notice):
        code, out = finish(launch(path, "train.py"), 60)
    assert code == 3
    assert f"node 1: waiting up to 2 s for 1 peer(s) (node 0 at 127.0.0.1:{notice})" in out
    assert "node 1: every peer answers" in out
    assert "rank 0's rendezvous 127.0.0.1:" in out and "did not answer within 2 s" in out
    assert time.monotonic() - started < 30


def test_the_launcher_without_a_cluster_env_says_so(tmp_path: Path) -> None:
    env = {**os.environ, "GPULEASE_CLUSTER_ENV": str(tmp_path / "missing.env")}
    out = subprocess.run([sys.executable, str(LAUNCHER), "train.py"], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "is this a node of a gpulease cluster?" in out.stderr
    assert gpulease_launch.main([]) == 2


@pytest.mark.parametrize(("content", "said"), [
    (b"", "GPULEASE_NODE_RANK, GPULEASE_NNODES, GPULEASE_GPUS_PER_NODE, MASTER_ADDR, MASTER_PORT, GPULEASE_CLUSTER_ID, "
          "GPULEASE_JOIN_TIMEOUT_SECONDS, GPULEASE_NODE_ADDRESSES, GPULEASE_NOTICE_PORT missing"),
    (b"\xff\xfe garbage\n", "not UTF-8 (byte 0)"),
    (b"just some words\n", ":1: not KEY=value"),
    (b"export A='unterminated\n", ":1: A: No closing quotation"),
])
def test_an_empty_or_garbage_cluster_env_is_one_line_not_a_traceback(tmp_path: Path, content: bytes, said: str,
                                                                     capsys: pytest.CaptureFixture[str],
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "cluster.env"
    path.write_bytes(content)
    monkeypatch.setenv("GPULEASE_CLUSTER_ENV", str(path))
    assert gpulease_launch.main(["train.py"]) == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_a_cluster_env_with_a_rank_that_is_not_a_number_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    path = bootstrap_env(tmp_path, 1, port=29601)
    path.write_text(path.read_text().replace("GPULEASE_NODE_RANK=1", "GPULEASE_NODE_RANK=one"))
    monkeypatch.setenv("GPULEASE_CLUSTER_ENV", str(path))
    assert gpulease_launch.main(["--print", "train.py"]) == 2
    assert "GPULEASE_NODE_RANK='one' is not a whole number" in capsys.readouterr().err


def test_two_nodes_rendezvous_on_loopback_and_all_reduce(tmp_path: Path) -> None:
    """The real thing: each node's cluster.env from the program's settings, gpulease-launch, torchrun, gloo."""
    port = free_port()
    results = tmp_path / "results"
    results.mkdir()
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    notice = free_port()
    env0, env1 = bootstrap_env(tmp_path, 0, port=port, notice=notice), bootstrap_env(tmp_path, 1, port=port, notice=notice)
    with watchdogs(notice):
        node1 = launch(env1, str(script), str(results))  # the later node first: it waits for rank 0's port
        time.sleep(0.5)
        node0 = launch(env0, str(script), str(results))
        code0, out0 = finish(node0, 240)
        code1, out1 = finish(node1, 240)
    assert (code0, code1) == (0, 0), out0[-3000:] + out1[-3000:]
    assert "node 1: waiting up to 60 s for the rendezvous at 127.0.0.1:" in out1 and "answers" in out1
    assert f"node 0: waiting up to 60 s for 1 peer(s) (node 1 at 127.0.0.2:{notice}) before the job starts" in out0
    assert "node 0: every peer answers" in out0
    seen = [json.loads((results / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert [(s["rank"], s["world"], s["sum"], s["node"]) for s in seen] == [(0, 2, 3.0, "0"), (1, 2, 3.0, "1")]
    assert {s["master"] for s in seen} == {f"127.0.0.1:{port}"}
    assert {s["async_errors"] for s in seen} == {"1"}


def test_a_lost_node_ends_the_job_on_the_other_instead_of_hanging(tmp_path: Path) -> None:
    port = free_port()
    results = tmp_path / "results"
    results.mkdir()
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    notice = free_port()
    with watchdogs(notice):
        node1 = launch(bootstrap_env(tmp_path, 1, port=port, notice=notice), str(script), str(results), "lose-node-1")
        time.sleep(0.5)
        started = time.monotonic()
        node0 = launch(bootstrap_env(tmp_path, 0, port=port, notice=notice), str(script), str(results), "lose-node-1")
        code0, out0 = finish(node0, 240)
        code1, _ = finish(node1, 240)
    # Both agents end with a failure (max-restarts 0): the collective with the lost peer errors, nothing hangs.
    assert code0 != 0 and code1 != 0, out0[-3000:]
    assert time.monotonic() - started < 200
    assert (results / "rank0.json").exists() and (results / "rank1.json").exists(), "the group had formed"


def test_rank_0_waits_for_its_peers_and_does_not_start_the_job_without_them(tmp_path: Path) -> None:
    """Rank 0 too: with no peer's watchdog answering, the job does not start (exit 3, the node named), within the
    join timeout; once a peer's watchdog listens, the wait ends as soon as it answers."""
    notice = free_port()
    path = bootstrap_env(tmp_path, 0, port=free_port(), nodes=3, notice=notice)
    path.write_text(path.read_text().replace("GPULEASE_JOIN_TIMEOUT_SECONDS=60", "GPULEASE_JOIN_TIMEOUT_SECONDS=2"))
    started = time.monotonic()
    code, out = finish(launch(path, "--check"), 60)
    assert code == 3, out
    assert (f"gpulease-launch: node 0: waiting up to 2 s for 2 peer(s) (node 1 at 127.0.0.2:{notice}, node 2 at "
            f"127.0.0.3:{notice}) before the job starts: every node must be up for the rendezvous") in out
    assert (f"gpulease-launch: node 0: the job does not start: node 1 (127.0.0.2:{notice}), node 2 (127.0.0.3:{notice}) "
            "did not answer within 2 s") in out
    assert time.monotonic() - started < 20  # the peers are waited for at once, not one after the other

    path.write_text(path.read_text().replace("GPULEASE_JOIN_TIMEOUT_SECONDS=2", "GPULEASE_JOIN_TIMEOUT_SECONDS=60"))
    node0 = launch(path, "--check")
    time.sleep(1.0)  # the peers' watchdogs come up after rank 0 started waiting
    with watchdogs(notice, nodes=3):
        code, out = finish(node0, 60)
    assert code == 0, out
    assert "node 0: waiting up to 60 s for 2 peer(s)" in out and "node 0: every peer answers" in out


def test_wait_for_peers_is_bounded_in_all_whatever_the_number_of_peers() -> None:
    lines: list[str] = []
    started = time.monotonic()
    missing = cl.wait_for_peers(["10.0.0.1", "127.0.0.1", "127.0.0.1", "127.0.0.1"], 0, free_port(), 1.5,
                                cluster_id="test.exp1", log=lines.append)
    assert time.monotonic() - started < 6
    assert [m.split(" (")[0] for m in missing] == ["node 1", "node 2", "node 3"]
    assert lines[-1].startswith("node 0: not reachable within 2 s: node 1 (127.0.0.1:")
    assert cl.wait_for_peers(["127.0.0.1"], 0, 1, 5.0, cluster_id="test.exp1", log=lines.append) == []  # alone: nothing to wait for
