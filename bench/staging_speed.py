"""Staging throughput: gpulease's hub staging against ``huggingface_hub.snapshot_download``, on one loopback hub.

The hub (a process of its own, so that its CPU is not counted against either client) speaks enough of the Hugging
Face API for both clients:

- ``GET /api/models/{repo}/revision/{rev}`` (``HfApi.repo_info``: ``id``, ``sha``, ``siblings``) and
  ``GET /api/models/{repo}/tree/{rev}?recursive=true`` (``HfApi.list_repo_tree``: ``path``, ``size``, ``oid``, ``lfs``);
- ``HEAD`` / ``GET /{repo}/resolve/{rev}/{file}`` with ``X-Repo-Commit``, ``ETag`` (the git blob id, or the LFS
  SHA-256), ``X-Linked-Etag`` / ``X-Linked-Size`` for LFS files, ``Content-Length``, ``Accept-Ranges`` and ``Range``
  (what ``huggingface_hub.file_download.get_hf_file_metadata`` and ``http_get`` read, huggingface_hub 0.36.0).

It serves a repository of several small files and one large LFS file with a per-connection rate cap (what a CDN
does to one connection) and an aggregate cap (the instance's network). Measured in one run, each client in a child
process of its own, the two alternating ``--repeats`` times: gpulease staging (``instance/staging.py``, defaults
except the split size scaled to the run's file sizes), ``snapshot_download`` (its default 8 workers), and the
aggregate cap as the floor.

CPU is accounted the same way for both: ``getrusage(RUSAGE_SELF)`` (user + system, every thread of the process)
around the download call alone, the client's imports done before it (``Timed``); the child's whole-process rusage
from ``wait4`` (interpreter start and imports included) is shown next to it. Each figure is the best of the
repeats, with the load average at that run. Targets: gpulease >= 1.0x snapshot_download's throughput, >= 0.8x the
aggregate cap, and CPU per GB no more than snapshot_download's (which does not hash what it downloads; gpulease
hashes every byte). Exit 1 when a target is missed.

    .venv/bin/python bench/staging_speed.py [--large-mib 256] [--files 8] [--small-mib 4]
                                            [--conn-mibps 12] [--cap-mibps 48] [--repeats 3]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
REPO = "bench/model"
COMMIT = "c0ffee" + "0" * 34
MIB = 1024 * 1024


class Bucket:
    """A token bucket: ``take(n)`` waits until ``n`` bytes may go at ``rate`` bytes a second."""

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self.lock = threading.Lock()
        self.next = time.monotonic()

    def take(self, n: int) -> None:
        with self.lock:
            now = time.monotonic()
            start = max(now, self.next)
            self.next = start + n / self.rate
        if start > now:
            time.sleep(start - now)


def serve(args: argparse.Namespace) -> None:
    """The loopback hub; prints its URL, then serves until stdin closes."""
    files: dict[str, bytes] = {f"shard-{i:02d}.json": os.urandom(args.small_mib * MIB) for i in range(args.files)}
    files["model.safetensors"] = os.urandom(args.large_mib * MIB)
    meta = {}
    for path, data in files.items():
        lfs = path.endswith(".safetensors")
        blob = hashlib.sha1(f"blob {len(data)}\0".encode() + data).hexdigest()  # git's id: not for security
        meta[path] = {"lfs": lfs, "blob": blob, "sha256": hashlib.sha256(data).hexdigest() if lfs else None}
    aggregate = Bucket(args.cap_mibps * MIB)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_: Any) -> None:
            pass

        def _json(self, value: Any) -> None:
            body = json.dumps(value).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_HEAD(self) -> None:
            self._file(head=True)

        def do_GET(self) -> None:
            path = urllib.parse.urlsplit(self.path).path
            if path.startswith(f"/api/models/{REPO}/revision/"):
                self._json({"id": REPO, "modelId": REPO, "sha": COMMIT, "private": False,
                            "siblings": [{"rfilename": p} for p in sorted(files)]})
            elif path.startswith(f"/api/models/{REPO}/tree/"):
                entries = []
                for p in sorted(files):
                    entry: dict[str, Any] = {"type": "file", "path": p, "size": len(files[p]), "oid": meta[p]["blob"]}
                    if meta[p]["lfs"]:
                        entry["lfs"] = {"oid": meta[p]["sha256"], "size": len(files[p]), "pointerSize": 134}
                    entries.append(entry)
                self._json(entries)
            else:
                self._file(head=False)

        def _file(self, head: bool) -> None:
            path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
            prefix = f"/{REPO}/resolve/"
            name = path[len(prefix):].split("/", 1)[-1] if path.startswith(prefix) else ""
            data = files.get(name)
            if data is None:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            start, end, status = 0, len(data), 200
            wanted = self.headers.get("Range")
            if wanted and wanted.startswith("bytes="):
                first, _, last = wanted[6:].partition("-")
                start, end, status = int(first), min(len(data), int(last) + 1 if last else len(data)), 206
            self.send_response(status)
            info = meta[name]
            etag = info["sha256"] if info["lfs"] else info["blob"]
            self.send_header("X-Repo-Commit", COMMIT)
            self.send_header("ETag", f'"{etag}"')
            if info["lfs"]:
                self.send_header("X-Linked-Etag", f'"{etag}"')
                self.send_header("X-Linked-Size", str(len(data)))
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("Content-Length", str(end - start))
            if status == 206:
                self.send_header("Content-Range", f"bytes {start}-{end - 1}/{len(data)}")
            self.end_headers()
            if head:
                return
            own = Bucket(args.conn_mibps * MIB)
            view = memoryview(data)
            chunk = 256 * 1024
            try:
                for at in range(start, end, chunk):
                    n = min(chunk, end - at)
                    own.take(n)
                    aggregate.take(n)
                    self.wfile.write(view[at:at + n])
            except (BrokenPipeError, ConnectionResetError):
                pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    total = sum(len(d) for d in files.values())
    print(json.dumps({"url": f"http://127.0.0.1:{httpd.server_address[1]}", "bytes": total,
                      "sha256": {p: hashlib.sha256(d).hexdigest() for p, d in files.items()}}), flush=True)
    sys.stdin.read()


def client_gpulease(url: str, dest: str, split_above: int) -> None:
    sys.path.insert(0, str(ROOT))
    from instance import staging

    settings = {"cloud": "aws", "region": "us-east-1", "mount_point": os.path.dirname(dest),
                "data_sources": [{"uri": f"hf://{REPO}", "to": dest, "revision": "main"}],
                "hub_endpoints": {"hf": url}, "staging_split_above_bytes": split_above,
                "staging_piece_bytes": max(MIB, split_above // 4)}
    with Timed():
        check = staging.Stager(settings, lambda line: None).run()
    if not check["ok"]:
        raise SystemExit(f"gpulease staging failed: {check.get('error')}")


def client_snapshot(url: str, dest: str) -> None:
    from huggingface_hub import file_download, snapshot_download  # noqa: F401  # what the call imports lazily

    with Timed():
        snapshot_download(REPO, endpoint=url, local_dir=dest, token=False)


class Timed:
    """Prints the wall seconds and the process's user and system CPU seconds (every thread: ``RUSAGE_SELF``) of
    the block, after the client's imports, as one JSON line."""

    def __enter__(self) -> None:
        self.wall, self.usage = time.monotonic(), resource.getrusage(resource.RUSAGE_SELF)

    def __exit__(self, *_: object) -> None:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        print(json.dumps({"seconds": time.monotonic() - self.wall, "user": usage.ru_utime - self.usage.ru_utime,
                          "system": usage.ru_stime - self.usage.ru_stime}), flush=True)


