"""Stand-ins for what the instance-side tools talk to: the metadata service, nvidia-smi, the cloud CLI, shutdown.

Every stand-in is real: an HTTP server on 127.0.0.1 (port 0), executables on PATH that append what they were
asked to an events file, and a clock that the in-process watchdog advances instead of sleeping.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from gpulease.core import vocabulary as v
from instance import watchdog

DEADLINE_EPOCH = 1_796_112_000.0  # 2026-12-01T08:00:00Z
TOKEN = "AQAEAtest-token=="


def iso(epoch: float) -> str:
    return watchdog.stamp(epoch)


class FakeClock(watchdog.Clock):
    """Virtual time for the in-process watchdog: sleeping advances it at once. Real waits (subprocess and
    socket timeouts) are scaled down so that a 2 s metadata timeout costs 0.1 s of test time.

    ``jump`` moves the wall clock alone, as an NTP step or a bad RTC does; the monotonic clock never jumps."""

    SCALE = 20.0

    def __init__(self, start: float):
        super().__init__()
        self.t = start
        self.skew = 0.0

    def now(self) -> float:
        return self.t + self.skew

    def monotonic(self) -> float:
        return self.t

    def jump(self, seconds: float) -> None:
        self.skew += seconds

    def sleep(self, seconds: float) -> None:
        self.t += max(0.0, seconds)

    def real(self, seconds: float) -> float:
        # A twentieth of real time, but never under a quarter second: the hook and sync stand-ins are real
        # processes, and on a loaded machine 50 ms is not always enough for one to start and record itself.
        return max(0.25, seconds / self.SCALE)

    def virtual(self, real_seconds: float) -> float:
        return real_seconds * self.SCALE


def executable(path: Path, body: str) -> Path:
    path.write_text(f"#!{sys.executable}\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def recorder(path: Path, name: str, events: Path, exit_code: int = 0, extra: str = "") -> Path:
    """An executable that appends {name, argv, what the first directory argument holds, the credential-related
    environment, the config file given with ``-c`` (its text and mode, read while the call runs)} to ``events``."""
    return executable(
        path,
        f"""import json, os, stat, sys
args = sys.argv[1:]
listing = {{}}
for a in args:
    if os.path.isdir(a):
        listing[a] = sorted(os.listdir(a))
config = None
if "-c" in args[:-1]:
    cfg = args[args.index("-c") + 1]
    config = {{"path": cfg, "mode": oct(stat.S_IMODE(os.stat(cfg).st_mode)), "text": open(cfg).read(),
               "dir_mode": oct(stat.S_IMODE(os.stat(os.path.dirname(cfg)).st_mode))}}
env = {{k: v for k, v in os.environ.items() if k.startswith(("AWS_", "OSS_", "ALIBABA_CLOUD_", "ALICLOUD_"))}}
{extra}
with open({str(events)!r}, "a") as fh:
    fh.write(json.dumps({{"name": {name!r}, "argv": args, "listing": listing, "env_reason": os.environ.get("GPULEASE_REASON"),
                         "env": env, "config": config}}) + "\\n")
sys.exit({exit_code})
""",
    )


def events(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def fake_nvidia_smi(path: Path, state: Path) -> Path:
    """nvidia-smi answering from the files in the ``state`` directory (see ``set_gpus``); a shell script because
    the watchdog asks it every minute and a test covers hours."""
    path.write_text(
        f"""#!/bin/sh
state='{state}'
if [ -e "$state/fail" ]; then
  echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver." >&2
  exit 9
fi
case "$*" in
  -L) cat "$state/list.txt" ;;
  *utilization.gpu*) cat "$state/utilization.csv" ;;
  *name,memory.total,driver_version*) cat "$state/inventory.csv" ;;
  *) cat "$state/header.txt" ;;
