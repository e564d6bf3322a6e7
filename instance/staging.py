#!/usr/bin/env python3
"""gpulease staging: copy the experiment's data sources onto the data disk before readiness (standard library only).

Called by ``instance_setup.py`` after the data disk is mounted. For each ``data_sources`` item ``{uri, to,
sha256?, revision?, region?}``, in order:

- ``s3://`` / ``oss://``: the storage CLI with the instance role's credentials, exactly as the checkpoint sync runs
  it (``cloud_access.storage_command``): ``aws s3 sync`` / ``cp`` over HTTPS to the region's endpoint, ``ossutil cp
  -u`` through ``https://oss-<region>-internal`` (the public endpoint for a bucket in another region); sync and
  ``cp -u`` skip what is there, ``aws s3 cp`` of one object copies it again. The CLI follows links, so the ``to``
  folder is checked before it runs (a symlink, FIFO or device in it fails the source) and again after;
- ``hf://org/repo`` (``hf://datasets/org/repo``) and ``modelscope://org/repo``: the repository's file list at the
  revision from the hub's API (``staging_hubs``), then the files, several at once and a large one as parallel byte
  ranges, resumable, verified against the hub's digest of each (Hugging Face: the LFS SHA-256, else the git blob
  SHA-1; ModelScope: its SHA-256) and its size (``staging_fetch``);
- ``https://host/file``: one file with resume, verified against ``sha256`` when given, else its length; a file with
  neither is "unverified", which fails readiness like an error (give ``sha256``).

Every file is written inside its ``to`` folder only, never through a symlink, never into a FIFO or a device
(``staging_files``). Every network read is bounded by a per-read timeout and an overall deadline, one per source
(``staging_source_deadline_seconds``) and one for the whole stage (``staging_deadline_seconds``), both in the
readiness report; transient answers (429, 5xx, a reset connection) are retried with backoff within them
(``staging_http``).

A private hub token comes from the secret ``hub_token_secret`` (AWS Secrets Manager through the AWS CLI, Alibaba
Cloud KMS ``GetSecretValue`` signed with the role's STS credentials) as the secret's text or a JSON object
``{"token": "..."}``; it is kept in memory only and sent only to the hub's own host (never across a redirect to
another host). It is never logged nor written anywhere.

Idempotent across reboots and re-attached disks: each ``to`` folder keeps ``.gpulease-source.json`` (the source,
its revision and digest, each file's size and SHA-256); a source whose record matches and whose files are all there
with their sizes is skipped. Each source's result (status, bytes, seconds, digest, or the error) goes to the log
and to the readiness report; a digest mismatch fails readiness, naming the source.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import time
import urllib.parse
import uuid
from collections.abc import Callable
from typing import Any

try:
    from instance import bounds
    from instance import cloud_access as ca
    from instance.bounds import STAGE_DEFAULT, STAGE_SOURCE_DEFAULT
    from instance.staging_fetch import Engine, FileJob
    from instance.staging_files import (
        ConfinementError,
        DigestMismatchError,
        Folder,
        StagingError,
        check_to,
        source_path_problem,
    )
    from instance.staging_http import Client, Deadline, retrying
    from instance.staging_hubs import hf_files, modelscope_files
except ImportError:  # on the instance: installed next to this file
    import bounds  # type: ignore[no-redef]
    import cloud_access as ca  # type: ignore[no-redef]
    from bounds import STAGE_DEFAULT, STAGE_SOURCE_DEFAULT  # type: ignore[no-redef]
    from staging_fetch import Engine, FileJob  # type: ignore[no-redef]
    from staging_files import (  # type: ignore[no-redef]
        ConfinementError,
        DigestMismatchError,
        Folder,
        StagingError,
        check_to,
        source_path_problem,
    )
    from staging_http import Client, Deadline, retrying  # type: ignore[no-redef]
    from staging_hubs import hf_files, modelscope_files  # type: ignore[no-redef]

__all__ = ["ConfinementError", "DigestMismatchError", "Stager", "StagingError", "stage_sources"]

STATE_NAME = ".gpulease-source.json"
HUBS = {"hf": "https://huggingface.co", "modelscope": "https://www.modelscope.cn"}
KMS_ENDPOINT = "https://kms-vpc.{region}.aliyuncs.com"
OSS_PUBLIC_ENDPOINT = "https://oss-{region}.aliyuncs.com"
DEFAULT_STAGE_DEADLINE = STAGE_DEFAULT  # the one table of bounds (bounds.py), which the units follow
DEFAULT_SOURCE_DEADLINE = STAGE_SOURCE_DEFAULT
SKIPPED_NAMES = (".part", ".part.json", ".tmp")
BEARER_TOKEN = re.compile(r"^[A-Za-z0-9._~+/-]+=*\Z")

Log = Callable[[str], None]


def manifest_digest(files: list[dict[str, Any]]) -> str:
    """One SHA-256 for a staged source: over ``path size sha256`` of each file, sorted by path."""
    lines = "".join(f"{f['path']} {f['size']} {f['sha256']}\n" for f in sorted(files, key=lambda f: f["path"]))
    return hashlib.sha256(lines.encode()).hexdigest()


def _human(size: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.1f} {unit}" if unit != "B" else f"{int(size)} B"
        size /= 1024
    return f"{size:.1f} TiB"  # pragma: no cover


def reserved_name(rel: str, folder: Folder) -> None:
    """A listed file named as staging's own (the skip record, a resume file) would be overwritten by it, or
    overwrite it: refused, naming the path."""
    name = rel.rsplit("/", 1)[-1]
    if name == STATE_NAME or name.endswith(SKIPPED_NAMES):
        raise StagingError(f"{folder.path(rel)}: the source lists a file named as staging's own records "
                           f"({STATE_NAME}, *{', *'.join(SKIPPED_NAMES)}); refusing it")


def _origin(url: str) -> str:
    """``scheme://host:port`` of ``url``: where the hub token may go (not to another host, nor in the clear)."""
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def token_from_secret(value: str, secret: str) -> str:
    """The bearer token in a secret's value: the text itself, or the ``token`` of a JSON object; it must be a
    bearer token's characters (RFC 6750 ``b64token``), so nothing pasted with it can reach a header or a log."""
    token = _token_text(value.strip(), secret)
    if not BEARER_TOKEN.match(token):
        raise StagingError(f"the secret {secret} holds a token with characters a bearer token cannot carry (spaces, "
                           "control or non-ASCII characters); accepted: letters, digits and - . _ ~ + / (then =)")
    return token


