"""``gpulease check``: a fake ``pulumi`` on PATH for the CLI and the backend, moto for STS and Service Quotas (the
EC2 GPU quotas answered through moto's own backend), the Alibaba Cloud stub for STS and DescribeAccountAttributes.
Each failed line carries its fix; nothing is changed."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from moto.servicequotas import models as quota_models
from moto.servicequotas.exceptions import NoSuchResource

from gpulease.cli.main import main

WHOAMI = {"user": "ada", "url": "https://api.pulumi.com", "organizations": ["ada", "ml-team"],
          "tokenInformation": {"name": "laptop", "organization": "ml-team"}}


def fake_pulumi(folder: Path, *, version: str = "v3.200.0", whoami: dict[str, Any] | None = WHOAMI,
                whoami_error: str = "error: PULUMI_ACCESS_TOKEN must be set for login") -> Path:
    """An executable ``pulumi`` answering ``version`` and ``whoami --json`` the way the CLI prints them; every call
    is recorded in ``calls.txt`` beside it."""
    folder.mkdir(parents=True, exist_ok=True)
    who = json.dumps(whoami) if whoami is not None else ""
    script = folder / "pulumi"
    script.write_text(f"""#!/bin/sh
echo "$@" >> "{folder}/calls.txt"
case "$1" in
  version) echo "{version}" ;;
  whoami) if [ -n '{who}' ]; then echo '{who}'; else echo "{whoami_error}" >&2; exit 255; fi ;;
  *) echo "unexpected: $*" >&2; exit 3 ;;