esac
"""
    )
    path.chmod(0o755)
    return path


def set_gpus(state: Path, util: float | list[float] = 0, fail: bool = False) -> None:
    """What the fake nvidia-smi reports: one A10G per utilization value, or a driver failure."""
    state.mkdir(parents=True, exist_ok=True)
    utils = util if isinstance(util, list) else [util]
    (state / "utilization.csv").write_text("".join(f"{u}, 512\n" for u in utils))
    (state / "inventory.csv").write_text("".join("NVIDIA A10G, 23028, 550.127.05\n" for _ in utils))
    (state / "list.txt").write_text("".join(f"GPU {i}: NVIDIA A10G (UUID: GPU-{i:08d}-a10g)\n" for i in range(len(utils))))
    (state / "header.txt").write_text("| NVIDIA-SMI 550.127.05   Driver Version: 550.127.05   CUDA Version: 12.4 |\n")
    fail_flag = state / "fail"
    if fail:
        fail_flag.touch()
    elif fail_flag.exists():
        fail_flag.unlink()


AWS_CREDENTIALS = {"AccessKeyId": "ASIATESTROLEKEY", "SecretAccessKey": "aws-role-secret", "Token": "aws-role-session-token"}
ALI_CREDENTIALS = {"AccessKeyId": "STS.testrolekey", "AccessKeySecret": "ali-role-secret", "SecurityToken": "ali-sts-token"}


@dataclass
class MetadataState:
    cloud: str = "aws"
    require_token: bool = True
    """Hardened mode (AWS IMDSv2 http_tokens=required; Alibaba's security hardening mode), as the kit sets it."""
    instance_action: dict | None = None
    rebalance: dict | None = None
    termination_time: str | None = None
    tags: dict[str, str] = field(default_factory=dict)
    """Instance tags served under /latest/meta-data/tags/instance/<key>."""
    delay: float = 0.0
    trickle: float = 0.0
    """Seconds between the bytes of every answer (a service that keeps the connection alive but hardly talks)."""
    fail: bool = False
    fail_first: int = 0
    """Answer this many requests with 500 before behaving."""
    role: str = "gpulease-exp1-role"
    credentials_expire_in: float = 3600.0
    instance_id: str = "i-0123456789abcdef0"
    values: dict[str, str] = field(default_factory=dict)
    """Any other metadata path and its answer (e.g. /latest/meta-data/instance-type)."""
    statuses: dict[str, int] = field(default_factory=dict)
    """A metadata path answered with this status instead (a service that fails for one path only)."""
    issued: int = 0
    requests: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)
    refused: list[tuple[str, str, int]] = field(default_factory=list)
    """Every request refused for want of a token (method, path, status): a tokenless read the real service refuses."""


class MetadataServer:
    """The instance metadata service on 127.0.0.1, hardened like the real ones: ``PUT /latest/api/token`` with
    the cloud's TTL header gives a token; every GET must carry it (401 on AWS, 403 on Alibaba Cloud otherwise);
    a PUT without the TTL header is refused with 400. Serves the spot notices, instance tags and the instance
    role's temporary credentials (AWS ``iam/``, Alibaba ``ram/``)."""

    def __init__(self, state: MetadataState):
        self.state = state
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _answer(self, status: int, body: str = "") -> None:
                data = body.encode()
                try:
                    if outer.state.trickle:
                        head = f"HTTP/1.1 {status} X\r\nContent-Length: {len(data)}\r\n\r\n".encode() + data
                        for i in range(len(head)):
                            self.wfile.write(head[i:i + 1])
                            self.wfile.flush()
                            time.sleep(outer.state.trickle)
                        return
                    self.send_response(status)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError, OSError):
                    pass  # the client gave up waiting (the slow-service tests), as it should

            def do_PUT(self) -> None:
                failing = outer._record(self)
                s = outer.state
                if s.delay:
                    time.sleep(s.delay)
                if failing:
                    return self._answer(500)
                ttl = self.headers.get(TTL_HEADERS[s.cloud])
                if self.path != "/latest/api/token":
                    return self._answer(405 if s.cloud == "aws" else 404)
                if not ttl or not ttl.isdigit() or not 1 <= int(ttl) <= 21600:
                    return self._answer(400)
                s.issued += 1
                return self._answer(200, TOKEN)

            def do_GET(self) -> None:
                failing = outer._record(self)
                s = outer.state
                if s.delay:
                    time.sleep(s.delay)
                if failing:
                    return self._answer(500)
                if s.require_token and self.headers.get(TOKEN_HEADERS[s.cloud]) != TOKEN:
                    status = 401 if s.cloud == "aws" else 403
                    s.refused.append(("GET", self.path, status))
                    return self._answer(status)
                path = urllib.parse.unquote(self.path)
                if path in s.statuses:
                    return self._answer(s.statuses[path])
                found = outer.answer(path)
                return self._answer(200, found) if found is not None else self._answer(404)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        # Polled every 50 ms rather than the default 0.5 s: shutdown() waits up to one interval.
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def answer(self, path: str) -> str | None:
        s = self.state
        if path == "/latest/meta-data/instance-id":
            return s.instance_id
        if path in s.values:
            return s.values[path]
        if path.startswith("/latest/meta-data/tags/instance/"):
            return s.tags.get(path.rsplit("/", 1)[1])
        creds_base = "/latest/meta-data/iam/security-credentials/" if s.cloud == "aws" else "/latest/meta-data/ram/security-credentials/"
        if path == creds_base and s.role:
            return s.role
        if path == creds_base + s.role and s.role:
            expiration = iso(time.time() + s.credentials_expire_in)
            base = AWS_CREDENTIALS if s.cloud == "aws" else ALI_CREDENTIALS
            return json.dumps({"Code": "Success", **base, "Expiration": expiration, "LastUpdated": iso(time.time())})
        if s.cloud == "aws":
            if path == "/latest/meta-data/spot/instance-action" and s.instance_action:
                return json.dumps(s.instance_action)
            if path == "/latest/meta-data/events/recommendations/rebalance" and s.rebalance:
                return json.dumps(s.rebalance)
        elif path == "/latest/meta-data/instance/spot/termination-time" and s.termination_time:
            return s.termination_time
        return None

    def _record(self, handler: BaseHTTPRequestHandler) -> bool:
        """Record the request; True when it must fail."""
        self.state.requests.append((handler.command, handler.path, {k.lower(): v for k, v in handler.headers.items()}))
        if self.state.fail_first > 0:
            self.state.fail_first -= 1
            return True
        return self.state.fail

    def __enter__(self) -> MetadataServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