def _token_text(text: str, secret: str) -> str:
    if text.startswith(("{", "[", '"')):
        try:
            parsed = json.loads(text)
        except (ValueError, RecursionError):
            parsed = None
        if isinstance(parsed, dict):
            token = parsed.get("token")
            if not isinstance(token, str) or not token.strip():
                # Never the keys themselves: a token pasted as a key would reach the log.
                missing = "its \"token\" is not a non-empty text" if "token" in parsed else "missing: \"token\""
                raise StagingError(f"the secret {secret} is a JSON object with {len(parsed)} key(s), {missing}; "
                                   "accepted: the token as the secret's text, or {\"token\": \"hf_...\"}")
            return token.strip()
        if isinstance(parsed, str):
            return parsed.strip()
        if parsed is not None:
            raise StagingError(f"the secret {secret} holds JSON {type(parsed).__name__}; accepted: the token as the "
                               "secret's text, or {\"token\": \"hf_...\"}")
    if any(c.isspace() for c in text):
        raise StagingError(f"the secret {secret} holds more than one word; accepted: the token as the secret's text, "
                           "or {\"token\": \"hf_...\"}")
    return text


# --- the hub token ----------------------------------------------------------------------------------------------


def read_hub_token(settings: dict[str, Any], log: Log) -> str:
    """The token in ``hub_token_secret``, read with the instance role (never logged)."""
    secret = settings["hub_token_secret"]
    metadata = ca.Metadata(settings["cloud"], settings.get("metadata_url"), bounds.value("metadata_read", settings))
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
            code, out, err = ca.run_bounded_split(call.argv, bounds.value("secret_read"), env=call.env,
                                                  max_stdout=64 * 1024)
        finally:
            call.close()
        if code != 0:
            raise StagingError(f"reading the secret {secret} failed ({code}): {err.strip()[-300:]}")
        token = out.strip()
    if not token:
        raise StagingError(f"the secret {secret} is empty")
    token = token_from_secret(token, secret)
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
        status, body = ca.http_request("GET", url, {}, bounds.value("secret_read"))
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
        _source_path(uri, key, encoded=False)
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
        _source_path(uri, parts.path)
        return scheme, parts.netloc, parts.path
    raise StagingError(f"{uri}: unknown scheme {scheme!r}")


