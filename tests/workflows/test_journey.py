"""A newcomer's whole journey with the README's commands, at 80 columns, without a cloud: ``init`` (the real review),
``plan``, ``check`` with a fake ``pulumi`` and moto, ``up`` through the Automation API's recording stand-in with the
instance's records in a moto bucket, ``logs``, ``ssh --node``, ``down --all --yes``. Each step's exit code and its
key lines are pinned, and no line is wider than the screen unless a single word (a path, a URL) is."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from components.image_bake import control_folder
from gpulease.cli.main import main
from gpulease.core import vocabulary as v
from gpulease.ephemeral.backend import StackInfo
from gpulease.lifecycle import capacity, deploy, teardown, verdict
from gpulease.live import clients as live_clients
from gpulease.live import target
from tests.cli.test_check import fake_pulumi
from tests.support.channel import BoundedChannel
from tests.support.ephemeral import OUTPUTS, RecordingBackend

NAME = "llama8b-lora"
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA+hBi33bSLRNsgbKP5NSFs+fQAUzBEl3aSwo5F2Lh5+ ada@laptop"
BUCKET = "gpulease-bucket"  # OUTPUTS' checkpointUri: s3://gpulease-bucket/ckpt/
IID = OUTPUTS["instanceId"]
WIDTH = 80
PROGRESS = re.compile(r"^\d\d:\d\d:\d\d ")


def _screen(capsys: pytest.CaptureFixture[str], *, log: bool = False) -> tuple[str, str]:
    """What the step printed; every line of the answer (stdout) and of the messages (stderr) fits 80 columns unless
    one word (a path, a URL) alone is wider. The progress of ``up`` / ``down`` on stderr (``HH:MM:SS`` lines, the
    engine's own lines among them) is a log, passed on as it comes; so is ``logs`` (``log``): one line per line
    of a log, tagged, so that ``grep`` reads it; and a refusal (``gpulease: ...``), one line by contract."""
    got = capsys.readouterr()
    err = [x for x in got.err.splitlines() if not PROGRESS.match(x) and not x.startswith("gpulease: ")]
    for line in [*got.out.splitlines(), *err]:
        if log and line.startswith("["):
            continue
        assert len(line) <= WIDTH or max(len(w) for w in line.split()) > WIDTH // 2, repr(line)
    return got.out, got.err


@pytest.fixture
def world(aws, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    monkeypatch.setenv("PATH", f"{fake_pulumi(tmp_path / 'bin')}{os.pathsep}{os.environ['PATH']}")
    (tmp_path / "id_ed25519.pub").write_text(KEY + "\n")
    ec2, s3 = aws.client("ec2"), aws.client("s3")
    backend = RecordingBackend(outputs_by_stack={NAME: {**OUTPUTS, "publicIp": "198.51.100.7"}})
    monkeypatch.setattr(deploy, "BACKEND", lambda: backend)
    monkeypatch.setattr(deploy, "CHANNEL", lambda cloud, region: BoundedChannel(s3))
    monkeypatch.setattr(capacity, "ZONES", {"aws": lambda region: lambda itype: ["us-west-2a", "us-west-2b"]})
    monkeypatch.setattr(teardown, "CLIENTS", lambda region, creds: (ec2, s3))
    monkeypatch.setattr(live_clients, "CLIENTS", lambda cloud, region: live_clients.Clients(bucket=s3))
    monkeypatch.setattr(target, "OUTPUTS_READER", lambda stack, root: backend.outputs_by_stack[stack])
    reviews: dict[tuple[Path, str], verdict.Verdict] = {}
    real = verdict.REVIEW

    def once(path: Path, stack: str) -> verdict.Verdict:  # the same file reviewed once (init's), then reused
        key = (Path(path).resolve(), stack)
        if key not in reviews:
            reviews[key] = real(path, stack)
        return reviews[key]

    monkeypatch.setattr(verdict, "REVIEW", once)
    return {"ec2": ec2, "s3": s3, "backend": backend, "tmp": tmp_path}


def test_a_newcomer_goes_from_nothing_to_a_verified_job_and_back(world, ec2_quotas, capsys):
    ec2_quotas["L-3819A6DF"] = 8.0  # All G and VT Spot Instance Requests: room for g6e.xlarge's 4 vCPUs
    s3, ec2, backend, tmp = world["s3"], world["ec2"], world["backend"], world["tmp"]
    # 1. init: a stack file from flags, reviewed at once.
    assert main(["init", "--name", NAME, "--owner", "ada@mylab.org", "--params", "8B", "--method", "lora",
                 "--region", "us-west-2", "--ssh-from", "203.0.113.7/32", "--public-key", str(tmp / "id_ed25519.pub"),
                 "--budget", "60", "--source", "hf://meta-llama/Llama-3.1-8B"]) == 0
    out, _ = _screen(capsys)
    flat = " ".join(out.split())
    assert flat.startswith(f"wrote {tmp / f'Pulumi.{NAME}.yaml'}: 8B lora on aws us-west-2 -> g6e.xlarge (1 x L40S")
    assert "review: PASS" in out and out.splitlines()[-1] == f"next: gpulease check {NAME}, then gpulease up {NAME}"
    assert "  2 advisory findings: `gpulease plan llama8b-lora` shows them" in out.splitlines()
    # 2. plan: the same review, offline.
    assert main(["plan", NAME]) == 0
    out, _ = _screen(capsys)
    # The stack file named as typed here (the working folder holds it), then the verdict.
    assert f"gpulease/{NAME}  (Pulumi.{NAME}.yaml)" in out.splitlines()[0]
    assert out.splitlines()[1] == "PASS: 0 mandatory, 2 advisory, 32 resources"
    assert "cost: $0.882/h while running, worst case $15.24 of budget $60.00" in " ".join(out.split())
    # 3. check: the Pulumi CLI (fake), the backend, the credentials and the quota (moto).
    assert main(["check", NAME]) == 0
    out, _ = _screen(capsys)
    assert [line[:17] for line in out.splitlines() if not line.startswith(" ")] == [
        "ok   pulumi      ", "ok   backend     ", "ok   credentials ", "ok   quota       ", "ready for gpuleas"]
    # 4. up: the review, pulumi up through the stand-in, then the instance's records.
    for name, body in (("ready.json", {"instanceId": IID, "ready": True, "failed": [], "time": "2026-12-01T10:00:00Z"}),
                       ("verify.json", {"instanceId": IID, "passed": True, "failed": [], "checks": {}})):
        s3.create_bucket(Bucket=BUCKET) if name == "ready.json" else None
        s3.put_object(Bucket=BUCKET, Key=f"{control_folder('ckpt/')}{name}", Body=json.dumps(body).encode())
    assert main(["up", NAME]) == 0
    out, err = _screen(capsys)
    assert out.splitlines() == [f"{NAME}: {IID} (g5.xlarge) ready", f"connect: gpulease ssh {NAME}",
                                f"status:  gpulease status {NAME}", f"logs:    gpulease logs {NAME}"]
    assert backend.ops()[-2:] == ["up", "outputs"] and "review: PASS" in err
    # 5. logs, ssh --node (a single node: node 0, and node 1 refused by name)
    assert main(["logs", NAME]) == 0
    out, _ = _screen(capsys, log=True)
    assert out.splitlines()[:2] == [f"[bootstrap] ok at 2026-12-01T10:00:00Z on {IID}", f"[verify] ok on {IID}"]
    assert main(["ssh", NAME, "--node", "0", "--print"]) == 0
    out, _ = _screen(capsys)
    assert out.splitlines()[-1].endswith(" ubuntu@198.51.100.7")
    assert main(["ssh", NAME, "--node", "1", "--print"]) == 2
    _, err = _screen(capsys)
    assert err == f"gpulease: stack '{NAME}': --node 1: no such node; accepted: 0\n"
    # 6. down --all --yes
    tags = [{"Key": v.TAG_MANAGED_BY, "Value": v.MANAGED_BY_VALUE}, {"Key": v.TAG_STACK, "Value": NAME}]
    volume = ec2.create_volume(AvailabilityZone="us-west-2a", Size=200, TagSpecifications=[
        {"ResourceType": "volume", "Tags": tags}])["VolumeId"]
    s3.put_bucket_tagging(Bucket=BUCKET, Tagging={"TagSet": tags})
    backend.outputs_by_stack[NAME] = {**backend.outputs_by_stack.get(NAME, OUTPUTS), "dataVolumeId": volume,
                                      "bucket": BUCKET}
    backend.stacks.setdefault(NAME, StackInfo(NAME))
    assert main(["down", NAME, "--all", "--yes"]) == 0
    out, _ = _screen(capsys)
    assert out.splitlines() == [f"{NAME}: destroyed", f"removed: disk {volume}", f"removed: bucket {BUCKET}",
                                "nothing stays"]
    assert ec2.describe_volumes()["Volumes"] == [] and BUCKET not in [b["Name"] for b in s3.list_buckets()["Buckets"]]
