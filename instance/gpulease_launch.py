#!/usr/bin/env python3
"""gpulease-launch: run ``torchrun`` on a cluster node with what the node was told (standard library only).

``gpulease-launch train.py --your-args`` on every node (the same command everywhere; DeepSpeed and Accelerate read
the same variables). It reads ``/etc/gpulease/cluster.env`` (``GPULEASE_CLUSTER_ENV`` points elsewhere), exports the
fabric's variables, and waits for the other nodes before the job starts: on every node, rank 0 included, until each
peer's watchdog answers on ``GPULEASE_NOTICE_PORT`` as that node (``cluster.wait_for_peers``), then on a node other
than rank 0 until rank 0's rendezvous port does, both within ``GPULEASE_JOIN_TIMEOUT_SECONDS`` in all, each wait and
its end a line on stderr (exit 3 with a message naming the nodes or the address otherwise). Then it replaces itself
with::

    torchrun --nnodes N --nproc-per-node G --node-rank R --master-addr <rank 0> --master-port P
             --rdzv-backend static --rdzv-id <stack/experiment> --rdzv-conf timeout=<join timeout>
             --max-restarts 0 --monitor-interval 5 train.py --your-args

The static rendezvous fixes each node's rank (rank 0 hosts the store, so global rank 0, which writes the shared
checkpoint, is on node 0) and waits ``timeout`` seconds for every node. ``--max-restarts 0``: a lost node cannot come
back into a fixed-size cluster, so when a worker fails (a peer gone, a collective that errors or times out with
``TORCH_NCCL_ASYNC_ERROR_HANDLING=1``) torchrun ends the job on every node instead of hanging; the next run resumes
from the last checkpoint. ``GPULEASE_TORCHRUN`` names another launcher command (default ``torchrun``);
``--print`` prints the command instead of running it; ``--check`` runs only the rendezvous check.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
import time

try:
    from instance import bounds
    from instance import cluster as cl
except ImportError:  # on the instance: cluster.py is installed next to this file
    import bounds  # type: ignore[no-redef]
    import cluster as cl  # type: ignore[no-redef]

MONITOR_INTERVAL_SECONDS = bounds.value("launch_monitor")
USAGE = "usage: gpulease-launch [--print | --check] SCRIPT [ARGS...]"


def torchrun_argv(env: dict[str, str], script_and_args: list[str], torchrun: list[str]) -> list[str]:
    return [
        *torchrun,
        "--nnodes", env["GPULEASE_NNODES"],
        "--nproc-per-node", env["GPULEASE_GPUS_PER_NODE"],
        "--node-rank", env["GPULEASE_NODE_RANK"],
        "--master-addr", env["MASTER_ADDR"],
        "--master-port", env["MASTER_PORT"],
        "--rdzv-backend", "static",
        # torchrun makes a log folder named after the run id: no path separator in it.
        "--rdzv-id", re.sub(r"[^A-Za-z0-9._-]", "-", env["GPULEASE_CLUSTER_ID"]),
        "--rdzv-conf", f"timeout={env['GPULEASE_JOIN_TIMEOUT_SECONDS']}",
        "--max-restarts", env.get("GPULEASE_MAX_RESTARTS", "0"),
        "--monitor-interval", str(MONITOR_INTERVAL_SECONDS),
        *script_and_args,
    ]


def _say(line: str) -> None:
    print(f"gpulease-launch: {line}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    mode = args.pop(0) if args and args[0] in ("--print", "--check") else None
    if not args and mode != "--check":
        print(USAGE, file=sys.stderr)
        return 2
    path = os.environ.get("GPULEASE_CLUSTER_ENV", cl.CLUSTER_ENV_PATH)
    try:
        cluster_env = cl.launch_env(path)
    except (OSError, ValueError) as exc:
        print(f"gpulease-launch: cannot read {path}: {exc} (is this a node of a gpulease cluster?)", file=sys.stderr)
        return 2
    env = {**os.environ, **cluster_env}
    rank = int(env["GPULEASE_NODE_RANK"])
    host, port = env["MASTER_ADDR"], int(env["MASTER_PORT"])
    limit = float(env["GPULEASE_JOIN_TIMEOUT_SECONDS"])
    command = torchrun_argv(env, args, shlex.split(os.environ.get("GPULEASE_TORCHRUN", "torchrun")))
    if mode == "--print":
        print(shlex.join(command))
        return 0
    end = time.monotonic() + limit
    addresses = [a for a in env["GPULEASE_NODE_ADDRESSES"].split(",") if a]
    missing = cl.wait_for_peers(addresses, rank, int(env["GPULEASE_NOTICE_PORT"]), limit,
                                cluster_id=env["GPULEASE_CLUSTER_ID"], log=_say)
    if missing:
        print(f"gpulease-launch: node {rank}: the job does not start: {', '.join(missing)} did not answer within "
              f"{limit:.0f} s (is the node up and its gpulease-watchdog running? check the security group's cluster "
              "rules)", file=sys.stderr)
        return 3
    limit = max(0.0, end - time.monotonic())
    if rank != 0:
        print(f"gpulease-launch: node {rank}: waiting up to {limit:.0f} s for the rendezvous at {host}:{port}",
              file=sys.stderr, flush=True)
        if not cl.wait_for_port(host, port, limit):
            print(f"gpulease-launch: node {rank}: rank 0's rendezvous {host}:{port} did not answer within {limit:.0f} s; "
                  "start gpulease-launch on node 0 (and check the security group's cluster rules)", file=sys.stderr)
            return 3
        print(f"gpulease-launch: node {rank}: {host}:{port} answers", file=sys.stderr, flush=True)
    if mode == "--check":
        return 0
    os.execvpe(command[0], command, env)
    return 127  # not reached


if __name__ == "__main__":
    sys.exit(main())