TTL_HEADERS = {"aws": "X-aws-ec2-metadata-token-ttl-seconds", "alicloud": "X-aliyun-ecs-metadata-token-ttl-seconds"}
TOKEN_HEADERS = {"aws": "X-aws-ec2-metadata-token", "alicloud": "X-aliyun-ecs-metadata-token"}


@dataclass
class Rig:
    """One watchdog's world under tmp_path: settings, stand-ins, the data directory and the events file."""

    root: Path
    events: Path
    gpu_state: Path
    settings: dict[str, Any]

    @property
    def checkpoints(self) -> Path:
        return Path(self.settings["mount_point"]) / "checkpoints"

    def names(self) -> list[str]:
        return [e["name"] for e in events(self.events)]

    def log_text(self) -> str:
        path = Path(self.settings["log_file"])
        return path.read_text() if path.exists() else ""


def make_rig(tmp_path: Path, metadata_url: str = "http://127.0.0.1:9", **overrides: Any) -> Rig:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    ev = tmp_path / "events.jsonl"
    gpu_state = tmp_path / "gpu"
    set_gpus(gpu_state, util=80)
    data = tmp_path / "data"
    (data / "checkpoints").mkdir(parents=True, exist_ok=True)
    (data / "logs").mkdir(exist_ok=True)
    (data / "checkpoints" / "step-100.pt").write_text("weights")
    proc = tmp_path / "proc"
    proc.mkdir(exist_ok=True)
    settings: dict[str, Any] = {
        "cloud": "aws",
        "region": "us-east-1",
        "stack": "test",
        "experiment": "exp1",
        "market": "spot",
        "max_runtime_hours": 8,
        # Without a readable tag the deadline is first boot + max runtime: DEADLINE_EPOCH here too.
        "boot_time": DEADLINE_EPOCH - 8 * 3600,
        "state_dir": str(tmp_path / "state"),
        "idle_minutes": 30,
        "idle_gpu_percent": 5,
        "warn_minutes": 15,
        "warn_hook": str(recorder(bin_dir / "warn-hook", "warn-hook", ev)),
        "final_sync_minutes": 5,
        "checkpoint_uri": "s3://bucket/ckpt/",
        "control_uri": "s3://bucket/_gpulease/ckpt/control/",  # record_uri(checkpoint_uri, CONTROL_FOLDER)
        "checkpoint_interval_minutes": 600,  # periodic syncs only where a test asks for them
        "checkpoint_hook": str(recorder(bin_dir / "checkpoint-hook", "checkpoint-hook", ev)),
        "hook_timeout_seconds": 120,
        "busy_marker": str(data / "busy"),
        "busy_marker_max_age_minutes": 0,
        "on_rebalance": "checkpoint",
        "poll_seconds": 5,
        "mount_point": str(data),
        "metadata_url": metadata_url,
        "metadata_timeout_seconds": 2,
        "sync_command": [str(recorder(bin_dir / "aws", "sync", ev)), "s3", "sync", "{src}", "{dst}", "--region", "{region}"],
        "shutdown_command": [str(recorder(bin_dir / "shutdown", "shutdown", ev))],
        "nvidia_smi": str(fake_nvidia_smi(bin_dir / "nvidia-smi", gpu_state)),
        "proc_root": str(proc),
        "log_file": str(data / "logs" / "watchdog.log"),
        "exit_after_shutdown": True,
    }
    settings.update(overrides)
    return Rig(tmp_path, ev, gpu_state, settings)


def deadline_tags(epoch: float = DEADLINE_EPOCH) -> dict[str, str]:
    """The instance's tags as the metadata service lists them: the deadline under the kit's tag key."""
    return {v.TAG_EXPIRES_AT: iso(epoch)}


