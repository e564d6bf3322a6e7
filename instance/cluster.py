#!/usr/bin/env python3
"""gpulease cluster node: what a node of a cluster does besides what a single instance does (standard library only).

The node's settings carry a ``cluster`` object (``components/userdata/cluster.py``): its rank, every node's private
address (rank 0's is the rendezvous), GPUs per node, ports, the fabric's variables. From it this module

- writes ``/etc/gpulease/cluster.env`` (``write_cluster_env``): ``KEY=value`` lines that ``gpulease-launch`` reads,
  that a shell can ``source`` and a systemd unit can name in ``EnvironmentFile``;
- installs the ``gpulease-launch`` command (``install_launcher``);
- checks that the node sees its peers (``check_peers``): every peer's watchdog, which listens on ``notice_port``,
  answers a hello as that node of this cluster (``{"cluster": ..., "rank": ...}``; a listener that never speaks or
  names another node does not count), bounded in time; the bootstrap puts the result in the ready marker;
- waits for its peers before the job starts (``wait_for_peers``, which ``gpulease-launch`` runs on every node, rank
  0 included): every peer's watchdog, all at once, at most the join timeout in all, saying why it waits, who answered
  and who did not;
- carries a spot notice from the node that saw it to every other node (``ClusterNotices``): the watchdog that sees
  the notice tells each peer over the private network (a one-line JSON message to ``notice_port``, all peers at
  once, each tried at most ``NOTICE_ATTEMPTS`` times with ``NOTICE_CONNECT_SECONDS`` each) and leaves a marker in the bucket (the
  shared checkpoint prefix's ``_gpulease/cluster/notice.json``); every watchdog listens for the message and reads
  the marker every ``notice_poll_seconds``, so a peer whose listener was down (a restarting service) still hears of
  it within one poll. A notice names the cluster; one that names another is ignored. Each watchdog then runs its own
  final sequence (checkpoint hook, final sync, shutdown) within the window the notice gave.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import socket
import socketserver
import threading
import time
from collections.abc import Callable
from typing import Any

try:
    from instance import bounds
except ImportError:  # on the instance: installed next to this file
    import bounds  # type: ignore[no-redef]

CLUSTER_ENV_PATH = "/etc/gpulease/cluster.env"
LAUNCHER_PATH = "/usr/local/bin/gpulease-launch"
NOTICE_FILE = "notice.json"
NOTICE_CONNECT_SECONDS = bounds.value("notice_connect")
NOTICE_ATTEMPTS = bounds.NOTICE_ATTEMPTS
NOTICE_MAX_BYTES = 4096
PEER_WAIT_SECONDS = bounds.value("peer_wait")
HELLO = "hello"
_PLAIN = re.compile(r"^[A-Za-z0-9._,/:@^+=-]*\Z")
_KEY = re.compile(r"^[A-Z_][A-Z0-9_]*\Z")


# --- cluster.env ---------------------------------------------------------------------------------------------


def cluster_variables(cluster: dict[str, Any]) -> dict[str, str]:
    """The variables of ``cluster.env``: who this node is, where the rendezvous is, the fabric's settings."""
    addresses = [str(a) for a in cluster["addresses"]]
    values = {
        "GPULEASE_CLUSTER_ID": str(cluster["cluster_id"]),
        "GPULEASE_NODE_RANK": str(cluster["rank"]),
        "GPULEASE_NNODES": str(cluster["nodes"]),
        "GPULEASE_GPUS_PER_NODE": str(cluster["gpus_per_node"]),
        "GPULEASE_NODE_ADDRESSES": ",".join(addresses),
        "MASTER_ADDR": addresses[0],
        "MASTER_PORT": str(cluster["rendezvous_port"]),
        "GPULEASE_JOIN_TIMEOUT_SECONDS": str(cluster["join_timeout_seconds"]),
        "GPULEASE_MAX_RESTARTS": str(cluster.get("max_restarts", 0)),
        "GPULEASE_FABRIC": str(cluster["fabric"]),
        "GPULEASE_NOTICE_PORT": str(cluster["notice_port"]),
    }
    for key, value in sorted((cluster.get("fabric_env") or {}).items()):
        values[str(key)] = str(value)
    return values


