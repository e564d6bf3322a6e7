"""Hostile input and dead endpoints for ``ls`` and ``reap`` on both clouds: one line on stderr, the documented exit
code (2 for the user's input, 1 when the service cannot be reached), never a traceback, never a hang."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from gpulease.cli import main
from gpulease.inventory.alicloud_clients import AlicloudClients
from gpulease.inventory.aws import AwsClients
from tests.support.alicloud_inventory import REGION as ALI_REGION
from tests.support.alicloud_inventory import offline_credentials
from tests.support.inventory import REGION
from tests.support.paths import ROOT


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def refused(argv: list[str], capsys) -> str:
    """The one line argparse's refusal of a flag's value prints, with exit 2."""
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    return one_line(capsys.readouterr().err)


WITHIN = "(ASCII digits); see gpulease reap --help"
BAD_OPTIONS = [
    (["--grace-minutes", "nan"], "argument --grace-minutes: 'nan' is not a number of minutes; accepted: a number "
     f"from 0 to 10080, e.g. 60 {WITHIN}"),
    (["--grace-minutes", "inf"], "argument --grace-minutes: 'inf' is not a number of minutes; accepted: a number "
     f"from 0 to 10080, e.g. 60 {WITHIN}"),
    (["--max-attempts", "-3"], "argument --max-attempts: '-3' is not a number of attempts; accepted: a whole number "
     f"from 1 to 20, e.g. 4 {WITHIN}"),
    (["--read-timeout", "0"], "argument --read-timeout: '0' is not a number of seconds; accepted: a number from 0.1 "
     f"to 600, e.g. 15 {WITHIN}"),
    (["--connect-timeout", "nan"], "argument --connect-timeout: 'nan' is not a number of seconds; accepted: a number "
     f"from 0.1 to 600, e.g. 5 {WITHIN}"),
    (["--workers", "0"], "argument --workers: '0' is not a number of workers; accepted: a whole number from 1 to 64, "
     f"e.g. 8 {WITHIN}"),
    (["--snapshot-retention-days", "0"], "argument --snapshot-retention-days: '0' is not a number of days; accepted: "
     f"a whole number from 1 to 3650, e.g. 30 {WITHIN}"),
]


@pytest.mark.parametrize("cloud", ["aws", "alicloud"])
@pytest.mark.parametrize(("extra", "message"), BAD_OPTIONS)
def test_bad_numbers_are_one_line_exit_2_before_any_call(aws, ali, capsys, cloud, extra, message):
    region = REGION if cloud == "aws" else ALI_REGION
    assert refused(["reap", "--cloud", cloud, "--region", region, *extra], capsys) == f"gpulease reap: {message}"
    assert ali.stub.count() == 0


@pytest.mark.parametrize("command", ["ls", "reap"])
@pytest.mark.parametrize("region", ["us east 1", "US-EAST-1", "us-east-1;rm", "-", "useast"])
def test_malformed_regions_are_refused(command, region, capsys, monkeypatch):
    assert main([command, "--region", region]) == 2
    assert f"--region {region!r} is not a region name" in one_line(capsys.readouterr().err)


@pytest.mark.parametrize("command", ["ls", "reap"])
def test_aws_without_credentials_or_with_an_unknown_profile(aws, monkeypatch, capsys, command):
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    assert main([command, "--region", REGION]) == 2
    assert "AWS credentials: Unable to locate credentials" in one_line(capsys.readouterr().err)
    assert main([command, "--region", REGION, "--profile", "nope"]) == 2
    assert "The config profile (nope) could not be found" in one_line(capsys.readouterr().err)


@pytest.mark.parametrize("command", ["ls", "reap"])
def test_alicloud_without_credentials_or_with_an_unknown_profile(ali, monkeypatch, capsys, command):
    offline_credentials(monkeypatch, keys=False)
    assert main([command, "--cloud", "alicloud", "--region", ALI_REGION]) == 2
    assert "Alibaba Cloud credentials:" in one_line(capsys.readouterr().err)
    offline_credentials(monkeypatch)
    monkeypatch.setenv("HOME", "/nonexistent")
    assert main([command, "--cloud", "alicloud", "--region", ALI_REGION, "--profile", "nope"]) == 2
    assert "Alibaba Cloud credentials:" in one_line(capsys.readouterr().err)
    assert ali.stub.count() == 0


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("cloud", ["aws", "alicloud"])
def test_a_refused_connection_is_one_line_exit_1(aws, ali, monkeypatch, capsys, cloud):
    url = f"http://127.0.0.1:{closed_port()}"
    monkeypatch.setenv("AWS_ENDPOINT_URL", url)
    monkeypatch.setenv("GPULEASE_ALICLOUD_ENDPOINT", url)
    region = REGION if cloud == "aws" else ALI_REGION
    assert main(["reap", "--cloud", cloud, "--region", region, "--max-attempts", "2"]) == 1
    line = one_line(capsys.readouterr().err)
    assert "reading the account (STS GetCallerIdentity) failed" in line and "nothing was changed" in line
    assert main(["ls", "--cloud", cloud, "--region", region, "--max-attempts", "2"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and "endpoint unreachable; the region's other" in err
    assert len([line for line in err.splitlines() if line.strip()]) == 2, "one failed listing, then the region stops"


@pytest.fixture
def silent_endpoint() -> Iterator[str]:
    """Accepts connections and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    server.settimeout(0.2)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
                held.append(conn)
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(timeout=5)
        for conn in held:
            conn.close()
        server.close()


