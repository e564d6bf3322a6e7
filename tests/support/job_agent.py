"""The job agent's world: moto's S3 server, a stand-in ``aws`` CLI on PATH that performs real S3 calls against it,
and the agent itself as a subprocess.

The stand-in ``aws`` is a small standard-library script that hands its argv to an HTTP endpoint in the test
process; there a boto3 client runs ``s3 ls`` / ``s3 cp`` (both directions, ``--recursive``) against moto and
answers with the exit code, stdout and stderr the real CLI would give. One process-wide client keeps a CLI call
at the cost of a Python start-up (the agent makes dozens), every call is recorded in order, and failures can be
switched on per verb to play a network outage.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import boto3
from moto.server import ThreadedMotoServer

from components.userdata import JOB_COMMANDS, JobAgentSettings
from tests.support.instance import executable
from tests.support.paths import ROOT

AGENT = ROOT / "instance" / "job_agent.py"
BUCKET = "gpulease-ci-agent"
PREFIX = "ckpt/"
CHECKPOINT_URI = f"s3://{BUCKET}/{PREFIX}"
JOBS = f"{PREFIX}_gpulease/jobs/"
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing-secret", "AWS_EC2_METADATA_DISABLED": "true"}


@contextmanager
def moto_s3() -> Iterator[Any]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    client = boto3.client(
        "s3",
        region_name="us-east-1",
        endpoint_url=f"http://{host}:{port}",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    client.create_bucket(Bucket=BUCKET)
    try:
        yield client
    finally:
        server.stop()


def empty_bucket(s3: Any) -> None:
    for item in s3.list_objects_v2(Bucket=BUCKET).get("Contents", []):
        s3.delete_object(Bucket=BUCKET, Key=item["Key"])


def split_uri(uri: str) -> tuple[str, str]:
    bucket, _, key = uri.removeprefix("s3://").partition("/")
    return bucket, key


class FakeAwsCli:
    """``aws s3 ls`` / ``aws s3 cp`` against moto, behind the stand-in executable (see the module docstring)."""

    def __init__(self, s3: Any, bin_dir: Path):
        self.s3 = s3
        self.calls: list[dict[str, Any]] = []
        self.failing: set[str] = set()
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                answer = json.dumps(outer.handle(body["argv"])).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(answer)))
                    self.end_headers()
                    self.wfile.write(answer)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the agent was killed mid-call, as some tests do on purpose

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        # Polled every 50 ms rather than the default 0.5 s: shutdown() waits up to one interval.
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        executable(
            bin_dir / "aws",
            f"""import json, sys, urllib.request
req = urllib.request.Request({url!r}, data=json.dumps({{"argv": sys.argv[1:]}}).encode(), method="POST")
answer = json.load(urllib.request.urlopen(req, timeout=60))
sys.stdout.write(answer["stdout"])
sys.stderr.write(answer["stderr"])
sys.exit(answer["rc"])
""",
        )

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def puts(self) -> list[str]:
        """The keys written by ``cp`` uploads, in order (a recursive upload lists each file)."""
        return [key for call in self.calls if call["rc"] == 0 for key in call.get("wrote", [])]

    def handle(self, argv: list[str]) -> dict[str, Any]:
        args = [a for a in argv if not a.startswith("--")] if argv[:1] == ["s3"] else argv
        options = [a for a in argv if a.startswith("--")]
        if "--region" in argv:
            args.remove(argv[argv.index("--region") + 1])
        verb = args[1] if len(args) > 1 else ""
        call: dict[str, Any] = {"argv": argv, "verb": verb}
        try:
            if verb in self.failing:
                out = (255, "", f"\nCould not connect to the endpoint URL: \"https://{BUCKET}.s3.amazonaws.com/\"\n")
            elif verb == "ls":
                out = self.ls(args[2])
            elif verb == "cp":
                out = self.cp(args[2], args[3], "--recursive" in options, call)
            else:
                out = (252, "", f"aws: error: argument operation: Invalid choice: {argv!r}\n")
        except Exception as exc:  # the CLI's own wording for a service error
            out = (1, "", f"fatal error: {exc}\n")
        call["rc"] = out[0]
        with self.lock:
            self.calls.append(call)
        return {"rc": out[0], "stdout": out[1], "stderr": out[2]}

    def ls(self, uri: str) -> tuple[int, str, str]:
        bucket, prefix = split_uri(uri)
        page = self.s3.list_objects_v2(Bucket=bucket, Prefix=prefix, Delimiter="/")
        lines = [f"                           PRE {p['Prefix'][len(prefix):]}" for p in page.get("CommonPrefixes", [])]
        for item in page.get("Contents", []):
            when = item["LastModified"].strftime("%Y-%m-%d %H:%M:%S")
            lines.append(f"{when} {item['Size']:>10} {item['Key'][len(prefix):]}")
        return (0, "".join(line + "\n" for line in lines), "") if lines else (1, "", "")

    def cp(self, src: str, dst: str, recursive: bool, call: dict[str, Any]) -> tuple[int, str, str]:
        if src.startswith("s3://"):
            bucket, key = split_uri(src)
            self.s3.download_file(bucket, key, dst)
            return 0, "", ""
        bucket, key = split_uri(dst)
        files = [Path(src)]
        if recursive:
            files = sorted(p for p in Path(src).rglob("*") if p.is_file())
        wrote = []
        for path in files:
            target = key + path.relative_to(src).as_posix() if recursive else key
            self.s3.upload_file(str(path), bucket, target)
            wrote.append(target)
        call["wrote"] = wrote
        return 0, "", ""


JOB_USER = "nobody" if os.geteuid() == 0 else pwd.getpwuid(os.geteuid()).pw_name
"""Who the job runs as: the data owner when the agent is root (as on the instance), else the agent's own user."""