def render_env(values: dict[str, str], header: str) -> str:
    lines = [f"# {header}"]
    for key, value in values.items():
        if not _KEY.match(key) or "\n" in value or "\0" in value:
            raise ValueError(f"cluster.env: refusing {key!r}")
        lines.append(f"{key}={value if _PLAIN.match(value) else shlex.quote(value)}")
    # One export line at the end: `source cluster.env; torchrun ...` passes every value on to the command (plain
    # assignments stay shell variables), while systemd's EnvironmentFile, which reads KEY=value lines, ignores a line
    # without "=" (systemd.exec(5): "lines without an "=" separator ... will be ignored").
    if values:
        lines.append("export " + " ".join(values))
    return "\n".join(lines) + "\n"


def write_cluster_env(settings: dict[str, Any], path: str = CLUSTER_ENV_PATH) -> str:
    """Write the node's ``cluster.env`` atomically (0644: nothing secret in it); returns its text."""
    cluster = settings["cluster"]
    text = render_env(cluster_variables(cluster), f"gpulease cluster.env: node {cluster['rank']} of {cluster['nodes']} "
                      f"({settings.get('stack')}/{settings.get('experiment')}), written by the bootstrap; read by "
                      "gpulease-launch")
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)
    return text


ENV_MAX_BYTES = 64 * 1024
# What the launcher needs from cluster.env, and the shape of each (a whole number where it is one).
LAUNCH_KEYS = {"GPULEASE_NODE_RANK": "int", "GPULEASE_NNODES": "int", "GPULEASE_GPUS_PER_NODE": "int",
               "MASTER_ADDR": "text", "MASTER_PORT": "int", "GPULEASE_CLUSTER_ID": "text",
               "GPULEASE_JOIN_TIMEOUT_SECONDS": "int", "GPULEASE_NODE_ADDRESSES": "text", "GPULEASE_NOTICE_PORT": "int"}


def read_env(path: str) -> dict[str, str]:
    """``cluster.env`` back (the launcher's reader): ``export KEY=value`` (or ``KEY=value``) lines, shell-quoted
    values unquoted; read strictly (a regular file, not through a link, at most 64 KiB, UTF-8). ``ValueError``
    names the file and line."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        raise ValueError(f"{path}: cannot open: {exc.strerror or exc}") from exc
    try:
        if os.fstat(fd).st_mode & 0o170000 != 0o100000:
            raise ValueError(f"{path}: not a regular file")
        raw = os.read(fd, ENV_MAX_BYTES + 1)
    finally:
        os.close(fd)
    if len(raw) > ENV_MAX_BYTES:
        raise ValueError(f"{path}: more than {ENV_MAX_BYTES} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 (byte {exc.start})") from exc
    values: dict[str, str] = {}
    for number, raw_line in enumerate(text.splitlines(), 1):
        line = raw_line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export "):].lstrip()
            if "=" not in line and all(_KEY.match(name) for name in line.split()):
                continue  # the export line: names only
        key, sep, value = line.partition("=")
        if not sep or not _KEY.match(key):
            raise ValueError(f"{path}:{number}: not KEY=value")
        try:
            parts = shlex.split(value) if value else [""]
        except ValueError as exc:
            raise ValueError(f"{path}:{number}: {key}: {exc}") from exc
        values[key] = parts[0] if len(parts) == 1 else value
    return values


def launch_env(path: str) -> dict[str, str]:
    """``read_env``, with every value the launcher needs present and of its shape; ``ValueError`` says which."""
    values = read_env(path)
    missing = [key for key in LAUNCH_KEYS if not values.get(key)]
    if missing:
        raise ValueError(f"{path}: {', '.join(missing)} missing (expected the file the bootstrap writes)")
    for key, shape in LAUNCH_KEYS.items():
        if shape == "int" and not re.fullmatch(r"[0-9]{1,9}", values[key]):
            raise ValueError(f"{path}: {key}={values[key][:40]!r} is not a whole number")
    return values


def install_launcher(install_dir: str, path: str = LAUNCHER_PATH) -> None:
    """``gpulease-launch`` on PATH: a two-line wrapper around the installed ``gpulease_launch.py``."""
    script = os.path.join(install_dir, "gpulease_launch.py")
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(f"#!/bin/sh\nexec python3 {shlex.quote(script)} \"$@\"\n")
    os.chmod(tmp, 0o755)
    os.replace(tmp, path)


# --- peers ---------------------------------------------------------------------------------------------------


def reachable(host: str, port: int, timeout: float) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def hello_message(cluster_id: str, rank: int) -> dict[str, Any]:
    """What a waiting node asks a peer's watchdog (never taken for a spot notice)."""
    return {"kind": HELLO, "cluster": cluster_id, "from": rank}