def _source_path(uri: str, path: str, encoded: bool = True) -> None:
    problem = source_path_problem(path, encoded)
    if problem is not None:
        raise StagingError(f"{uri}: {problem}")


def _number(settings: dict[str, Any], key: str, default: float, most: float = 10 ** 7) -> float:
    """A positive number setting no larger than ``most``; the default for anything else."""
    value = settings.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= most:
        return default
    return float(value)


class Stager:
    """Stages every source of one experiment; ``run`` returns the readiness check ``data``."""

    def __init__(self, settings: dict[str, Any], log: Log, *, run_bounded: Callable[..., tuple[int | None, str]] | None = None):
        self.s = settings
        self.log = log
        self._token: str | None = None
        self._token_error: str | None = None
        self.hubs = {**HUBS, **(settings.get("hub_endpoints") or {})}
        self.timeout = _number(settings, "staging_read_timeout_seconds", bounds.value("staging_read"))
        self.attempts = int(_number(settings, "staging_attempts", 5))
        self.retry_pause = _number(settings, "staging_retry_seconds", 2)
        self.stage_seconds = _number(settings, "staging_deadline_seconds", DEFAULT_STAGE_DEADLINE)
        self.source_seconds = _number(settings, "staging_source_deadline_seconds",
                                      _number(settings, "staging_bucket_timeout_seconds", DEFAULT_SOURCE_DEADLINE))
        self.connections = int(_number(settings, "staging_connections", 8))
        self.piece_size = int(_number(settings, "staging_piece_bytes", 64 * 1024 * 1024, 2 ** 40))
        self.split_above = int(_number(settings, "staging_split_above_bytes", 128 * 1024 * 1024, 2 ** 50))
        self.max_pages = int(_number(settings, "staging_max_pages", 10_000))
        self.anchor = str(settings.get("mount_point") or "/")
        self.run_bounded = run_bounded or ca.run_bounded
        self.stage_deadline = Deadline(self.stage_seconds, "the stage's deadline")

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
        self.stage_deadline = Deadline(self.stage_seconds, "the stage's deadline")
        results = [self.stage(src) for src in sources]
        failed = [r for r in results if not r["ok"]]
        check: dict[str, Any] = {"ok": not failed, "sources": results,
                                 "deadlines": {"stage_seconds": self.stage_seconds,
                                               "source_seconds": self.source_seconds,
                                               "read_timeout_seconds": self.timeout}}
        if failed:
            check["error"] = "; ".join(f"{r['uri']}: {r['error']}" for r in failed)
        return check

    def stage(self, src: dict[str, Any]) -> dict[str, Any]:
        uri, to = src["uri"], src["to"]
        result: dict[str, Any] = {"uri": uri, "to": to, "ok": False, "status": "failed", "bytes": 0, "seconds": 0.0,
                                  "digest": None}
        started = time.monotonic()
        deadline = Deadline(self.source_seconds, "the source's deadline", outer=self.stage_deadline)
        folder = None
        try:
            deadline.check("starting")
            check_to(to)
            folder = Folder(to, self.anchor)
            record = self.staged_record(src, folder)
            if record is not None:
                result.update(ok=True, status="skipped", skipped=True, bytes=record["bytes"], digest=record["digest"])
                self.log(f"staging {uri}: already in {to} ({_human(record['bytes'])}, digest {record['digest'][:12]}); skipped")
                return result
            self.log(f"staging {uri} -> {to}")
            files = self.fetch(src, folder, deadline)
            unverified = [f["path"] for f in files if not f.pop("verified", True)]
            digest = manifest_digest(files)
            total = sum(f["size"] for f in files)
            result.update(bytes=total, digest=digest, files=len(files))
            if unverified:
                result.update(status="unverified", error=f"unverified: {', '.join(unverified[:5])} came with neither a "
                              "length nor a digest, so a cut download cannot be told from a whole one; accepted: "
                              "give the source's sha256")
            else:
                record = {"uri": uri, "revision": src.get("revision"), "sha256": src.get("sha256"), "digest": digest,
                          "bytes": total, "files": files, "time": ca.utc_stamp(time.time())}
                folder.write_json(STATE_NAME, record)
                result.update(ok=True, status="staged")
        except DigestMismatchError as exc:
            result["error"] = f"digest mismatch: {exc}"
        except (StagingError, OSError) as exc:
            result["error"] = str(exc)
        except Exception as exc:  # one source's unforeseen failure fails that source, never the whole stage
            result["error"] = f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
        finally:
            if folder is not None:
                folder.close()
        result["seconds"] = round(time.monotonic() - started, 3)
        if result["ok"]:
            rate = result["bytes"] / result["seconds"] if result["seconds"] else 0
            self.log(f"staged {uri}: {_human(result['bytes'])} in {result['seconds']:.1f} s "
                     f"({_human(rate)}/s), digest {result['digest']}")
        else:
            self.log(f"staging {uri} FAILED: {result['error']}")
        return result

    def staged_record(self, src: dict[str, Any], folder: Folder) -> dict[str, Any] | None:
        """The record of an earlier staging of the same source, when every file it lists is still there."""
        record = folder.read_json(STATE_NAME)
        if not isinstance(record, dict):
            return None
        same = all(record.get(k) == src.get(k) for k in ("uri", "revision", "sha256"))
        files = record.get("files")
        if not same or not isinstance(files, list) or not isinstance(record.get("bytes"), int) or not isinstance(
                record.get("digest"), str):
            return None
        for f in files:
            if not isinstance(f, dict) or not isinstance(f.get("path"), str) or not isinstance(f.get("size"), int):
                return None
            try:
                if folder.regular_size(f["path"]) != f["size"]:
                    return None
            except ConfinementError:
                return None
        return record

    # -- per kind --

    def client(self, deadline: Deadline, hub: str | None) -> Client:
        auth = self.auth() if hub else None
        return Client(self.timeout, deadline, auth, _origin(hub) if hub else None)

    def fetch(self, src: dict[str, Any], folder: Folder, deadline: Deadline) -> list[dict[str, Any]]:
        scheme, where, what = parse_uri(src["uri"])
        if scheme in ("s3", "oss"):
            if what and not what.endswith("/"):
                reserved_name(what.rsplit("/", 1)[-1], folder)
            return self.fetch_bucket(src, folder, deadline, scheme, what)
        if scheme in ("hf", "modelscope"):
            base = self.hubs[scheme].rstrip("/")
            client = self.client(deadline, base)
            try:
                def get_json(url: str) -> tuple[Any, Any]:
                    return retrying(lambda: client.get_json(url), attempts=self.attempts, pause=self.retry_pause,
                                    deadline=deadline, log=self.log, what=src["uri"])

                if scheme == "hf":
                    jobs = hf_files(get_json, base, where, what, src.get("revision") or "main", src["uri"],
                                    self.max_pages)
                else:
                    jobs = modelscope_files(get_json, base, what, src.get("revision") or "master", src["uri"])
            finally:
                client.close()
            if not jobs:
                raise StagingError(f"{src['uri']} lists no file at revision {src.get('revision')}")
            for job in jobs:
                reserved_name(job.rel, folder)
            return self.download(jobs, folder, deadline, base)
        name = urllib.parse.unquote(what.rsplit("/", 1)[-1])
        reserved_name(name, folder)
        job = FileJob(src["uri"], name, None, src.get("sha256"), None, src["uri"])
        return self.download([job], folder, deadline, None)

    def download(self, jobs: list[FileJob], folder: Folder, deadline: Deadline, hub: str | None) -> list[dict[str, Any]]:
        todo, files = [], []
        for job in jobs:
            there = self.already_there(folder, job)
            if there is None:
                todo.append(job)
            else:
                files.append(there)
        if todo:
            engine = Engine(folder, self.client(deadline, hub), deadline, connections=self.connections,
                            piece_size=self.piece_size, split_above=self.split_above, attempts=self.attempts,
                            retry_pause=self.retry_pause, log=self.log)
            files.extend(engine.run(todo))
        return files

    @staticmethod
    def already_there(folder: Folder, job: FileJob) -> dict[str, Any] | None:
        """A file an earlier, interrupted staging completed, when its size and the hub's digest of it match."""
        if job.size is None or not (job.sha256 or job.sha1_blob):
            return None
        if folder.regular_size(job.rel) != job.size:
            return None
        size, sha256, sha1 = folder.hash(job.rel, blob=bool(job.sha1_blob))
        if (job.sha256 and sha256 != job.sha256) or (job.sha1_blob and sha1 != job.sha1_blob):
            return None
        return {"path": job.rel, "size": size, "sha256": sha256, "verified": True}

    def fetch_bucket(self, src: dict[str, Any], folder: Folder, deadline: Deadline, scheme: str,
                     key: str) -> list[dict[str, Any]]:
        commands = self.s.get("stage_commands") or {}
        one_file = bool(key) and not key.endswith("/")
        template = commands.get("object" if one_file else "prefix")
        if not template:
            raise StagingError(f"no storage command configured to copy {scheme}:// sources")
        region = src.get("region") or self.s["region"]
        name = key.rsplit("/", 1)[-1] if one_file else ""
        dst = os.path.join(src["to"], name) if one_file else src["to"].rstrip("/") + "/"
        list(folder.files())  # the CLI follows links: a symlink, FIFO or device in the folder fails the source first
        if one_file:
            folder.regular_size(name)
        metadata = ca.Metadata(self.s["cloud"], self.s.get("metadata_url"), bounds.value("metadata_read", self.s))
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
            code, out = self.run_bounded(call.argv, max(1.0, deadline.left()), env=call.env)
        finally:
            call.close()
        if code != 0:
            how = f"on its deadline ({deadline.seconds:g} s)" if code is None else str(code)
            raise StagingError(f"{tool} exited {how}: {out.strip()[-300:]}")
        files = []
        for rel, _ in folder.files():
            if rel == STATE_NAME or rel.endswith(SKIPPED_NAMES):
                continue
            if one_file and rel != name:
                continue
            deadline.check(f"hashing {rel}")
            size, sha256, _ = folder.hash(rel)
            files.append({"path": rel, "size": size, "sha256": sha256})
        if one_file:
            if not files:
                raise StagingError(f"{tool} copied nothing to {dst}")
            if src.get("sha256") and files[0]["sha256"] != src["sha256"]:
                raise DigestMismatchError(f"{name}: SHA-256 {files[0]['sha256']} is not the expected {src['sha256']}")
        elif not files:
            raise StagingError(f"{src['uri']} holds no object (or the role may not list it)")
        return files


def stage_sources(settings: dict[str, Any], log: Log) -> dict[str, Any]:
    """The readiness check ``data``: every source staged (or skipped), with its result."""
    return Stager(settings, log).run()