@contextmanager
def data_directory() -> Iterator[Path]:
    """The data disk's mount point as the bootstrap leaves it: owned by the login user, who can reach it."""
    path = Path(tempfile.mkdtemp(prefix="gpulease-data-"))
    try:
        path.chmod(0o755)
        (path / "logs").mkdir()
        if os.geteuid() == 0:
            user = pwd.getpwnam(JOB_USER)
            os.chown(path, user.pw_uid, user.pw_gid)
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def agent_settings(root: Path, data: Path, **overrides: Any) -> dict[str, Any]:
    """The settings user-data would write for a CI stack, with the real AWS commands and fast timings."""
    job_agent = JobAgentSettings(**JOB_COMMANDS["aws"]).model_dump()
    job_agent.update(poll_seconds=0.05, log_chunk_seconds=0.1, kill_grace_seconds=0.4)
    settings = {
        "cloud": "aws",
        "region": "us-east-1",
        "stack": "ci-1-abc",
        "max_runtime_hours": 8,
        # No metadata service answers here: the instance's deadline is first boot + max runtime (8 h away).
        "metadata_url": "http://127.0.0.1:9",
        "metadata_timeout_seconds": 0.5,
        "final_sync_minutes": 5,
        "checkpoint_uri": CHECKPOINT_URI,
        "control_uri": f"s3://{BUCKET}/_gpulease/{PREFIX}control/",  # record_uri(CHECKPOINT_URI, CONTROL_FOLDER)
        "mount_point": str(data),
        "data_owner": JOB_USER,
        "state_dir": str(root / "state"),
        # The watchdog's record too, never the host's /var/lib/gpulease (a record there would set the deadline).
        "watchdog_state_dir": str(root / "watchdog-state"),
        "boot_time": time.time() - 60,
        "job_agent": job_agent,
    }
    for key, value in overrides.items():
        (job_agent if key in job_agent else settings)[key] = value
    return settings


class AgentProcess:
    """``job_agent.py`` run as the service runs it: its own process, settings from GPULEASE_SETTINGS."""

    def __init__(self, root: Path, bin_dir: Path, settings: dict[str, Any], name: str = "agent"):
        path = root / f"{name}-settings.json"
        path.write_text(json.dumps(settings))
        self.out = root / f"{name}.log"
        env = {
            **os.environ,
            **CREDENTIALS,
            "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
            "GPULEASE_SETTINGS": str(path),
        }
        with open(self.out, "ab") as fh:
            self.proc = subprocess.Popen([sys.executable, str(AGENT)], env=env, stdout=fh, stderr=subprocess.STDOUT)

    def text(self) -> str:
        return self.out.read_text()

    def signal(self, signum: int) -> None:
        self.proc.send_signal(signum)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def wait_for(condition: Callable[[], Any], timeout: float = 15.0, what: str = "condition") -> Any:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = condition()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def get_json(s3: Any, key: str) -> dict[str, Any] | None:
    try:
        return json.loads(s3.get_object(Bucket=BUCKET, Key=key)["Body"].read())
    except s3.exceptions.NoSuchKey:
        return None


def put_request(s3: Any, job: str, command: str, *, deadline: datetime | None = None, requested: datetime | None = None,
                **extra: Any) -> None:
    """A request as the runner writes it (``BucketChannel.run``)."""
    now = datetime.now(UTC)
    body = {
        "jobId": job,
        "command": command,
        "deadline": (deadline or now + timedelta(minutes=10)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "requestedAt": (requested or now).strftime("%Y-%m-%dT%H:%M:%SZ"),
        **extra,
    }
    s3.put_object(Bucket=BUCKET, Key=f"{JOBS}{job}/request.json", Body=json.dumps(body).encode())


def log_text(s3: Any, job: str) -> str:
    keys = sorted(i["Key"] for i in s3.list_objects_v2(Bucket=BUCKET, Prefix=f"{JOBS}{job}/log/").get("Contents", []))
    return "".join(s3.get_object(Bucket=BUCKET, Key=k)["Body"].read().decode() for k in keys)