esac
""")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return folder


@pytest.fixture
def pulumi_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = fake_pulumi(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    return folder


@pytest.fixture
def ec2_quotas(monkeypatch: pytest.MonkeyPatch) -> dict[str, float]:
    """EC2 quota values moto answers GetServiceQuota with (moto itself holds only VPC quotas)."""
    values: dict[str, float] = {}
    original = quota_models.ServiceQuotasBackend.get_service_quota

    def get(self: Any, service_code: str, quota_code: str) -> dict[str, Any]:
        if service_code == "ec2":
            if quota_code not in values:
                raise NoSuchResource
            return {"ServiceCode": "ec2", "QuotaCode": quota_code, "Value": values[quota_code], "Unit": "None"}
        return original(self, service_code, quota_code)

    monkeypatch.setattr(quota_models.ServiceQuotasBackend, "get_service_quota", get)
    return values


def _doc(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    return json.loads(capsys.readouterr().out)


def _row(doc: dict[str, Any], name: str) -> dict[str, Any]:
    [found] = [r for r in doc["data"]["checks"] if r["check"] == name]
    return found


def test_check_aws_stack_reads_the_cli_backend_account_and_the_spot_g_quota(aws, pulumi_on_path, ec2_quotas, capsys):
    ec2_quotas["L-3819A6DF"] = 8.0  # All G and VT Spot Instance Requests: room for g6.xlarge's 4 vCPUs
    assert main(["check", "aws-lora-7b", "--json"]) == 0
    doc = _doc(capsys)
    assert doc["ok"] is True and doc["data"]["ready"] is True
    assert doc["data"]["needs"] == [{"instanceType": "g6.xlarge", "vcpus": 4, "market": "spot"}]
    assert _row(doc, "pulumi")["version"] == "v3.200.0"
    backend = _row(doc, "backend")
    assert backend["ok"] is True and backend["organization"] == "ml-team" and backend["url"] == "https://api.pulumi.com"
    assert _row(doc, "credentials")["account"] == "123456789012"
    quota = _row(doc, "quota")
    assert (quota["ok"], quota["quotaCode"], quota["limitVcpus"], quota["neededVcpus"]) == (True, "L-3819A6DF", 8.0, 4)
    assert (pulumi_on_path / "calls.txt").read_text().splitlines() == ["version", "whoami --json"]


def test_check_names_a_zero_quota_with_the_request_that_raises_it(aws, pulumi_on_path, ec2_quotas, capsys):
    ec2_quotas["L-7212CCBC"] = 0.0  # All P Spot Instance Requests: a new account's 0
    assert main(["check", "aws-full-7b", "--json"]) == 1
    doc = _doc(capsys)
    quota = _row(doc, "quota")
    assert quota["ok"] is False and quota["quotaCode"] == "L-7212CCBC"
    need = doc["data"]["needs"][0]["vcpus"]
    assert quota["fix"] == ("aws service-quotas request-service-quota-increase --service-code ec2 --quota-code "
                            f"L-7212CCBC --desired-value {need} (approval takes hours to days)")
    assert doc["ok"] is False and {"code": "quota-failed", "message": quota["detail"]} in doc["errors"]


def test_check_table_shows_each_fix_and_an_unreadable_quota_as_unknown(aws, pulumi_on_path, ec2_quotas, capsys):
    assert main(["check", "aws-lora-7b"]) == 0  # no value in moto for the code: not read, not a failure
    out = capsys.readouterr().out
    assert "?    quota        All G and VT Spot Instance Requests (L-3819A6DF) not read:" in out
    assert "ready for gpulease up" in out


def test_check_without_a_cli_or_a_login_says_how_to_fix_each(aws, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert main(["check", "--json"]) == 1
    doc = _doc(capsys)
    assert _row(doc, "pulumi")["ok"] is False and "https://www.pulumi.com/docs/install/" in _row(doc, "pulumi")["fix"]
    assert _row(doc, "credentials")["ok"] is None  # no stack: nothing to ask the cloud
    folder = fake_pulumi(tmp_path / "bin", whoami=None)
    monkeypatch.setenv("PATH", str(folder))
    assert main(["check"]) == 1
    out = capsys.readouterr().out
    assert "FAIL backend      not logged in to a backend: error: PULUMI_ACCESS_TOKEN must be set for login" in out
    assert "fix: pulumi login (Pulumi Cloud), or pulumi login s3://<bucket> / pulumi login --local" in out


def test_check_refuses_an_old_cli_and_reads_a_self_managed_backend(tmp_path, monkeypatch, capsys):
    folder = fake_pulumi(tmp_path / "bin", version="v3.100.0",
                         whoami={"user": "ada", "url": "file:///home/ada/.pulumi"})
    monkeypatch.setenv("PATH", str(folder))
    assert main(["check", "--json"]) == 1
    doc = _doc(capsys)
    assert _row(doc, "pulumi")["fix"].startswith("upgrade to 3.182.0 or newer")
    assert _row(doc, "backend")["organization"] == "organization"


def test_check_aws_without_credentials_is_a_failed_line_not_a_traceback(aws, pulumi_on_path, monkeypatch, capsys):
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    assert main(["check", "aws-lora-7b"]) == 1
    out = capsys.readouterr().out
    assert "FAIL credentials  no AWS credentials found" in out and "fix: aws configure / aws sso login" in out


def test_check_alicloud_reads_sts_and_the_spot_vcpu_attributes(ali, pulumi_on_path, capsys):
    ali.account.quotas["cn-hangzhou"] = {"max-spot-instance-vcpu-count": "16", "used-spot-instance-vcpu-count": "12"}
    assert main(["check", "ali-lora-7b", "--json"]) == 1  # 4 free, the type needs more
    doc = _doc(capsys)
    assert _row(doc, "credentials")["account"] == ali.account.account_id
    quota = _row(doc, "quota")
    need = doc["data"]["needs"][0]
    assert (quota["limitVcpus"], quota["usedVcpus"], quota["neededVcpus"]) == (16.0, 12.0, need["vcpus"])
    assert quota["ok"] is (need["vcpus"] <= 4)
    assert quota["fix"].startswith(f"raise max-spot-instance-vcpu-count in cn-hangzhou to at least {12 + need['vcpus']}")
    asked = [p for a, p in ali.stub.calls if a == "DescribeAccountAttributes"]
    assert asked and asked[0]["AttributeName.1"] == "max-spot-instance-vcpu-count"
    assert asked[0]["AttributeName.2"] == "used-spot-instance-vcpu-count"


def test_check_unknown_stack_is_one_line_exit_2(pulumi_on_path, capsys):
    assert main(["check", "aws-lora-7"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpulease: no stack 'aws-lora-7'") and err.count("\n") == 1