@pytest.mark.parametrize("cloud", ["aws", "alicloud"])
@pytest.mark.parametrize("command", ["ls", "reap"])
def test_a_silent_endpoint_fails_fast(silent_endpoint, cloud, command):
    """Run as a real process with a hard limit, so a hang fails the test instead of stalling the suite."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "ALIBABA_CLOUD_", "GPULEASE_"))},
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_CONFIG_FILE": "/nonexistent/aws-config",
        "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/aws-credentials",
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_ENDPOINT_URL": silent_endpoint,
        "ALIBABA_CLOUD_ACCESS_KEY_ID": "testing",
        "ALIBABA_CLOUD_ACCESS_KEY_SECRET": "testing",
        "ALIBABA_CLOUD_ECS_METADATA_DISABLED": "true",
        "GPULEASE_ALICLOUD_ENDPOINT": silent_endpoint,
    }
    region = REGION if cloud == "aws" else ALI_REGION
    # The shortest timeouts the options take are enough here: the endpoint never answers, however long it is given.
    timeout, attempts = 0.2, 2
    argv = [sys.executable, "-m", "gpulease", command, "--cloud", cloud, "--region", region,
            "--read-timeout", str(timeout), "--connect-timeout", str(timeout), "--max-attempts", str(attempts)]
    clients = (AwsClients(connect_timeout=timeout, read_timeout=timeout, max_attempts=attempts, session=object())
               if cloud == "aws" else AlicloudClients(connect_timeout=timeout, read_timeout=timeout, max_attempts=attempts))
    started = time.monotonic()
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=90, check=False)
    elapsed = time.monotonic() - started
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "timed out" in proc.stderr.lower() or "timeout" in proc.stderr.lower(), proc.stderr
    # A few calls of at most their worst case each (two attempts of 0.4 s and a backoff), then the region stops;
    # 20 s more for the interpreter and the SDKs to start on a loaded machine: well under the 90 s limit.
    assert clients.worst_case_seconds() < 3
    assert elapsed < 20 + 4 * clients.worst_case_seconds(), elapsed


def test_timeouts_and_attempts_are_botocore_and_tea_openapi_config():
    aws_config = AwsClients(connect_timeout=3, read_timeout=7, max_attempts=4, session=object()).config
    assert (aws_config.connect_timeout, aws_config.read_timeout) == (3, 7)
    assert aws_config.retries == {"mode": "standard", "total_max_attempts": 4}
    assert AwsClients(connect_timeout=3, read_timeout=7, max_attempts=4, session=object()).worst_case_seconds() == (
        4 * 10 + 2 + 4 + 8
    )
    ali_clients = AlicloudClients(connect_timeout=3, read_timeout=7, max_attempts=4, backoff_ms=100)
    ali_config = ali_clients.config("cn-hangzhou")
    assert (ali_config.connect_timeout, ali_config.read_timeout) == (3000, 7000)
    (condition,) = ali_config.retry_options.retry_condition
    assert condition.max_attempts == 4 and "Throttling.User" in condition.error_code
    assert {"ServerException", "RetryError"} <= set(condition.exception)
    assert ali_clients.worst_case_seconds() == pytest.approx(4 * 10 + 0.2 + 0.4 + 0.8)
