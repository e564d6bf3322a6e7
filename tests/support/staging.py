"""The world ``instance/staging.py`` talks to, on 127.0.0.1: a model hub and its file CDN, and moto playing S3 and
Secrets Manager behind a stand-in ``aws`` CLI.

- ``HubServer`` answers like Hugging Face (``/api/models/<repo>/tree/<rev>?recursive=true``, paged with a ``Link``
  header; ``/<repo>/resolve/<rev>/<path>`` redirecting to the CDN) and ModelScope (``/api/v1/models/<repo>/repo/
  files`` and ``/api/v1/models/<repo>/repo?FilePath=``); ``CdnServer`` is another host that serves the bytes
  with ``ETag``, ``Range`` (206 with ``Content-Range``), ``If-Range``, and can cut a connection halfway. Both
  record every request's headers, so a test sees what was sent where.
- ``AwsCli`` is the stand-in ``aws``: a small script that hands its argv and credential environment to the test
  process, where boto3 runs ``s3 sync``, ``s3 cp`` and ``secretsmanager get-secret-value`` against moto's real
  HTTP server and answers with the exit code and output the CLI would give.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import boto3

from tests.support.instance import executable


def git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(f"blob {len(data)}\0".encode() + data).hexdigest()


class _Server:
    def __init__(self) -> None:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                outer.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    outer.handle(self)

        self.requests: list[tuple[str, dict[str, str]]] = []
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        # Polled every 50 ms rather than the default 0.5 s: shutdown() waits up to one interval.
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def handle(self, h: BaseHTTPRequestHandler) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    @staticmethod
    def send(h: BaseHTTPRequestHandler, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        h.send_response(status)
        for key, value in (headers or {}).items():
            h.send_header(key, value)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)


@dataclass
class CdnFile:
    data: bytes
    etag: str = ""
    cut_times: int = 0
    """Cut the connection this many times, after half of what was asked for."""
    statuses: list[int] = field(default_factory=list)
    """Answer these statuses first, one per request (a 503 that passes, a 429)."""
    retry_after: str = "0"
    """The ``Retry-After`` those answers carry."""
    trickle: float = 0.0
    """Seconds between single bytes of the body (a server that never stalls a read long enough to time it out)."""
    no_length: bool = False
    """Send the body without Content-Length, ended by closing the connection (HTTP/1.0 style)."""
    range_shift: int = 0
    """Answer a range from this many bytes after the one asked for (a 206 from the wrong offset)."""
    length_header: str | None = None
    """Send this text as the Content-Length instead of the body's length (a hostile header)."""