@dataclass
class Run:
    seconds: float  # the download call
    cpu: float  # user + system CPU seconds of the download call, every thread
    user: float
    system: float
    whole_seconds: float  # the child process, interpreter start and imports included
    whole_cpu: float
    load: float  # the 1-minute load average when the run started


def hashing_cpu(total: int, blob_bytes: int) -> float:
    """CPU seconds of the hashing gpulease must do for this repository, alone: SHA-256 of every byte and the git
    blob SHA-1 of the files outside LFS (4 MiB updates; the cost does not depend on the bytes)."""
    block = memoryview(os.urandom(4 * MIB))
    before = resource.getrusage(resource.RUSAGE_SELF)
    for algorithm, size in (("sha256", total), ("sha1", blob_bytes)):
        digest = hashlib.new(algorithm)
        for at in range(0, size, len(block)):
            digest.update(block[:min(len(block), size - at)])
    after = resource.getrusage(resource.RUSAGE_SELF)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def measure(argv: list[str], dest: Path, expected: dict[str, str]) -> Run:
    """One client run in a child process, ``Timed`` around the download call (the imports done before it, for both
    clients alike), with the child's whole-process rusage; checks what it wrote."""
    env = {**os.environ, "HF_HUB_DISABLE_TELEMETRY": "1", "HF_HUB_ENABLE_HF_TRANSFER": "0", "HF_HUB_DISABLE_XET": "1",
           "HF_HOME": str(dest.parent / "hf-home"), "HF_HUB_DISABLE_PROGRESS_BARS": "1"}
    load = os.getloadavg()[0]
    started = time.monotonic()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        child = subprocess.Popen([sys.executable, __file__, *argv], env=env, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        whole = time.monotonic() - started
        out.seek(0)
        err.seek(0)
        if child.returncode:
            raise SystemExit(f"{argv[1]} exited {child.returncode}: {err.read()[-2000:]}")
        timing = json.loads(out.read().strip().splitlines()[-1])
    for path, digest in expected.items():
        with open(dest / path, "rb") as fh:
            if hashlib.file_digest(fh, "sha256").hexdigest() != digest:
                raise SystemExit(f"{argv[1]}: {path} differs from the hub's")
    return Run(timing["seconds"], timing["user"] + timing["system"], timing["user"], timing["system"], whole,
               usage.ru_utime + usage.ru_stime, load)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--large-mib", type=int, default=256)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--small-mib", type=int, default=4)
    parser.add_argument("--conn-mibps", type=float, default=12.0, help="per-connection cap (MiB/s)")
    parser.add_argument("--cap-mibps", type=float, default=48.0, help="aggregate cap (MiB/s)")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each client, alternating (best of)")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--client", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--dest", help=argparse.SUPPRESS)
    parser.add_argument("--split-above", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args)
        return 0
    if args.client == "gpulease":
        client_gpulease(args.url, args.dest, args.split_above)
        return 0
    if args.client == "snapshot":
        client_snapshot(args.url, args.dest)
        return 0

    sizes = ["--large-mib", str(args.large_mib), "--files", str(args.files), "--small-mib", str(args.small_mib),
             "--conn-mibps", str(args.conn_mibps), "--cap-mibps", str(args.cap_mibps)]
    hub = subprocess.Popen([sys.executable, __file__, "--serve", *sizes], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, text=True)
    runs: dict[str, list[Run]] = {"gpulease": [], "snapshot": []}
    try:
        assert hub.stdout is not None
        info = json.loads(hub.stdout.readline())
        total = info["bytes"]
        with tempfile.TemporaryDirectory(prefix="gpulease-staging-bench-") as scratch:
            work = Path(scratch)
            # A large file is split when larger than a quarter of itself (16 GB safetensors shards at 64 MiB pieces
            # on a real hub); scaled down with the run's sizes.
            split = max(MIB, args.large_mib * MIB // 4)
            for repeat in range(args.repeats):
                order = ("gpulease", "snapshot") if repeat % 2 == 0 else ("snapshot", "gpulease")
                for client in order:  # alternating, so that drift on a shared machine touches both
                    dest = work / client
                    argv = ["--client", client, "--url", info["url"], "--dest", str(dest)]
                    if client == "gpulease":
                        argv += ["--split-above", str(split)]
                    runs[client].append(measure(argv, dest, info["sha256"]))
                    shutil.rmtree(dest)
                    shutil.rmtree(work / "hf-home", ignore_errors=True)
    finally:
        if hub.stdin:
            hub.stdin.close()
        hub.wait(10)
    floor = total / (args.cap_mibps * MIB)
    gb = total / 1e9
    hashing = min(hashing_cpu(total, args.files * args.small_mib * MIB) for _ in range(3))
    print(f"repository: {args.files} x {args.small_mib} MiB + {args.large_mib} MiB ({total / MIB:.0f} MiB); "
          f"caps {args.conn_mibps:g} MiB/s a connection, {args.cap_mibps:g} MiB/s in all; best of {args.repeats}")
    print("| client | seconds | MiB/s | load | CPU s/GB (user + system) | load | whole process: seconds, CPU s |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    print(f"| aggregate cap (floor) | {floor:.2f} | {args.cap_mibps:.1f} | | | | |")
    best: dict[str, tuple[Run, Run]] = {}
    for client, label in (("gpulease", "gpulease staging"), ("snapshot", "`snapshot_download`")):
        fast = min(runs[client], key=lambda r: r.seconds)
        lean = min(runs[client], key=lambda r: r.cpu)
        best[client] = fast, lean
        print(f"| {label} | {fast.seconds:.2f} | {total / fast.seconds / MIB:.1f} | {fast.load:.1f} "
              f"| {lean.cpu / gb:.2f} ({lean.user / gb:.2f} + {lean.system / gb:.2f}) | {lean.load:.1f} "
              f"| {fast.whole_seconds:.2f}, {lean.whole_cpu:.2f} |")
    for client in runs:
        print(f"{client} runs (seconds / CPU s/GB / load): "
              + ", ".join(f"{r.seconds:.2f} / {r.cpu / gb:.2f} / {r.load:.1f}" for r in runs[client]))
    g_rate, s_rate = total / best["gpulease"][0].seconds / MIB, total / best["snapshot"][0].seconds / MIB
    vs_peer, vs_cap = g_rate / s_rate, g_rate / args.cap_mibps
    cpu_ratio = best["gpulease"][1].cpu / best["snapshot"][1].cpu
    print(f"gpulease / snapshot_download throughput: {vs_peer:.2f}x (target >= 1.0)")
    print(f"gpulease / aggregate cap:                {vs_cap:.2f}x (target >= 0.8)")
    print(f"gpulease / snapshot_download CPU per GB: {cpu_ratio:.2f}x (target <= 1.0)")
    print(f"hashing alone (SHA-256 of every byte, SHA-1 of the {args.files} files outside LFS): {hashing / gb:.2f} s/GB; "
          f"gpulease's CPU less it / snapshot_download's: "
          f"{(best['gpulease'][1].cpu - hashing) / best['snapshot'][1].cpu:.2f}x (not a target)")
    missed = [name for name, bad in (("throughput vs snapshot_download", vs_peer < 1.0), ("vs aggregate cap", vs_cap < 0.8),
                                      ("CPU per GB", cpu_ratio > 1.0)) if bad]
    if missed:
        print(f"MISSED: {', '.join(missed)}")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