def identify(host: str, port: int, timeout: float, cluster_id: str, rank: int) -> dict[str, Any] | None:
    """The watchdog's answer at ``host:port`` to a hello (``{"cluster": ..., "rank": ...}``); None when nothing
    there answers so (no listener, a listener that never speaks, a reply that is not one), within ``timeout``."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as conn:
            conn.settimeout(timeout)
            conn.sendall(json.dumps(hello_message(cluster_id, rank)).encode() + b"\n")
            reply = conn.makefile("rb").readline(NOTICE_MAX_BYTES)
        found = json.loads(reply.decode("utf-8"))
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def _wait(attempt: Callable[[float], bool], limit: float, interval: float, monotonic: Callable[[], float]) -> bool:
    """``attempt(timeout)`` until it is True or ``limit`` seconds have passed: the whole bound, never less."""
    end = monotonic() + limit
    while True:
        if attempt(min(NOTICE_CONNECT_SECONDS, max(0.1, end - monotonic()))):
            return True
        left = end - monotonic()
        if left <= 0:
            return False
        time.sleep(min(interval, left))


def wait_for_port(host: str, port: int, limit: float, *, interval: float = 1.0,
                  monotonic: Callable[[], float] = time.monotonic) -> bool:
    """True once ``host:port`` accepts a connection; False when ``limit`` seconds pass first (rank 0's rendezvous,
    torchrun's store, whose protocol this does not speak)."""
    return _wait(lambda timeout: reachable(host, port, timeout), limit, interval, monotonic)


def wait_for_watchdog(host: str, port: int, cluster_id: str, rank: int, limit: float, *, asking: int = -1,
                      interval: float = 1.0, monotonic: Callable[[], float] = time.monotonic) -> bool:
    """True once the watchdog at ``host:port`` answers a hello as node ``rank`` of cluster ``cluster_id``; a
    listener that accepts and never answers, or answers as another node or cluster, does not count."""
    def attempt(timeout: float) -> bool:
        found = identify(host, port, timeout, cluster_id, asking)
        return found is not None and found.get("cluster") == cluster_id and found.get("rank") == rank

    return _wait(attempt, limit, interval, monotonic)


def wait_for_peers(addresses: list[str], rank: int, port: int, limit: float, *, cluster_id: str,
                   log: Callable[[str], None] = lambda line: None) -> list[str]:
    """Wait until every peer's watchdog answers on ``port`` as that node of ``cluster_id``: all peers at once, at
    most ``limit`` seconds in all whatever their number. Logs why it waits and how it ended; returns the peers that
    did not answer (``node N (address:port)``), [] when every one did."""
    peers = [(peer, str(address)) for peer, address in enumerate(addresses) if peer != rank]
    if not peers:
        return []
    log(f"node {rank}: waiting up to {limit:.0f} s for {len(peers)} peer(s) "
        f"({', '.join(f'node {p} at {a}:{port}' for p, a in peers)}) before the job starts: every node must be up "
        "for the rendezvous")
    answered = {peer: False for peer, _ in peers}
    end = time.monotonic() + limit

    def wait(peer: int, address: str) -> None:
        answered[peer] = wait_for_watchdog(address, port, cluster_id, peer, max(0.0, end - time.monotonic()),
                                           asking=rank)

    threads = [threading.Thread(target=wait, args=peer, daemon=True) for peer in peers]
    for thread in threads:
        thread.start()
    for thread in threads:  # each wait ends by ``end`` plus one connection attempt
        thread.join(max(0.0, end - time.monotonic()) + NOTICE_CONNECT_SECONDS + bounds.value("thread_join_slack"))
    missing = [f"node {peer} ({address}:{port})" for peer, address in peers if not answered[peer]]
    log(f"node {rank}: every peer answers" if not missing else
        f"node {rank}: not reachable within {limit:.0f} s: {', '.join(missing)}")
    return missing


def check_peers(settings: dict[str, Any], limit: float | None = None) -> dict[str, Any]:
    """The readiness check of a node: every peer's watchdog answers on ``notice_port`` as that node within
    ``limit`` seconds (the peers boot at about the same time). The launcher checks the rendezvous port itself."""
    cluster = settings["cluster"]
    port, rank = int(cluster["notice_port"]), int(cluster["rank"])
    wait = PEER_WAIT_SECONDS if limit is None else limit
    missing = wait_for_peers([str(a) for a in cluster["addresses"]], rank, port, wait,
                             cluster_id=str(cluster["cluster_id"]))
    result: dict[str, Any] = {"ok": not missing, "rank": rank, "nodes": cluster["nodes"]}
    if missing:
        result["error"] = f"not reachable within {wait:.0f} s: {', '.join(missing)}"
    return result


# --- spot notices --------------------------------------------------------------------------------------------


def notice_message(cluster: dict[str, Any], reason: str, window_end: float | None, sent_at: float) -> dict[str, Any]:
    return {"cluster": cluster["cluster_id"], "from": int(cluster["rank"]), "reason": reason, "window_end": window_end,
            "sent_at": sent_at}


def send_notice(address: str, port: int, message: dict[str, Any], timeout: float = NOTICE_CONNECT_SECONDS) -> bool:
    """One message to one peer; True when the peer acknowledged it."""
    try:
        with socket.create_connection((address, port), timeout=timeout) as conn:
            conn.settimeout(timeout)
            conn.sendall(json.dumps(message).encode() + b"\n")
            return conn.recv(16).startswith(b"ok")
    except OSError:
        return False


def broadcast(cluster: dict[str, Any], message: dict[str, Any], *, attempts: int = NOTICE_ATTEMPTS,
              timeout: float = NOTICE_CONNECT_SECONDS, pause: float = bounds.value("notice_pause")) -> dict[int, bool]:
    """Tell every peer at once, each tried at most ``attempts`` times: about ``attempts × (timeout + pause)``
    seconds in all, whatever the number of peers and whatever they do (a spot notice leaves two minutes, and this
    node still has its own checkpoint to save). Returns rank -> acknowledged."""
    rank, port = int(cluster["rank"]), int(cluster["notice_port"])
    peers = [(peer, str(addr)) for peer, addr in enumerate(cluster["addresses"]) if peer != rank]
    told = {peer: False for peer, _ in peers}

    def tell(peer: int, address: str) -> None:
        for attempt in range(attempts):
            if send_notice(address, port, message, timeout):
                told[peer] = True
                return
            if attempt + 1 < attempts:
                time.sleep(pause)

    threads = [threading.Thread(target=tell, args=peer, daemon=True) for peer in peers]
    for thread in threads:
        thread.start()
    end = time.monotonic() + attempts * (timeout + pause) + bounds.value("thread_join_slack")
    for thread in threads:
        thread.join(max(0.0, end - time.monotonic()))
    return dict(told)


class _Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        self.request.settimeout(NOTICE_CONNECT_SECONDS)
        try:
            line = self.rfile.readline(NOTICE_MAX_BYTES)
            message = json.loads(line.decode("utf-8"))
        except (OSError, ValueError):
            return
        if isinstance(message, dict) and message.get("kind") == HELLO:  # a peer waiting for this node: who it is
            with contextlib.suppress(OSError):
                self.wfile.write(json.dumps(self.server.identity()).encode() + b"\n")  # type: ignore[attr-defined]
            return
        if self.server.accept(message):  # type: ignore[attr-defined]
            with contextlib.suppress(OSError):
                self.wfile.write(b"ok\n")


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], accept: Callable[[dict[str, Any]], bool],
                 identity: Callable[[], dict[str, Any]]):
        self.accept = accept
        self.identity = identity
        super().__init__(address, _Handler)