class CdnServer(_Server):
    """Serves ``/files/<name>`` with ETag, Range and If-Range; cuts connections on request."""

    def __init__(self) -> None:
        self.files: dict[str, CdnFile] = {}
        super().__init__()

    def put(self, name: str, data: bytes, *, cut_times: int = 0, **behaviour: Any) -> str:
        self.files[name] = CdnFile(data, f'"{hashlib.md5(data).hexdigest()}"', cut_times, **behaviour)
        return f"{self.url}/files/{urllib.parse.quote(name)}"

    def ranges(self, name: str) -> list[str | None]:
        """The Range header of every request for ``name``, in order."""
        return [headers.get("range") for path, headers in self.requests if path == f"/files/{urllib.parse.quote(name)}"]

    def handle(self, h: BaseHTTPRequestHandler) -> None:
        name = urllib.parse.unquote(urllib.parse.urlsplit(h.path).path.removeprefix("/files/"))
        item = self.files.get(name)
        if item is None:
            self.send(h, 404, b"not found")
            return
        if item.statuses:
            self.send(h, item.statuses.pop(0), b"try again", {"Retry-After": item.retry_after})
            return
        start, status = 0, 200
        end = len(item.data)
        wanted = h.headers.get("Range")
        if wanted and (h.headers.get("If-Range") in (None, item.etag)):
            first, _, last = wanted.removeprefix("bytes=").partition("-")
            start = int(first) + item.range_shift
            end = int(last) + 1 if last else len(item.data)
            if start >= len(item.data):
                self.send(h, 416, b"", {"Content-Range": f"bytes */{len(item.data)}"})
                return
            status = 206
        body = item.data[start:end]
        h.send_response(status)
        h.send_header("ETag", item.etag)
        h.send_header("Accept-Ranges", "bytes")
        if item.no_length:
            h.close_connection = True
            h.send_header("Connection", "close")
        elif item.length_header is not None:  # a length no client can read: the body ends at the close
            h.close_connection = True
            h.send_header("Connection", "close")
            h.send_header("Content-Length", item.length_header)
        else:
            h.send_header("Content-Length", str(len(body)))
        if status == 206:
            h.send_header("Content-Range", f"bytes {start}-{start + len(body) - 1}/{len(item.data)}")
        h.end_headers()
        if item.trickle:
            for i in range(len(body)):
                h.wfile.write(body[i:i + 1])
                h.wfile.flush()
                time.sleep(item.trickle)
            return
        if item.cut_times > 0:
            item.cut_times -= 1
            h.wfile.write(body[: len(body) // 2])
            h.wfile.flush()
            h.close_connection = True
            h.connection.shutdown(2)  # the network drops: the client sees fewer bytes than announced
            return
        h.wfile.write(body)


@dataclass
class HubRepo:
    files: dict[str, bytes]
    lfs: set[str] = field(default_factory=set)
    """Paths kept in LFS (listed with their SHA-256); the others carry their git blob id."""
    token: str | None = None
    """A private repository: every API and resolve request must carry ``Authorization: Bearer <token>``."""
    lie_about: str | None = None
    """A path whose listed digest is wrong (a corrupted or swapped file on the way)."""
    loop_pages: bool = False
    """Every page's ``Link: rel="next"`` points at the first page again (a hub whose pagination loops), for the first
    ``HubServer.LOOP_MOST`` reads: a stager that misses the loop then ends its listing (with every path listed many
    times) and the test fails at once instead of waiting for its thread's bound."""
    listing: list[Any] | None = None
    """Entries listed as they are (a malformed listing), instead of the files' own."""


class HubServer(_Server):
    """Hugging Face and ModelScope APIs over one host; files are served by ``cdn``."""

    PAGE = 2
    LOOP_MOST = 20

    def __init__(self, cdn: CdnServer) -> None:
        self.cdn = cdn
        self.repos: dict[str, HubRepo] = {}
        super().__init__()

    def add(self, repo: str, repo_files: HubRepo) -> None:
        self.repos[repo] = repo_files
        for path, data in repo_files.files.items():
            self.cdn.put(f"{repo}/{path}", data)

    def _authorised(self, h: BaseHTTPRequestHandler, repo: HubRepo) -> bool:
        if repo.token and h.headers.get("Authorization") != f"Bearer {repo.token}":
            self.send(h, 401, b'{"error": "Invalid credentials"}')
            return False
        return True

    def handle(self, h: BaseHTTPRequestHandler) -> None:
        parts = urllib.parse.urlsplit(h.path)
        query = urllib.parse.parse_qs(parts.query)
        path = parts.path
        if path.startswith("/api/models/") and "/tree/" in path:
            repo_name, rest = path.removeprefix("/api/models/").split("/tree/", 1)
            repo = self.repos.get(repo_name)
            if repo is None:
                self.send(h, 404, b'{"error": "Repository not found"}')
                return
            if not self._authorised(h, repo):
                return
            entries = self._hf_entries(repo) if repo.listing is None else repo.listing
            page = int(query.get("cursor", ["0"])[0])
            chunk = entries[page * self.PAGE:(page + 1) * self.PAGE]
            headers = {"Content-Type": "application/json"}
            reads = sum(1 for p, _ in self.requests if urllib.parse.urlsplit(p).path == path)
            if repo.loop_pages and reads < self.LOOP_MOST:
                headers["Link"] = f'<{self.url}{path}?recursive=true>; rel="next"'
            elif (page + 1) * self.PAGE < len(entries):
                headers["Link"] = f'<{self.url}{path}?recursive=true&cursor={page + 1}>; rel="next"'
            self.send(h, 200, json.dumps(chunk).encode(), headers)
            return
        if path.startswith("/api/v1/models/") and path.endswith("/repo/files"):
            repo_name = path.removeprefix("/api/v1/models/").removesuffix("/repo/files")
            repo = self.repos.get(repo_name)
            if repo is None or not self._authorised(h, repo):
                if repo is None:
                    self.send(h, 404, b'{"Code": 404}')
                return
            listed = [{"Path": p, "Name": p.rsplit("/", 1)[-1], "Size": len(d), "Type": "blob",
                       "Sha256": self._sha256(repo, p, d)} for p, d in sorted(repo.files.items())]
            self.send(h, 200, json.dumps({"Code": 200, "Data": {"Files": [{"Path": "sub", "Type": "tree"}, *listed]}}).encode())
            return
        if path.startswith("/api/v1/models/") and path.endswith("/repo"):
            repo_name = path.removeprefix("/api/v1/models/").removesuffix("/repo")
            file_path = query.get("FilePath", [""])[0]
            self._redirect(h, repo_name, file_path)
            return
        if "/resolve/" in path:
            repo_name, rest = path.lstrip("/").split("/resolve/", 1)
            file_path = urllib.parse.unquote(rest.split("/", 1)[1])
            self._redirect(h, repo_name, file_path)
            return
        self.send(h, 404, b"not found")

    def _redirect(self, h: BaseHTTPRequestHandler, repo_name: str, file_path: str) -> None:
        repo = self.repos.get(repo_name)
        if repo is None or file_path not in repo.files:
            self.send(h, 404, b"not found")
            return
        if not self._authorised(h, repo):
            return
        self.send(h, 302, b"", {"Location": f"{self.cdn.url}/files/{urllib.parse.quote(repo_name + '/' + file_path)}"})

    def _sha256(self, repo: HubRepo, path: str, data: bytes) -> str:
        return "0" * 64 if path == repo.lie_about else hashlib.sha256(data).hexdigest()

    def _hf_entries(self, repo: HubRepo) -> list[dict[str, Any]]:
        entries: list[dict[str, Any]] = [{"type": "directory", "oid": "0" * 40, "size": 0, "path": "sub"}]
        for path, data in sorted(repo.files.items()):
            entry: dict[str, Any] = {"type": "file", "path": path, "size": len(data), "oid": git_blob_sha1(data)}
            if path in repo.lfs:
                entry["lfs"] = {"oid": self._sha256(repo, path, data), "size": len(data), "pointerSize": 134}
            elif path == repo.lie_about:
                entry["oid"] = "f" * 40
            entries.append(entry)
        return entries


class AwsCli:
    """The stand-in ``aws`` (see the module docstring); ``calls`` lists every call with its credential environment."""

    def __init__(self, endpoint: str, bin_dir: Path, region: str = "us-east-1"):
        kwargs = {"region_name": region, "endpoint_url": endpoint, "aws_access_key_id": "testing",
                  "aws_secret_access_key": "testing"}
        self.s3 = boto3.client("s3", **kwargs)
        self.secrets = boto3.client("secretsmanager", **kwargs)
        self.calls: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                answer = json.dumps(outer.handle(body["argv"], body["env"])).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        # Polled every 50 ms rather than the default 0.5 s: shutdown() waits up to one interval.
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        executable(
            bin_dir / "aws",
            f"""import json, os, sys, urllib.request
env = {{k: v for k, v in os.environ.items() if k.startswith("AWS_")}}
req = urllib.request.Request({url!r}, data=json.dumps({{"argv": sys.argv[1:], "env": env}}).encode(), method="POST")
answer = json.load(urllib.request.urlopen(req, timeout=60))
sys.stdout.write(answer["stdout"])
sys.stderr.write(answer["stderr"])
sys.exit(answer["rc"])
""",
        )

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def handle(self, argv: list[str], env: dict[str, str]) -> dict[str, Any]:
        self.calls.append({"argv": argv, "env": env})
        try:
            rc, out, err = self._run(argv)
        except Exception as exc:  # the CLI's own wording for a service error
            rc, out, err = 255, "", f"\nAn error occurred: {exc}\n"
        return {"rc": rc, "stdout": out, "stderr": err}

    def _run(self, argv: list[str]) -> tuple[int, str, str]:
        if argv[:2] == ["secretsmanager", "get-secret-value"]:
            secret = argv[argv.index("--secret-id") + 1]
            value = self.secrets.get_secret_value(SecretId=secret)
            assert argv[argv.index("--query") + 1] == "SecretString" and argv[argv.index("--output") + 1] == "text"
            return 0, value["SecretString"] + "\n", ""
        if argv[:2] == ["s3", "sync"]:
            src, dst = argv[2], argv[3]
            bucket, _, prefix = src.removeprefix("s3://").partition("/")
            copied = 0
            for item in self.s3.list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", []):
                target = Path(dst) / item["Key"][len(prefix):]
                if target.exists() and target.stat().st_size == item["Size"]:
                    continue  # sync copies only what differs
                target.parent.mkdir(parents=True, exist_ok=True)
                self.s3.download_file(bucket, item["Key"], str(target))
                copied += 1
            return 0, "", ""
        if argv[:2] == ["s3", "cp"] and argv[2].startswith("s3://"):
            bucket, _, key = argv[2].removeprefix("s3://").partition("/")
            Path(argv[3]).parent.mkdir(parents=True, exist_ok=True)
            self.s3.download_file(bucket, key, argv[3])
            return 0, "", ""
        return 252, "", f"aws: error: argument operation: Invalid choice: {argv!r}\n"