def run_in_process(rig: Rig, start: float, max_ticks: int = 2000) -> tuple[watchdog.Watchdog, FakeClock]:
    clock = FakeClock(start)
    watchdog.configure_logging(rig.settings, clock)
    dog = watchdog.Watchdog(rig.settings, clock)
    dog.run(max_ticks=max_ticks)
    return dog, clock


def env_with_path(bin_dir: Path) -> dict[str, str]:
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}


# --- the bootstrap -------------------------------------------------------------------------------------------


@dataclass
class BootRig:
    """One bootstrap run's world: a fake /dev with the disk's by-id link, fstab, state and the data mount."""

    root: Path
    events: Path
    settings: dict[str, Any]
    bin_dir: Path

    @property
    def mount_point(self) -> Path:
        return Path(self.settings["mount_point"])

    @property
    def marker(self) -> dict[str, Any]:
        return json.loads((Path(self.settings["state_dir"]) / "ready.json").read_text())

    def run(self, script: Path, timeout: float = 120) -> subprocess.CompletedProcess:
        settings_path = self.root / "settings.json"
        settings_path.write_text(json.dumps(self.settings))
        env = {**env_with_path(self.bin_dir), "GPULEASE_SETTINGS": str(settings_path)}
        return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=timeout)


def make_boot_rig(
    tmp_path: Path,
    device: Path | str,
    *,
    cloud: str = "aws",
    disk_id: str = "vol-0123456789abcdef0",
    fake_mount: bool = True,
    fake_mkfs: bool = True,
    bucket_ok: bool = True,
    metadata_url: str = "http://127.0.0.1:9",
) -> BootRig:
    """Link ``device`` where the bootstrap looks for ``disk_id``; stand-ins for nvidia-smi and the cloud CLI, and
    (unless asked for the real thing) for mount and mkfs.ext4, which record their arguments."""
    from instance import instance_setup

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    ev = tmp_path / "events.jsonl"
    gpu = tmp_path / "gpu"
    set_gpus(gpu, util=0)
    fake_nvidia_smi(bin_dir / "nvidia-smi", gpu)
    # One stand-in for the cloud CLI: "ls" is the bucket check, "cp" publishes the ready marker.
    recorder(
        bin_dir / "aws",
        "aws",
        ev,
        exit_code=0 if bucket_ok else 255,
        extra="if args[1:2] == ['cp']:\n    listing['marker'] = json.load(open(args[2]))",
    )
    if fake_mount:
        recorder(bin_dir / "mount", "mount", ev)
    if fake_mkfs:
        recorder(bin_dir / "mkfs.ext4", "mkfs", ev)
    dev_root = tmp_path / "dev"
    link = Path(instance_setup.device_candidates(cloud, disk_id, str(dev_root))[0])
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(device)
    settings = {
        "cloud": cloud,
        "region": "us-east-1" if cloud == "aws" else "cn-hangzhou",
        "experiment": "exp1",
        "mount_point": str(tmp_path / "data"),
        "data_disk_id": disk_id,
        "data_owner": "nobody",
        "checkpoint_uri": "s3://bucket/ckpt/",
        "control_uri": "s3://bucket/_gpulease/ckpt/control/",  # record_uri(checkpoint_uri, CONTROL_FOLDER)
        "bucket_check_command": ["aws", "s3", "ls", "{dst}", "--region", "{region}"],
        "cli_install_command": None,
        "ready_upload_command": ["aws", "s3", "cp", "{file}", "{dst}ready.json"],
        "metadata_url": metadata_url,
        "nvidia_smi": "nvidia-smi",
        "torch_pythons": [],
        "dev_root": str(dev_root),
        "sys_root": str(tmp_path / "sys"),
        "fstab_path": str(tmp_path / "fstab"),
        "state_dir": str(tmp_path / "state"),
        "device_wait_seconds": 1,
    }
    (tmp_path / "fstab").write_text("LABEL=cloudimg-rootfs / ext4 discard,errors=remount-ro 0 1\n")
    return BootRig(tmp_path, ev, settings, bin_dir)


def blank_image(path: Path, size_mb: int = 32) -> Path:
    with open(path, "wb") as fh:
        fh.truncate(size_mb * 1024 * 1024)
    return path


def ext4_image(path: Path, files: dict[str, str], size_mb: int = 32) -> Path:
    """An ext4 image holding ``files``, written without mounting (mkfs.ext4 -d copies a directory in)."""
    blank_image(path, size_mb)
    content = path.parent / f"{path.name}.content"
    content.mkdir()
    for name, text in files.items():
        (content / name).write_text(text)
    subprocess.run(["mkfs.ext4", "-q", "-F", "-d", str(content), str(path)], check=True, capture_output=True)
    return path
