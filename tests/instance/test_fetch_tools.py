"""fetch_tools.py, the loader user-data carries: it reads the tools bundle from the bucket with the role's
credentials (read through the metadata token) in a signed GET, installs it only when its SHA-256 matches, and
the watchdog it installs runs. The stand-in object stores check every signature with the clouds' own SDK signers
(botocore's S3SigV4Auth, oss2's ProviderAuthV4) and refuse anything else."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import threading
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import oss2
import pytest
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from components import userdata
from tests.support.instance import ALI_CREDENTIALS, AWS_CREDENTIALS, MetadataServer, MetadataState

LOADER = userdata.INSTANCE_DIR / "fetch_tools.py"
BUCKET = "gpulease-ckpt-test"
REGIONS = {"aws": "us-east-1", "alicloud": "cn-hangzhou"}


def _aws_signature(method: str, url: str, headers: dict[str, str], creds: dict[str, str]) -> str:
    auth_header = headers["authorization"]
    signed = auth_header.split("SignedHeaders=")[1].split(",")[0].split(";")
    request = AWSRequest(method=method, url=url, headers={k: headers[k] for k in signed})
    request.context["timestamp"] = headers["x-amz-date"]
    auth = S3SigV4Auth(Credentials(creds["AccessKeyId"], creds["SecretAccessKey"], creds["Token"]), "s3", REGIONS["aws"])
    return auth.signature(auth.string_to_sign(request, auth.canonical_request(request)), request)


def _oss_signature(method: str, bucket: str, key: str, headers: dict[str, str], creds: dict[str, str]) -> str:
    auth = oss2.ProviderAuthV4(oss2.credentials.StaticCredentialsProvider(
        creds["AccessKeyId"], creds["AccessKeySecret"], creds["SecurityToken"]))
    request = oss2.http.Request(method, "http://x/", headers={k: v for k, v in headers.items() if k.startswith("x-oss-")},
                                region=REGIONS["alicloud"], product="oss")
    credentials = oss2.credentials.Credentials(creds["AccessKeyId"], creds["AccessKeySecret"], creds["SecurityToken"])
    return auth._ProviderAuthV4__make_signature(request, bucket, key, None, credentials, headers["x-oss-date"])


class ObjectStore:
    """One bucket over plain HTTP on 127.0.0.1 (the loader uses https on a real endpoint), path-style."""

    def __init__(self, cloud: str, objects: dict[str, bytes]):
        self.cloud, self.objects, self.requests = cloud, objects, []
        # The role's real keys, as the cloud knows them (a copy: a test may hand the instance other ones).
        self.creds = dict(AWS_CREDENTIALS if cloud == "aws" else ALI_CREDENTIALS)
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                headers = {k.lower(): v for k, v in self.headers.items()}
                bucket, _, key = urllib.parse.unquote(self.path.lstrip("/")).partition("/")
                outer.requests.append((bucket, key, headers))
                if not outer.valid(bucket, key, headers):
                    return self._answer(403, b"SignatureDoesNotMatch")
                body = outer.objects.get(key)
                return self._answer(200, body) if body is not None and bucket == BUCKET else self._answer(404, b"NoSuchKey")

            def _answer(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        # Polled every 50 ms rather than the default 0.5 s: shutdown() waits up to one interval.
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def valid(self, bucket: str, key: str, headers: dict[str, str]) -> bool:
        auth = headers.get("authorization", "")
        given = auth.rsplit("Signature=", 1)[-1]
        if self.cloud == "aws":
            if headers.get("x-amz-security-token") != self.creds["Token"]:
                return False
            url = f"{self.url}/{bucket}/{urllib.parse.quote(key, safe='/~')}"
            return (auth.startswith(f"AWS4-HMAC-SHA256 Credential={self.creds['AccessKeyId']}/")
                    and given == _aws_signature("GET", url, headers, self.creds))
        if headers.get("x-oss-security-token") != self.creds["SecurityToken"]:
            return False
        return (auth.startswith(f"OSS4-HMAC-SHA256 Credential={self.creds['AccessKeyId']}/")
                and given == _oss_signature("GET", bucket, key, headers, self.creds))

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(params=["aws", "alicloud"])
def world(request, tmp_path: Path) -> Iterator[tuple[str, ObjectStore, MetadataState, dict]]:
    cloud = request.param
    key = userdata.tools_key("ckpt/")
    store = ObjectStore(cloud, {key: userdata.tools_bundle().encode()})
    state = MetadataState(cloud=cloud)
    with MetadataServer(state) as server:
        settings = {
            "cloud": cloud,
            "metadata_url": server.url,
            "tools": {"bucket": BUCKET, "key": key, "region": REGIONS[cloud], "sha256": userdata.tools_sha256(),
                      "endpoint": store.url},
        }
        yield cloud, store, state, settings
    store.close()


def fetch(tmp_path: Path, settings: dict, wait: float = 0) -> subprocess.CompletedProcess:
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(settings))
    env = {"GPULEASE_SETTINGS": str(path), "GPULEASE_INSTALL_DIR": str(tmp_path / "opt")}
    return subprocess.run([sys.executable, str(LOADER), "--wait", str(wait)], capture_output=True, text=True,
                          env=env, timeout=60)


def test_the_loader_installs_the_bundle_with_a_signed_request_and_the_token(tmp_path: Path, world) -> None:
    _, store, state, settings = world
    done = fetch(tmp_path, settings)
    assert done.returncode == 0, done.stderr
    installed = sorted(p.name for p in (tmp_path / "opt").iterdir())
    assert installed == [".tools-sha256", "bounds.py", "budget_rule.py", "clock.py", "cloud_access.py", "cluster.py", "control.py", "deadline_rule.py", "disk_space.py", "gpu_query.py", "gpulease_launch.py", "heartbeat.py", "idle_rule.py", "instance_setup.py", "instance_state.py", "job_agent.py", "log_upload.py", "manifest.py", "process_tree.py", "run_job.py", "spot_request.py", "spot_rule.py", "staging.py", "staging_fetch.py", "staging_files.py", "staging_hash.py", "staging_http.py", "staging_hubs.py", "staging_parts.py", "starved_rule.py", "sync_rule.py", "unicode_table.py", "verify.py", "watchdog.py",
                         "watchdog_defaults.py", "watchdog_end.py", "watchdog_idle.py", "watchdog_log.py",
                         "watchdog_procs.py", "watchdog_spot.py", "watchdog_sync.py"]
    files = json.loads(userdata.tools_bundle())["files"]
    assert all((tmp_path / "opt" / name).read_text() == text for name, text in files.items())
    assert len(store.requests) == 1 and state.refused == []
    assert (f"installed bounds.py, budget_rule.py, clock.py, cloud_access.py, cluster.py, control.py, deadline_rule.py, disk_space.py, gpu_query.py, gpulease_launch.py, heartbeat.py, idle_rule.py, instance_setup.py, instance_state.py, job_agent.py, log_upload.py, manifest.py, process_tree.py, run_job.py, spot_request.py, spot_rule.py, staging.py, staging_fetch.py, staging_files.py, staging_hash.py, staging_http.py, staging_hubs.py, staging_parts.py, starved_rule.py, sync_rule.py, unicode_table.py, verify.py, watchdog.py, "
            "watchdog_defaults.py, watchdog_end.py, watchdog_idle.py, watchdog_log.py, watchdog_procs.py, watchdog_spot.py, "
            "watchdog_sync.py "
            f"({userdata.tools_sha256()[:12]})") in done.stderr
    # Installed and matching: the next service start reads nothing.
    again = fetch(tmp_path, settings)
    assert again.returncode == 0 and "already installed" in again.stderr and len(store.requests) == 1


def test_a_bundle_whose_hash_differs_is_refused(tmp_path: Path, world) -> None:
    _, store, _, settings = world
    store.objects[settings["tools"]["key"]] = userdata.tools_bundle().encode().replace(b"shutdown", b"shutd0wn")
    done = fetch(tmp_path, settings)
    assert done.returncode == 1
    assert f"expected {userdata.tools_sha256()}" in done.stderr
    assert not (tmp_path / "opt" / "watchdog.py").exists()


def test_wrong_credentials_are_refused_by_the_store(tmp_path: Path, world) -> None:
    cloud, _, state, settings = world
    state.role = "another-role"  # the service hands out the same keys, under another role name: still valid
    secret_key = "SecretAccessKey" if cloud == "aws" else "AccessKeySecret"
    creds = AWS_CREDENTIALS if cloud == "aws" else ALI_CREDENTIALS
    original = creds[secret_key]
    creds[secret_key] = "not-the-secret"
    try:
        done = fetch(tmp_path, settings)
    finally:
        creds[secret_key] = original
    assert done.returncode == 1 and "403" in done.stderr


def test_the_watchdog_the_loader_installs_runs(tmp_path: Path, world) -> None:
    _, _, _, settings = world
    assert fetch(tmp_path, settings).returncode == 0
    bad = tmp_path / "bad.json"
    bad.write_text('{"cloud": "aws", "cloud": "aws", "max_runtime_hours": 1}')
    out = subprocess.run([sys.executable, str(tmp_path / "opt" / "watchdog.py")], capture_output=True, text=True,
                         env={"GPULEASE_SETTINGS": str(bad)}, timeout=30)
    # It starts, imports cloud_access from its own directory, and reads its settings strictly.
    assert out.returncode == 2
    assert out.stderr.strip() == f"gpulease-watchdog: cannot read settings: {bad}: key 'cloud' is written twice"


def test_the_bundle_hash_is_the_content_hash() -> None:
    assert hashlib.sha256(userdata.tools_bundle().encode()).hexdigest() == userdata.tools_sha256()
    assert userdata.tools_key("runs/r8/") == f"_gpulease/runs/r8/tools/{userdata.tools_sha256()}.json"
