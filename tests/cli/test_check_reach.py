"""``gpulease check`` tells a network failure (a refused connection, a name that does not resolve, an endpoint that
never answers) from missing or refused credentials, each with its own fix; a ``pulumi`` that hangs is bounded and
killed with every process it started."""

from __future__ import annotations

import json
import os
import socket
import stat
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from gpulease.cli.main import main
from gpulease.lifecycle import readiness
from tests.cli.test_check import fake_pulumi

SHORT = {"connect_timeout": 0.5, "read_timeout": 0.5, "retries": {"mode": "standard", "max_attempts": 1}}


def _doc(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    return json.loads(capsys.readouterr().out)


def _rows(doc: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for r in doc["data"]["checks"]:
        out.setdefault(r["check"], []).append(r)
    return out


def _closed_port() -> int:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return port


@pytest.fixture
def silent_endpoint() -> Iterator[str]:
    """Accepts connections and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        server.close()


INVALID_TOKEN = (b'<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type>'
                 b"<Code>InvalidClientTokenId</Code><Message>The security token included in the request is invalid."
                 b"</Message></Error><RequestId>4fa1</RequestId></ErrorResponse>")
"""STS's answer to a key it does not know (403 InvalidClientTokenId, the common errors of the STS API reference:
https://docs.aws.amazon.com/STS/latest/APIReference/CommonErrors.html)."""


@pytest.fixture
def refusing_sts() -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(403)
            self.send_header("Content-Type", "text/xml")
            self.send_header("Content-Length", str(len(INVALID_TOKEN)))
            self.end_headers()
            self.wfile.write(INVALID_TOKEN)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.mark.parametrize("where", ["refused", "dns", "timeout"])
def test_an_unreachable_aws_endpoint_is_a_network_row_not_a_credentials_one(
        where, aws, pulumi_on_path, silent_endpoint, monkeypatch, capsys):
    endpoint = {"refused": f"http://127.0.0.1:{_closed_port()}", "dns": "http://sts.gpulease-test.invalid",
                "timeout": silent_endpoint}[where]
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    monkeypatch.setattr(readiness, "AWS_TIMEOUTS", SHORT)
    assert main(["check", "aws-lora-7b", "--json"]) == 1
    doc = _doc(capsys)
    rows = _rows(doc)
    [network] = rows["network"]
    assert network["ok"] is False and endpoint in network["detail"]
    assert {"dns": "does not resolve", "refused": "refused", "timeout": "no answer"}[where] in network["detail"]
    assert "aws configure" not in network["fix"] and "proxy" in network["fix"]
    [creds] = rows["credentials"]
    assert creds["ok"] is None and "not asked" in creds["detail"]
    assert all(q["ok"] is None for q in rows["quota"])
    assert [e["code"] for e in doc["errors"]] == ["network-failed"]


def test_missing_and_refused_aws_credentials_each_get_their_own_fix(aws, pulumi_on_path, refusing_sts, monkeypatch,
                                                                   capsys):
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    assert main(["check", "aws-lora-7b", "--json"]) == 1
    [missing] = _rows(_doc(capsys))["credentials"]
    assert missing["ok"] is False and "no AWS credentials found" in missing["detail"]
    assert missing["fix"].startswith("aws configure / aws sso login")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAWRONGWRONGWRONG1")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong")
    monkeypatch.setenv("AWS_ENDPOINT_URL", refusing_sts)
    assert main(["check", "aws-lora-7b", "--json"]) == 1
    doc = _doc(capsys)
    [refused] = _rows(doc)["credentials"]
    assert refused["ok"] is False and "AWS refused the credentials: InvalidClientTokenId" in refused["detail"]
    assert "AWS_PROFILE" in refused["fix"] and "network" not in _rows(doc)
    assert [e["code"] for e in doc["errors"]] == ["credentials-failed"]


def test_an_unreachable_alibaba_cloud_endpoint_is_a_network_row(ali, pulumi_on_path, monkeypatch, capsys):
    endpoint = f"http://127.0.0.1:{_closed_port()}"
    monkeypatch.setenv("GPULEASE_ALICLOUD_ENDPOINT", endpoint)
    assert main(["check", "ali-lora-7b", "--json"]) == 1
    rows = _rows(_doc(capsys))
    [network] = rows["network"]
    assert network["ok"] is False and "refused" in network["detail"] and endpoint in network["detail"]
    assert rows["credentials"][0]["ok"] is None


def test_refused_alibaba_cloud_credentials_are_not_a_network_failure(ali, pulumi_on_path, monkeypatch, capsys):
    monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_SECRET", "not-the-secret")
    from alibabacloud_credentials.utils import auth_util

    monkeypatch.setattr(auth_util, "environment_access_key_secret", "not-the-secret")
    assert main(["check", "ali-lora-7b", "--json"]) == 1
    rows = _rows(_doc(capsys))
    assert "network" not in rows
    [creds] = rows["credentials"]
    assert creds["ok"] is False and "Alibaba Cloud refused the credentials" in creds["detail"]


# --- a pulumi that hangs ------------------------------------------------------------------------------------------


def _hanging_pulumi(folder: Path, hang_on: str) -> Path:
    """A ``pulumi`` that, asked ``hang_on``, starts a child (its pid in ``child.pid``) and then never answers."""
    folder = fake_pulumi(folder)
    script = folder / "pulumi"
    body = script.read_text().replace(
        'case "$1" in\n',
        f'case "$1" in\n  {hang_on}) sleep 300 & echo $! > "{folder}/child.pid"; sleep 300 ;;\n', 1)
    script.write_text(body)
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return folder


def _gone(pid: int) -> bool:
    """No such process, or one that has exited and waits to be reaped (a zombie holds nothing)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


@pytest.mark.parametrize(("hang_on", "row"), [("version", "pulumi"), ("whoami", "backend")])
def test_a_hanging_pulumi_is_bounded_and_killed_with_its_children(hang_on, row, tmp_path, monkeypatch, capsys):
    folder = _hanging_pulumi(tmp_path / "bin", hang_on)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(readiness, "PULUMI_SECONDS", 1)
    started = time.monotonic()
    assert main(["check", "--json"]) == 1
    assert time.monotonic() - started < 30  # the bound, not a speed claim: 300 s without it
    [found] = _rows(_doc(capsys))[row]
    assert found["ok"] is False and "no answer within 1 s" in found["detail"]
    child = int((folder / "child.pid").read_text())
    for _ in range(50):
        if _gone(child):
            break
        time.sleep(0.1)
    assert _gone(child), f"pulumi's child {child} outlived the bound"


def test_a_backend_out_of_reach_is_not_a_missing_login(tmp_path, monkeypatch, capsys):
    folder = fake_pulumi(tmp_path / "bin", whoami=None, whoami_error="error: could not reach https://api.pulumi.com: "
                         "Get https://api.pulumi.com/api/user: dial tcp: lookup api.pulumi.com: no such host")
    monkeypatch.setenv("PATH", str(folder))
    assert main(["check", "--json"]) == 1
    [backend] = _rows(_doc(capsys))["backend"]
    assert backend["ok"] is False and "did not reach the backend" in backend["detail"]
    assert "proxy" in backend["fix"] and "pulumi login (Pulumi Cloud)" not in backend["fix"]
