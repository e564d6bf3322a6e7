"""``gpulease push`` and ``gpulease pull`` against moto's S3 on loopback: the stack's bucket found offline (naming
rules with the organization), through the Pulumi CLI's outputs, or given; multipart uploads through s3transfer; a
second run skips what is already there; a cut push resumes with the files not yet sent."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

import pytest
from boto3.s3.transfer import TransferConfig

from gpulease.cli import main
from gpulease.transfer import s3 as s3_transfer
from gpulease.transfer.files import MTIME_KEY

STACK = "aws-prep-7b"
MB = 1024 * 1024


def expected_bucket(organization: str) -> str:
    # components/naming.py: gpulease-<project>-<experiment>-<sha256(org/project/stack)[:6]>
    digest = hashlib.sha256(f"{organization}/gpulease/{STACK}".encode()).hexdigest()[:6]
    return f"gpulease-llm-finetune-llama7b-prep-{digest}"


@pytest.fixture
def no_pulumi(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")


@pytest.fixture
def small_parts(monkeypatch):
    """Multipart above 5 MB (S3's smallest part) so that a test file of a few MB goes in parts."""
    monkeypatch.setattr(s3_transfer, "transfer_config", lambda: TransferConfig(
        multipart_threshold=5 * MB, multipart_chunksize=5 * MB))


def _tree(root: Path) -> Path:
    (root / "alpaca").mkdir(parents=True)
    (root / "alpaca" / "train.jsonl").write_bytes(os.urandom(11 * MB))
    (root / "alpaca" / "README").write_text("notes\n")
    return root / "alpaca"


def test_push_finds_the_bucket_offline_sends_in_parts_and_skips_on_rerun(aws, no_pulumi, small_parts, tmp_path, capsys):
    bucket = expected_bucket("my-org")
    s3 = aws.client("s3")
    s3.create_bucket(Bucket=bucket)
    folder = _tree(tmp_path)
    assert main(["push", STACK, str(folder), "--to", "data/raw", "--offline", "--org", "my-org", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["bucket"] == bucket and result["foundBy"] == "offline rendering (organization my-org, from --org)"
    assert sorted(result["sent"]) == ["data/raw/README", "data/raw/train.jsonl"] and result["skipped"] == []
    head = s3.head_object(Bucket=bucket, Key="data/raw/train.jsonl")
    assert head["ETag"].strip('"').endswith("-3")  # 11 MB in 5 MB parts: a multipart upload of three parts
    assert head["Metadata"][MTIME_KEY] == str(int((folder / "train.jsonl").stat().st_mtime))
    body = s3.get_object(Bucket=bucket, Key="data/raw/train.jsonl")["Body"].read()
    assert body == (folder / "train.jsonl").read_bytes()

    # Again: nothing to send. A file changed since (its modification time) goes again.
    assert main(["push", STACK, str(folder), "--to", "data/raw", "--offline", "--org", "my-org", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["skipped"] == ["data/raw/README", "data/raw/train.jsonl"]
    (folder / "README").write_text("more notes\n")
    os.utime(folder / "README", (1_700_000_000, 1_700_000_000))
    assert main(["push", STACK, str(folder), "--to", "data/raw", "--offline", "--org", "my-org", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["sent"] == ["data/raw/README"]


def test_a_cut_push_resumes_with_what_was_not_sent(aws, no_pulumi, monkeypatch, tmp_path, capsys):
    # No --org: a self-managed backend (PULUMI_BACKEND_URL) has the organization `organization`.
    monkeypatch.setenv("PULUMI_BACKEND_URL", f"file://{tmp_path / 'state'}")
    bucket = expected_bucket("organization")
    aws.client("s3").create_bucket(Bucket=bucket)
    folder = tmp_path / "ckpt"
    folder.mkdir()
    for name in ("a.bin", "b.bin", "c.bin"):
        (folder / name).write_bytes(os.urandom(1000))
    real_upload = s3_transfer.S3Store.upload

    def cut_after_first(self, f, progress):
        if f.key.endswith("b.bin"):
            raise ConnectionResetError("connection reset by peer")
        real_upload(self, f, progress)

    monkeypatch.setattr(s3_transfer.S3Store, "upload", cut_after_first)
    with pytest.raises(ConnectionResetError):
        main(["push", STACK, str(folder), "--offline", "--json"])
    monkeypatch.setattr(s3_transfer.S3Store, "upload", real_upload)
    capsys.readouterr()
    assert main(["push", STACK, str(folder), "--offline", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["skipped"] == ["data/a.bin"] and result["sent"] == ["data/b.bin", "data/c.bin"]


def test_pull_downloads_final_and_logs_and_skips_what_is_here(aws, no_pulumi, tmp_path, capsys):
    bucket = "named-bucket"
    s3 = aws.client("s3")
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="final/model.safetensors", Body=b"weights" * 1000)
    s3.put_object(Bucket=bucket, Key="logs/train.log", Body=b"step 1\n")
    s3.put_object(Bucket=bucket, Key="checkpoints/step-1/x", Body=b"not pulled by default")
    dest = tmp_path / "results"
    argv = ["pull", STACK, "--bucket", bucket, "--dest", str(dest), "--json"]
    assert main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["foundBy"] == "--bucket"
    assert sorted(result["received"]) == ["final/model.safetensors", "logs/train.log"]
    assert (dest / "final" / "model.safetensors").read_bytes() == b"weights" * 1000
    assert not (dest / "checkpoints").exists()
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["received"] == []
    assert main(["pull", STACK, "nothing-here", "--bucket", bucket, "--dest", str(dest)]) == 2
    assert "nothing under nothing-here/" in capsys.readouterr().err


def _fake_pulumi(tmp_path: Path, script: str) -> str:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "pulumi"
    exe.write_text("#!/bin/sh\n" + script)
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return str(bin_dir)


def test_with_the_pulumi_cli_the_bucket_comes_from_the_stack_outputs(aws, monkeypatch, tmp_path, capsys):
    aws.client("s3").create_bucket(Bucket="deployed-bucket")
    monkeypatch.setenv("PATH", _fake_pulumi(tmp_path, """
case "$*" in *"stack output --json --stack aws-prep-7b"*) echo '{"bucket": "deployed-bucket"}';; *) exit 3;; esac
"""))
    (tmp_path / "f.txt").write_text("x")
    assert main(["push", STACK, str(tmp_path / "f.txt"), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["foundBy"] == "pulumi stack output" and result["uri"] == "s3://deployed-bucket/data/"


def test_lookup_failures_and_bad_input_are_one_clear_error(aws, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("PATH", _fake_pulumi(tmp_path, "echo 'error: no stack named aws-prep-7b found' >&2; exit 255\n"))
    (tmp_path / "f.txt").write_text("x")
    assert main(["push", STACK, str(tmp_path / "f.txt")]) == 2
    assert "`pulumi stack output` failed: error: no stack named aws-prep-7b found" in capsys.readouterr().err
    assert main(["push", STACK, str(tmp_path / "f.txt"), "--bucket", "b12", "--to", "../etc"]) == 2
    assert "--to '../etc'" in capsys.readouterr().err
    assert main(["push", STACK, str(tmp_path / "missing"), "--bucket", "b12"]) == 2
    assert "no such file or folder" in capsys.readouterr().err


def test_a_bucket_that_is_not_there_is_one_clear_error(aws, no_pulumi, tmp_path, capsys):
    (tmp_path / "f.txt").write_text("x")
    assert main(["push", STACK, str(tmp_path / "f.txt"), "--offline", "--org", "not-my-org"]) == 2
    err = capsys.readouterr().err
    assert f"bucket {expected_bucket('not-my-org')}:" in err and "NoSuchBucket" in err and "--org" in err


def test_push_never_writes_under_the_stacks_own_checkpoint_prefix(tmp_path) -> None:
    """The prefix a stack file sets (experiment, sweep base, run overrides), not only the default one."""
    import yaml

    from gpulease.cli.push import checkpoint_prefixes

    (tmp_path / "Pulumi.yaml").write_text("name: p\nruntime: python\n")
    (tmp_path / "stacks").mkdir()
    one = tmp_path / "stacks" / "Pulumi.one.yaml"
    one.write_text(yaml.safe_dump({"config": {"gpulease:experiment": {"checkpoints": {"prefix": "runs/ckpt/"}}}}))
    sweep = tmp_path / "stacks" / "Pulumi.sweep.yaml"
    sweep.write_text(yaml.safe_dump({"config": {"gpulease:sweep": {
        "base": {"checkpoints": {"prefix": "sweeps/base"}},
        "runs": [{"name": "a", "overrides": {"checkpoints": {"prefix": "sweeps/a/"}}}]}}}))
    assert checkpoint_prefixes(str(one)) == ("checkpoints/", "runs/ckpt/")
    assert checkpoint_prefixes(str(sweep)) == ("checkpoints/", "sweeps/a/", "sweeps/base/")


def test_push_to_an_endpoint_that_cannot_be_reached_is_one_line_exit_2(aws, no_pulumi, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setattr(s3_transfer, "MAX_ATTEMPTS", 1)
    (tmp_path / "f.txt").write_text("x")
    assert main(["push", STACK, str(tmp_path / "f.txt"), "--offline", "--org", "my-org"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "Could not connect to the endpoint URL" in err
    assert f"bucket {expected_bucket('my-org')}: Could not connect" in err and len(err.strip().splitlines()) == 1