class ClusterNotices:
    """The watchdog's side of the fan-out: listen for peers' notices, tell the peers of one's own, read and write
    the marker in the bucket. ``pending()`` is the first notice from another node of this cluster, or None."""

    def __init__(
        self, settings: dict[str, Any], *, log: Callable[[str, str], None],
        marker_io: Callable[[str, str, str], bool] | None = None, monotonic: Callable[[], float] = time.monotonic,
        now: Callable[[], float] = time.time, not_before: float = 0.0, bind: str = "0.0.0.0",
    ):
        self.cluster = settings["cluster"]
        self.log = log
        self.marker_io = marker_io
        self.monotonic = monotonic
        self.now = now
        self.not_before = not_before
        """A marker older than this node's first boot is an earlier cluster's (the bucket outlives the nodes)."""
        self.bind = bind
        self.state_dir = str(settings.get("state_dir") or "/var/lib/gpulease")
        self.received: dict[str, Any] | None = None
        self.lock = threading.Lock()
        self.server: _Server | None = None
        self.last_marker_read = float("-inf")

    @property
    def rank(self) -> int:
        return int(self.cluster["rank"])

    def identity(self) -> dict[str, Any]:
        """This watchdog's answer to a peer's hello (``wait_for_peers``): its cluster and rank."""
        return {"cluster": self.cluster["cluster_id"], "rank": self.rank}

    def accept(self, message: Any) -> bool:
        """A peer's message: heeded when it names this cluster and another node; the first one is kept."""
        if not isinstance(message, dict) or message.get("cluster") != self.cluster["cluster_id"]:
            return False
        if message.get("kind") == HELLO:
            return False  # a peer's wait, not a notice
        sender = message.get("from")
        if not isinstance(sender, int) or sender == self.rank or not 0 <= sender < int(self.cluster["nodes"]):
            return False
        with self.lock:
            if self.received is None:
                self.received = message
        return True

    def start(self) -> None:
        """Listen on ``notice_port``; a port that cannot be bound is logged (the bucket marker still reaches us)."""
        try:
            self.server = _Server((self.bind, int(self.cluster["notice_port"])), self.accept, self.identity)
        except OSError as exc:
            self.log("cluster-notice", f"cannot listen on port {self.cluster['notice_port']}: {exc}; peers' notices "
                     "reach this node through the bucket marker only")
            return
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True).start()
        self.log("cluster-notice", f"node {self.rank} of {self.cluster['nodes']} listening for peers' spot notices on "
                 f"port {self.cluster['notice_port']}")

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def announce(self, reason: str, window_end: float | None) -> dict[int, bool]:
        """This node saw a spot notice: the marker in the bucket first (it outlives this node), then every peer."""
        message = notice_message(self.cluster, reason, window_end, self.now())
        marked = self._write_marker(message)
        told = broadcast(self.cluster, message)
        missed = sorted(peer for peer, ok in told.items() if not ok)
        self.log("cluster-notice", f"told {len(told) - len(missed)} of {len(told)} peers of the spot notice"
                 + (f"; not reached: {', '.join(map(str, missed))} (the bucket marker "
                    f"{'is' if marked else 'could not be'} written for them)" if missed else ""))
        return told

    def pending(self) -> dict[str, Any] | None:
        """A peer's notice, from the listener or, every ``notice_poll_seconds``, from the bucket marker."""
        with self.lock:
            if self.received is not None:
                return self.received
        now = self.monotonic()
        if self.marker_io is None or now - self.last_marker_read < float(self.cluster.get("notice_poll_seconds", 30)):
            return None
        self.last_marker_read = now
        message = self._read_marker()
        sent = message.get("sent_at") if message is not None else None
        if message is not None and isinstance(sent, (int, float)) and sent < self.not_before:
            return None
        if message is not None and self.accept(message):
            self.log("cluster-notice", f"read node {message['from']}'s spot notice from the bucket marker")
        with self.lock:
            return self.received

    def _marker_uri(self) -> str | None:
        uri = self.cluster.get("notice_uri")
        return f"{uri}{NOTICE_FILE}" if uri else None

    def _write_marker(self, message: dict[str, Any]) -> bool:
        uri = self._marker_uri()
        if uri is None or self.marker_io is None:
            return False
        path = os.path.join(self.state_dir, "cluster-notice-out.json")
        try:
            os.makedirs(self.state_dir, exist_ok=True)
            with open(path, "w", encoding="utf-8") as fh:
                json.dump(message, fh)
        except OSError as exc:
            self.log("cluster-notice", f"cannot write the marker file: {exc}")
            return False
        return self.marker_io("put", path, uri)

    def _read_marker(self) -> dict[str, Any] | None:
        uri = self._marker_uri()
        if uri is None or self.marker_io is None:
            return None
        path = os.path.join(self.state_dir, "cluster-notice-in.json")
        with contextlib.suppress(OSError):
            os.remove(path)
        if not self.marker_io("get", uri, path):
            return None
        try:
            with open(path, encoding="utf-8") as fh:
                found = json.loads(fh.read(NOTICE_MAX_BYTES))
        except (OSError, ValueError):
            return None
        return found if isinstance(found, dict) else None
