#!/usr/bin/env python3
"""gpulease staging: copy the experiment's data sources onto the data disk before readiness (standard library only).

Called by ``instance_setup.py`` after the data disk is mounted. For each ``data_sources`` item ``{uri, to,
sha256?, revision?, region?}``, in order:

- ``s3://`` / ``oss://``: the storage CLI with the instance role's credentials, exactly as the checkpoint sync runs
  it (``cloud_access.storage_command``): ``aws s3 sync`` / ``cp`` over HTTPS to the region's endpoint, ``ossutil cp
  -u`` through ``https://oss-<region>-internal`` (the public endpoint for a bucket in another region); both copy
  only what is missing, so a rerun resumes;
- ``hf://org/repo`` (``hf://datasets/org/repo``) and ``modelscope://org/repo``: the repository's file list at the
  revision from the hub's API, then each file over HTTPS with resume (``Range`` on the partial file, ``If-Range``
  on its ETag), verified against the hub's digest of it (Hugging Face: the LFS SHA-256, else the git blob SHA-1;
  ModelScope: its SHA-256) and its size;
- ``https://host/file``: one file with resume, verified against ``sha256`` when given, else its size.

A private hub token comes from the secret ``hub_token_secret`` (AWS Secrets Manager through the AWS CLI, Alibaba
Cloud KMS ``GetSecretValue`` signed with the role's STS credentials), is kept in memory only and sent only to the
hub's own host (never across a redirect to another host). It is never logged nor written anywhere.

Idempotent across reboots and re-attached disks: each ``to`` folder keeps ``.gpulease-source.json`` (the source,
its revision and digest, each file's size and SHA-256); a source whose record matches and whose files are all there
with their sizes is skipped. Each source's result (bytes, seconds, digest, skipped or error) goes to the log and to
the readiness report; a digest mismatch fails readiness, naming the source.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import shutil
import socket
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterator
from typing import Any

try:
    from instance import cloud_access as ca
except ImportError:  # on the instance: cloud_access.py is installed next to this file
    import cloud_access as ca  # type: ignore[no-redef]

STATE_NAME = ".gpulease-source.json"
HUBS = {"hf": "https://huggingface.co", "modelscope": "https://www.modelscope.cn"}
KMS_ENDPOINT = "https://kms-vpc.{region}.aliyuncs.com"
OSS_PUBLIC_ENDPOINT = "https://oss-{region}.aliyuncs.com"
CHUNK = 1024 * 1024
MAX_REDIRECTS = 5
PROGRESS_EVERY_SECONDS = 30.0

Log = Callable[[str], None]


class StagingError(Exception):
    """A source could not be staged; the message names it and says why."""


class DigestMismatchError(StagingError):
    """A staged file's digest is not the one expected."""


# --- small helpers ---------------------------------------------------------------------------------------------


def sha256_file(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def git_blob_sha1(path: str) -> str:
    """The git object id of a file's content (how Hugging Face names a file kept outside LFS)."""
    digest = hashlib.sha1(f"blob {os.path.getsize(path)}\0".encode())  # git names objects by SHA-1: not for security
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def manifest_digest(files: list[dict[str, Any]]) -> str:
    """One SHA-256 for a staged source: over ``path size sha256`` of each file, sorted by path."""
    lines = "".join(f"{f['path']} {f['size']} {f['sha256']}\n" for f in sorted(files, key=lambda f: f["path"]))
    return hashlib.sha256(lines.encode()).hexdigest()


def safe_join(root: str, rel: str) -> str:
    """``root/rel``, refusing a path (from a listing) that would leave ``root``."""
    target = os.path.normpath(os.path.join(root, rel))
    if not rel or rel.startswith("/") or not target.startswith(os.path.normpath(root) + os.sep):
        raise StagingError(f"refusing the path {rel!r}: it leaves {root}")
    return target


def _human(size: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.1f} {unit}" if unit != "B" else f"{int(size)} B"
        size /= 1024
    return f"{size:.1f} TiB"  # pragma: no cover


# --- HTTP with redirects, resume and a bound on each read --------------------------------------------------------


def open_url(url: str, headers: dict[str, str], timeout: float, auth: dict[str, str] | None = None,
             method: str = "GET") -> tuple[http.client.HTTPConnection, http.client.HTTPResponse, str]:
    """(connection, response, final URL), following redirects; ``auth`` headers go only to the first host."""
    first_host = urllib.parse.urlsplit(url).netloc
    for _ in range(MAX_REDIRECTS + 1):
        parts = urllib.parse.urlsplit(url)
        cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        conn = cls(parts.hostname, parts.port, timeout=timeout)
        sent = dict(headers)
        if auth and parts.netloc == first_host:
            sent.update(auth)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        try:
            conn.request(method, path, headers=sent)
            resp = conn.getresponse()
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            raise ConnectionError(f"{parts.netloc}: {exc}") from exc
        if resp.status in (301, 302, 303, 307, 308) and resp.getheader("Location"):
            url = urllib.parse.urljoin(url, resp.getheader("Location") or "")
            resp.read()
            conn.close()
            continue
        return conn, resp, url
    raise StagingError(f"more than {MAX_REDIRECTS} redirects from {first_host}")


def get_json(url: str, timeout: float, auth: dict[str, str] | None) -> tuple[Any, http.client.HTTPResponse]:
    conn, resp, _ = open_url(url, {"Accept": "application/json"}, timeout, auth)
    try:
        body = resp.read()
    finally:
        conn.close()
    if resp.status != 200:
        raise StagingError(f"{urllib.parse.urlsplit(url).netloc} answered {resp.status} for "
                           f"{urllib.parse.urlsplit(url).path}: {body[:200].decode('utf-8', 'replace')}")
    try:
        return json.loads(body), resp
    except ValueError as exc:
        raise StagingError(f"{url}: not JSON ({exc})") from exc


def download(url: str, dest: str, *, size: int | None = None, sha256: str | None = None, sha1_blob: str | None = None,
             auth: dict[str, str] | None = None, attempts: int = 5, timeout: float = 60.0, retry_pause: float = 2.0,
             log: Log = print, what: str = "") -> dict[str, Any]:
    """Download ``url`` to ``dest`` through ``dest.part``, resuming after a cut connection (and after a reboot:
    the part file stays on the data disk). Verified against ``size``, ``sha256`` or ``sha1_blob`` when given.
    Returns {bytes, resumed_from, etag}."""
    part = dest + ".part"
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    etag_file = part + ".etag"
    etag = _read_small(etag_file)
    resumed_from = os.path.getsize(part) if os.path.exists(part) else 0
    problem = "no attempt"
    for attempt in range(1, attempts + 1):
        have = os.path.getsize(part) if os.path.exists(part) else 0
        if size is not None and have == size and size > 0:
            break
        headers = {"Accept-Encoding": "identity"}
        if have:
            headers["Range"] = f"bytes={have}-"
            if etag:
                headers["If-Range"] = etag
        try:
            conn, resp, _ = open_url(url, headers, timeout, auth)
        except (ConnectionError, StagingError) as exc:
            problem = str(exc)
            log(f"staging {what}: {problem}; attempt {attempt}/{attempts}")
            time.sleep(retry_pause)
            continue
        try:
            if resp.status == 416 and have and (size is None or have == size):
                break  # nothing left to send: the part file is whole
            if resp.status == 206:
                start = _range_start(resp.getheader("Content-Range") or "")
                if start != have:
                    raise StagingError(f"asked for bytes from {have}, the server sent from {start}")
                mode = "ab"
            elif resp.status == 200:
                if have:
                    log(f"staging {what}: the server sent the whole file again (it changed, or ignores Range)")
                mode, have = "wb", 0
            else:
                body = resp.read(300).decode("utf-8", "replace")
                raise StagingError(f"{urllib.parse.urlsplit(url).netloc} answered {resp.status}: {body}")
            new_etag = resp.getheader("ETag")
            if new_etag:
                etag = new_etag
                _write_small(etag_file, etag)
            total = _total_size(resp, have)
            if size is not None and total is not None and total != size:
                raise DigestMismatchError(f"the server has {total} bytes, the listing said {size}")
            got = _copy_body(resp, part, mode, have, total, log, what)
            if total is None or got >= total:
                break
            problem = f"the connection closed at {_human(got)} of {_human(total)}"
        except (OSError, http.client.HTTPException) as exc:
            problem = f"the connection was cut ({type(exc).__name__}: {exc})"
        finally:
            conn.close()
        now = os.path.getsize(part) if os.path.exists(part) else 0
        log(f"staging {what}: {problem}; resuming from {_human(now)} (attempt {attempt}/{attempts})")
        time.sleep(retry_pause)
    else:
        raise StagingError(f"{what or url}: gave up after {attempts} attempts: {problem}")
    got_size = os.path.getsize(part)
    if size is not None and got_size != size:
        raise DigestMismatchError(f"{what}: {got_size} bytes downloaded, {size} expected")
    if sha256 is not None and (found := sha256_file(part)) != sha256:
        os.remove(part)  # a wrong file is never resumed from
        raise DigestMismatchError(f"{what}: SHA-256 {found} is not the expected {sha256}")
    if sha1_blob is not None and (found := git_blob_sha1(part)) != sha1_blob:
        os.remove(part)
        raise DigestMismatchError(f"{what}: git blob id {found} is not the hub's {sha1_blob}")
    os.replace(part, dest)
    if os.path.exists(etag_file):
        os.remove(etag_file)
    return {"bytes": got_size, "resumed_from": resumed_from, "etag": etag}


def _copy_body(resp: http.client.HTTPResponse, part: str, mode: str, have: int, total: int | None, log: Log,
               what: str) -> int:
    reported = time.monotonic()
    with open(part, mode) as fh:
        while True:
            block = resp.read1(CHUNK) if hasattr(resp, "read1") else resp.read(CHUNK)
            if not block:
                break
            fh.write(block)
            have += len(block)
            if time.monotonic() - reported >= PROGRESS_EVERY_SECONDS:
                reported = time.monotonic()
                shown = f" of {_human(total)} ({100 * have / total:.0f}%)" if total else ""
                log(f"staging {what}: {_human(have)}{shown}")
        fh.flush()
        os.fsync(fh.fileno())
    return have


def _range_start(content_range: str) -> int:
    try:
        return int(content_range.split()[1].split("-")[0])
    except (IndexError, ValueError):
        return -1


def _total_size(resp: http.client.HTTPResponse, have: int) -> int | None:
    content_range = resp.getheader("Content-Range") or ""
    if "/" in content_range and content_range.rsplit("/", 1)[1].strip().isdigit():
        return int(content_range.rsplit("/", 1)[1])
    length = resp.getheader("Content-Length")
    if length and length.isdigit():
        return int(length) + (have if resp.status == 206 else 0)
    return None


def _read_small(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read().strip() or None
    except OSError:
        return None


def _write_small(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


# --- the hub token ----------------------------------------------------------------------------------------------


def read_hub_token(settings: dict[str, Any], log: Log) -> str:
    """The token in ``hub_token_secret``, read with the instance role (never logged)."""
    secret = settings["hub_token_secret"]
    metadata = ca.Metadata(settings["cloud"], settings.get("metadata_url"), float(settings.get("metadata_timeout_seconds", 3)))
    credentials = ca.RoleCredentials(metadata)
    if settings["cloud"] == "alicloud":
        token = _kms_secret(settings, secret, credentials)
    else:
        template = settings.get("secret_command")
        if not template:
            raise StagingError("no command to read the hub token's secret is configured")
        call = ca.storage_command(list(template), {"secret": secret}, cloud=settings["cloud"],
                                  region=settings["region"], metadata=metadata, credentials=credentials)
        try:
            code, out, err = ca.run_bounded_split(call.argv, 120, env=call.env, max_stdout=64 * 1024)
        finally:
            call.close()
        if code != 0:
            raise StagingError(f"reading the secret {secret} failed ({code}): {err.strip()[-300:]}")
        token = out.strip()
    if not token:
        raise StagingError(f"the secret {secret} is empty")
    log(f"staging: the hub token was read from the secret {secret} with the instance role")
    return token


def _kms_secret(settings: dict[str, Any], secret: str, credentials: ca.RoleCredentials) -> str:
    """KMS ``GetSecretValue`` (RPC, version 2016-01-20), signed like the ECS calls (``cloud_access.rpc_signature``)."""
    creds = credentials.get()
    region = settings["region"]
    query = {
        "Action": "GetSecretValue", "Version": "2016-01-20", "Format": "JSON", "RegionId": region,
        "SecretName": secret, "AccessKeyId": creds["id"], "SecurityToken": creds["token"],
        "SignatureMethod": "HMAC-SHA1", "SignatureVersion": "1.0", "SignatureNonce": uuid.uuid4().hex,
        "Timestamp": ca.utc_stamp(time.time()),
    }
    query["Signature"] = ca.rpc_signature("GET", query, creds["secret"])
    base = (settings.get("kms_endpoint") or KMS_ENDPOINT).format(region=region).rstrip("/")
    url = base + "/?" + "&".join(f"{ca.percent_encode(k)}={ca.percent_encode(v)}" for k, v in query.items())
    try:
        status, body = ca.http_request("GET", url, {}, 30.0)
    except ca.HttpError as exc:
        raise StagingError(f"KMS GetSecretValue for {secret}: {exc}") from exc
    try:
        answer = json.loads(body.decode("utf-8", "replace"))
    except ValueError:
        answer = {}
    if status != 200:
        raise StagingError(f"KMS GetSecretValue for {secret} answered {status}: {answer.get('Code', '')}")
    return str(answer.get("SecretData") or "")


# --- sources ----------------------------------------------------------------------------------------------------


def parse_uri(uri: str) -> tuple[str, str, str]:
    """(scheme, bucket / hub kind / host, key / repo / path)."""
    scheme, _, rest = uri.partition("://")
    if scheme in ("s3", "oss"):
        bucket, _, key = rest.partition("/")
        return scheme, bucket, key
    if scheme == "hf":
        parts = rest.strip("/").split("/")
        if parts[0] == "datasets":
            return scheme, "datasets", "/".join(parts[1:])
        return scheme, "models", "/".join(parts)
    if scheme == "modelscope":
        return scheme, "models", rest.strip("/")
    if scheme in ("https", "http"):  # the spec accepts https only; plain http is for loopback test servers
        parts = urllib.parse.urlsplit(uri)
        return scheme, parts.netloc, parts.path
    raise StagingError(f"{uri}: unknown scheme {scheme!r}")


def hf_files(base: str, kind: str, repo: str, revision: str, auth: dict[str, str] | None,
             timeout: float) -> Iterator[dict[str, Any]]:
    """Every file of a Hugging Face repository at ``revision``: ``GET /api/{models|datasets}/{repo}/tree/{revision}
    ?recursive=true``, paged through the ``Link: <...>; rel="next"`` header (huggingface_hub ``HfApi.list_repo_tree``)."""
    rev = urllib.parse.quote(revision, safe="")
    url: str | None = f"{base}/api/{kind}/{repo}/tree/{rev}?recursive=true"
    while url:
        items, resp = get_json(url, timeout, auth)
        for item in items if isinstance(items, list) else []:
            if item.get("type") != "file":
                continue
            lfs = item.get("lfs") or {}
            prefix = "" if kind == "models" else "datasets/"
            yield {"path": item["path"], "size": int(lfs.get("size", item.get("size", 0))),
                   "sha256": lfs.get("oid"), "sha1_blob": None if lfs else item.get("oid"),
                   "url": f"{base}/{prefix}{repo}/resolve/{rev}/{urllib.parse.quote(item['path'])}"}
        url = _next_link(resp.getheader("Link") or "")


def _next_link(header: str) -> str | None:
    for part in header.split(","):
        if 'rel="next"' in part and "<" in part:
            return part[part.index("<") + 1:part.index(">")]
    return None


def modelscope_files(base: str, repo: str, revision: str, auth: dict[str, str] | None,
                     timeout: float) -> Iterator[dict[str, Any]]:
    """Every file of a ModelScope model at ``revision``: ``GET /api/v1/models/{repo}/repo/files?Revision=..&Recursive
    =true`` ({Data: {Files: [{Path, Size, Sha256, Type}]}}); each file from ``/api/v1/models/{repo}/repo?Revision=
    ..&FilePath=..`` (the modelscope SDK's ``HubApi.get_model_files`` and ``get_file_download_url``)."""
    rev = urllib.parse.quote(revision, safe="")
    answer, _ = get_json(f"{base}/api/v1/models/{repo}/repo/files?Revision={rev}&Recursive=true", timeout, auth)
    files = ((answer or {}).get("Data") or {}).get("Files") or []
    for item in files:
        if item.get("Type") == "tree":
            continue
        path = item["Path"]
        yield {"path": path, "size": int(item.get("Size", 0)), "sha256": item.get("Sha256") or None, "sha1_blob": None,
               "url": f"{base}/api/v1/models/{repo}/repo?Revision={rev}&FilePath={urllib.parse.quote(path)}"}


class Stager:
    """Stages every source of one experiment; ``run`` returns the readiness check ``data``."""

    def __init__(self, settings: dict[str, Any], log: Log, *, run_bounded: Callable[..., tuple[int | None, str]] | None = None):
        self.s = settings
        self.log = log
        self._token: str | None = None
        self._token_error: str | None = None
        self.hubs = {**HUBS, **(settings.get("hub_endpoints") or {})}
        self.timeout = float(settings.get("staging_read_timeout_seconds", 60))
        self.attempts = int(settings.get("staging_attempts", 5))
        self.retry_pause = float(settings.get("staging_retry_seconds", 2))
        self.run_bounded = run_bounded or ca.run_bounded

    def auth(self) -> dict[str, str] | None:
        if not self.s.get("hub_token_secret"):
            return None
        if self._token is None and self._token_error is None:
            try:
                self._token = read_hub_token(self.s, self.log)
            except (StagingError, ca.CredentialsError, ca.MetadataError, OSError) as exc:
                self._token_error = str(exc)
        if self._token_error:
            raise StagingError(f"no hub token: {self._token_error}")
        return {"Authorization": f"Bearer {self._token}"}

    def run(self) -> dict[str, Any]:
        sources = list(self.s.get("data_sources") or [])
        if not sources:
            return {"ok": None, "skipped": "no data sources"}
        results = [self.stage(src) for src in sources]
        failed = [r for r in results if not r["ok"]]
        check: dict[str, Any] = {"ok": not failed, "sources": results}
        if failed:
            check["error"] = "; ".join(f"{r['uri']}: {r['error']}" for r in failed)
        return check

    def stage(self, src: dict[str, Any]) -> dict[str, Any]:
        uri, to = src["uri"], src["to"]
        result: dict[str, Any] = {"uri": uri, "to": to, "ok": False, "bytes": 0, "seconds": 0.0, "digest": None}
        started = time.monotonic()
        try:
            os.makedirs(to, exist_ok=True)
            record = self.staged_record(src)
            if record is not None:
                result.update(ok=True, skipped=True, bytes=record["bytes"], digest=record["digest"])
                self.log(f"staging {uri}: already in {to} ({_human(record['bytes'])}, digest {record['digest'][:12]}); skipped")
                return result
            self.log(f"staging {uri} -> {to}")
            files = self.fetch(src)
            digest = manifest_digest(files)
            total = sum(f["size"] for f in files)
            record = {"uri": uri, "revision": src.get("revision"), "sha256": src.get("sha256"), "digest": digest,
                      "bytes": total, "files": files, "time": ca.utc_stamp(time.time())}
            _write_json(os.path.join(to, STATE_NAME), record)
            result.update(ok=True, bytes=total, digest=digest, files=len(files))
        except DigestMismatchError as exc:
            result["error"] = f"digest mismatch: {exc}"
        except (StagingError, OSError) as exc:
            result["error"] = str(exc)
        result["seconds"] = round(time.monotonic() - started, 3)
        if result["ok"]:
            rate = result["bytes"] / result["seconds"] if result["seconds"] else 0
            self.log(f"staged {uri}: {_human(result['bytes'])} in {result['seconds']:.1f} s "
                     f"({_human(rate)}/s), digest {result['digest']}")
        else:
            self.log(f"staging {uri} FAILED: {result['error']}")
        return result

    def staged_record(self, src: dict[str, Any]) -> dict[str, Any] | None:
        """The record of an earlier staging of the same source, when every file it lists is still there."""
        try:
            with open(os.path.join(src["to"], STATE_NAME), encoding="utf-8") as fh:
                record = json.load(fh)
        except (OSError, ValueError):
            return None
        same = all(record.get(k) == src.get(k) for k in ("uri", "revision", "sha256"))
        if not same or not isinstance(record.get("files"), list):
            return None
        for f in record["files"]:
            path = safe_join(src["to"], f["path"])
            if not os.path.isfile(path) or os.path.getsize(path) != f["size"]:
                return None
        return record

    # -- per kind --

    def fetch(self, src: dict[str, Any]) -> list[dict[str, Any]]:
        scheme, where, what = parse_uri(src["uri"])
        if scheme in ("s3", "oss"):
            return self.fetch_bucket(src, scheme, where, what)
        if scheme == "hf":
            listing = hf_files(self.hubs["hf"].rstrip("/"), where, what, src.get("revision") or "main", self.auth(),
                               self.timeout)
            return self.fetch_listing(src, listing)
        if scheme == "modelscope":
            listing = modelscope_files(self.hubs["modelscope"].rstrip("/"), what, src.get("revision") or "master",
                                       self.auth(), self.timeout)
            return self.fetch_listing(src, listing)
        name = urllib.parse.unquote(what.rsplit("/", 1)[-1])
        dest = safe_join(src["to"], name)
        self.download_to(src["uri"], dest, size=None, sha256=src.get("sha256"), sha1_blob=None, auth=None, what=src["uri"])
        return [{"path": name, "size": os.path.getsize(dest), "sha256": sha256_file(dest)}]

    def fetch_listing(self, src: dict[str, Any], listing: Iterator[dict[str, Any]]) -> list[dict[str, Any]]:
        files = []
        auth = self.auth()
        for item in listing:
            dest = safe_join(src["to"], item["path"])
            what = f"{src['uri']} {item['path']}"
            if not self.already_there(dest, item):
                self.download_to(item["url"], dest, size=item["size"], sha256=item.get("sha256"),
                                 sha1_blob=item.get("sha1_blob"), auth=auth, what=what)
            files.append({"path": item["path"], "size": os.path.getsize(dest), "sha256": sha256_file(dest)})
        if not files:
            raise StagingError(f"{src['uri']} lists no file at revision {src.get('revision')}")
        return files

    @staticmethod
    def already_there(dest: str, item: dict[str, Any]) -> bool:
        """A file an earlier, interrupted staging completed: its size and the hub's digest of it match."""
        if not os.path.isfile(dest) or os.path.getsize(dest) != item["size"]:
            return False
        if item.get("sha256"):
            return sha256_file(dest) == item["sha256"]
        return bool(item.get("sha1_blob")) and git_blob_sha1(dest) == item["sha1_blob"]

    def download_to(self, url: str, dest: str, **kwargs: Any) -> None:
        download(url, dest, attempts=self.attempts, timeout=self.timeout, retry_pause=self.retry_pause, log=self.log,
                 **kwargs)

    def fetch_bucket(self, src: dict[str, Any], scheme: str, bucket: str, key: str) -> list[dict[str, Any]]:
        commands = self.s.get("stage_commands") or {}
        one_file = bool(key) and not key.endswith("/")
        template = commands.get("object" if one_file else "prefix")
        if not template:
            raise StagingError(f"no storage command configured to copy {scheme}:// sources")
        region = src.get("region") or self.s["region"]
        name = key.rsplit("/", 1)[-1] if one_file else ""
        dst = os.path.join(src["to"], name) if one_file else src["to"].rstrip("/") + "/"
        metadata = ca.Metadata(self.s["cloud"], self.s.get("metadata_url"), float(self.s.get("metadata_timeout_seconds", 3)))
        tool = template[0]
        if not shutil.which(tool):
            raise StagingError(f"{tool} is not installed")
        try:
            call = ca.storage_command(list(template), {"src": src["uri"], "dst": dst}, cloud=self.s["cloud"], region=region,
                                      metadata=metadata, credentials=ca.RoleCredentials(metadata))
        except (ca.CredentialsError, OSError) as exc:
            raise StagingError(f"no credentials for {tool}: {exc}") from exc
        if self.s["cloud"] == "alicloud" and region != self.s["region"]:
            # An internal endpoint serves its own region only: another region's bucket is reached publicly.
            internal = ca.OSS_ENDPOINT.format(region=region)
            call.argv = [OSS_PUBLIC_ENDPOINT.format(region=region) if a == internal else a for a in call.argv]
        try:
            code, out = self.run_bounded(call.argv, float(self.s.get("staging_bucket_timeout_seconds", 6 * 3600)),
                                         env=call.env)
        finally:
            call.close()
        if code != 0:
            raise StagingError(f"{tool} exited {'on timeout' if code is None else code}: {out.strip()[-300:]}")
        files = []
        root = src["to"]
        for folder, _, names in os.walk(root):
            for n in sorted(names):
                if n == STATE_NAME or n.endswith((".part", ".etag")):
                    continue
                path = os.path.join(folder, n)
                files.append({"path": os.path.relpath(path, root), "size": os.path.getsize(path), "sha256": sha256_file(path)})
        if one_file:
            files = [f for f in files if f["path"] == name]
            if not files:
                raise StagingError(f"{tool} copied nothing to {dst}")
            if src.get("sha256") and files[0]["sha256"] != src["sha256"]:
                raise DigestMismatchError(f"{name}: SHA-256 {files[0]['sha256']} is not the expected {src['sha256']}")
        elif not files:
            raise StagingError(f"{src['uri']} holds no object (or the role may not list it)")
        return files


def _write_json(path: str, value: Any) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(value, fh, indent=2, sort_keys=True)
    os.replace(tmp, path)


def stage_sources(settings: dict[str, Any], log: Log) -> dict[str, Any]:
    """The readiness check ``data``: every source staged (or skipped), with its result."""
    socket.setdefaulttimeout(float(settings.get("staging_read_timeout_seconds", 60)))
    return Stager(settings, log).run()
