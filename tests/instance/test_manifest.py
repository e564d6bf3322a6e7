"""instance/manifest.py: what ran, on what, from which code and data, with which parameters; nothing secret."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from instance import manifest
from tests.support.instance import MetadataServer, MetadataState, fake_nvidia_smi, set_gpus

GH_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
HF_TOKEN = "hf_" + "QwErTyUiOpAsDfGhJkLzXcVbNm123456"
PASSWORD = "s3cr3t-Pa55"


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True,
                          env={"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@example.com", "GIT_COMMITTER_NAME": "a",
                               "GIT_COMMITTER_EMAIL": "a@example.com", "HOME": str(cwd),
                               "PATH": "/usr/bin:/bin"}).stdout.strip()


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Any]:
    data, state = tmp_path / "data", tmp_path / "state"
    code = data / "code"
    code.mkdir(parents=True)
    state.mkdir()
    (code / "train.py").write_text("print('train')\n")
    _git(code, "init", "-q", "-b", "main")
    _git(code, "remote", "add", "origin", f"https://x-access-token:{GH_TOKEN}@github.com/acme/llm.git")
    _git(code, "add", "train.py")
    _git(code, "commit", "-q", "-m", "first")
    (code / "params.json").write_text(json.dumps({"lr": 0.0001, "seed": 42, "wandb_api_key": "abc123def",
                                                  "notes": f"pulled with {HF_TOKEN}"}))
    (code / "params.yaml").write_text(f"lr: 1e-4\nseed: 7\nhub_token: {HF_TOKEN}\ndb_password: {PASSWORD}\n")
    (state / "ready.json").write_text(json.dumps({"ready": True, "checks": {
        "gpu": {"ok": True, "cuda_version": "12.4", "gpus": [{"name": "NVIDIA A10G", "driver_version": "550.127.05"}]},
        "torch": {"ok": True, "version": "2.5.1+cu124"},
        "data": {"ok": True, "sources": [{"uri": "hf://datasets/acme/corpus", "to": "raw/hf", "ok": True,
                                          "bytes": 2048, "digest": "cd" * 32, "files": 3, "seconds": 1.5}]},
    }}))
    (state / "verify.json").write_text(json.dumps({"passed": True, "failed": [], "time": "2026-11-30T10:00:00Z",
                                                   "stepResumed": 20, "gpu": {"peakMemoryMib": 1}}))
    outbox = tmp_path / "bucket"
    outbox.mkdir()
    # The storage CLI stand-in: `aws s3 cp SRC DST ...` copies SRC into the outbox under DST's file name.
    aws = tmp_path / "aws"
    aws.write_text(f'#!/bin/sh\necho "$@" >> {outbox}/calls\ncp "$3" "{outbox}/$(basename "$4")"\n')
    aws.chmod(0o755)
    gpu = tmp_path / "gpu"
    set_gpus(gpu)
    return {"data": data, "state": state, "code": code, "outbox": outbox, "settings": {
        "cloud": "aws", "region": "us-east-1", "stack": "aws-lora-7b", "experiment": "lora-7b", "market": "spot",
        "image_family": "dlami-base-ubuntu22", "max_runtime_hours": 8, "mount_point": str(data),
        "state_dir": str(state), "checkpoint_uri": "s3://ckpt-bucket/lora-7b/",
        "control_uri": "s3://ckpt-bucket/_gpulease/lora-7b/control/",
        "control_upload_command": [str(aws), "s3", "cp", "{src}", "{dst}", "--region", "{region}"],
        "nvidia_smi": str(fake_nvidia_smi(tmp_path / "nvidia-smi", gpu)),
        "metadata_timeout_seconds": 2,
        "data_sources": [  # as components/userdata writes them from the spec's data.sources
            {"uri": f"https://alice:{PASSWORD}@data.example.com/corpus.tar", "to": "raw/corpus", "sha256": "ab" * 32},
            {"uri": "hf://datasets/acme/corpus", "to": "raw/hf", "revision": "9f1c2e7"},
        ],
    }}


def test_the_manifest_records_the_instance_software_code_data_and_params(world: dict[str, Any],
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    state = MetadataState(values={"/latest/meta-data/instance-type": "g5.xlarge",
                                  "/latest/meta-data/ami-id": "ami-0123456789abcdef0"})
    said: list[str] = []
    with MetadataServer(state) as server:
        s = {**world["settings"], "metadata_url": server.url}
        command = f"cd {world['code']} && python train.py --config params.json"
        doc = manifest.write(s, command=command, cwd=str(world["data"]), job="train",
                             params_file="code/params.json", say=said.append)
    assert doc["stack"] == "aws-lora-7b" and doc["experiment"] == "lora-7b" and doc["job"] == "train"
    assert doc["instance"]["id"] == "i-0123456789abcdef0" and doc["instance"]["type"] == "g5.xlarge"
    assert doc["instance"]["imageId"] == "ami-0123456789abcdef0"
    assert doc["instance"]["imageFamily"] == "dlami-base-ubuntu22" and doc["instance"]["market"] == "spot"
    assert doc["software"] == {"nvidiaDriver": "550.127.05", "cuda": "12.4", "torch": "2.5.1+cu124",
                               "gpus": ["NVIDIA A10G"]}
    assert doc["code"]["commit"] == _git(world["code"], "rev-parse", "HEAD")
    assert doc["code"]["branch"] == "main" and doc["code"]["dirty"] is False
    assert doc["code"]["remote"] == "https://<redacted>@github.com/acme/llm.git"
    assert doc["params"]["path"] == str(world["code"] / "params.json")
    assert doc["params"]["content"] == {"lr": 0.0001, "seed": 42, "wandb_api_key": "<redacted>",
                                        "notes": "pulled with <redacted>"}
    assert [src.get("revision") or src.get("sha256") for src in doc["data"]["sources"]] == ["ab" * 32, "9f1c2e7"]
    assert doc["data"]["sources"][0]["uri"] == "https://<redacted>@data.example.com/corpus.tar"
    # What staging put on the disk, as readiness reported it: the digest of the files that landed.
    assert doc["data"]["sources"][1]["staged"] == {"ok": True, "bytes": 2048, "digest": "cd" * 32, "files": 3}
    assert doc["verify"] == {"passed": True, "failed": [], "time": "2026-11-30T10:00:00Z", "stepResumed": 20}
    # Written beside the logs and copied beside the checkpoints.
    local = world["data"] / "logs" / "manifest.json"
    assert json.loads(local.read_text()) == doc
    assert json.loads((world["outbox"] / "manifest.json").read_text()) == doc
    assert "s3://ckpt-bucket/_gpulease/lora-7b/control/manifest.json" in (world["outbox"] / "calls").read_text()
    assert said == [f"run manifest {local}: copied to s3://ckpt-bucket/_gpulease/lora-7b/control/manifest.json"]


def test_nothing_secret_reaches_the_manifest(world: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_TOKEN", HF_TOKEN)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    s = {**world["settings"], "metadata_url": "http://127.0.0.1:9", "metadata_timeout_seconds": 0.2}
    command = (f"cd {world['code']} && HF_TOKEN={HF_TOKEN} python train.py --api-key sk-{'x' * 24} "
               f"--password {PASSWORD} --data https://bob:{PASSWORD}@host/x AKIAIOSFODNN7EXAMPLE")
    doc = manifest.build(s, command=command, cwd=str(world["data"]), job="train", params_file="code/params.yaml")
    text = json.dumps(doc)
    for secret in (GH_TOKEN, HF_TOKEN, PASSWORD, "wJalrXUtnFEMI", "sk-xxxx", "AKIAIOSFODNN7EXAMPLE", "abc123def"):
        assert secret not in text, secret
    # What is not secret stays readable.
    assert "python train.py" in doc["command"] and "lr: 1e-4" in doc["params"]["content"]
    assert "seed: 7" in doc["params"]["content"] and "hub_token: <redacted>" in doc["params"]["content"]


def test_outside_a_git_tree_and_without_a_params_file_those_parts_are_empty(world: dict[str, Any]) -> None:
    s = {**world["settings"], "metadata_url": "http://127.0.0.1:9", "metadata_timeout_seconds": 0.2}
    (world["data"] / "plain").mkdir()
    doc = manifest.build(s, command="python run.py", cwd=str(world["data"] / "plain"), job="ci-1")
    assert doc["code"] is None and doc["params"] is None
    missing = manifest.build(s, command="true", cwd=str(world["data"]), job="j", params_file="/data/none.yaml")
    assert missing["params"] == {"path": "/data/none.yaml", "error": "cannot read it: No such file or directory"}


@pytest.mark.parametrize(("command", "expected"), [
    ("cd /data/code && python t.py", "/data/code"),
    ("cd code; python t.py", "/data/code"),
    ("python t.py", "/data"),
    ("cd 'unbalanced", "/data"),
])
def test_the_code_directory_is_where_the_command_goes(command: str, expected: str) -> None:
    assert manifest.work_dir(command, "/data") == expected


def test_a_manifest_that_cannot_be_written_never_stops_the_job(world: dict[str, Any]) -> None:
    said: list[str] = []
    (world["data"] / "logs").write_text("a file where the logs folder should be")
    s = {**world["settings"], "metadata_url": "http://127.0.0.1:9", "metadata_timeout_seconds": 0.2}
    assert manifest.write(s, command="true", cwd=str(world["data"]), job="j", say=said.append) == {}
    assert said and said[0].startswith("run manifest not written: ")


@pytest.mark.parametrize(("text", "redacted"), [
    ('curl -H "Authorization: Bearer sk_live_51HqLyjWDarjtT1zdp7dc" https://api.example.com',
     'curl -H "Authorization: Bearer <redacted>" https://api.example.com'),
    ("curl -H 'authorization: token ghx_aaaaaaaaaaaa' x", "curl -H 'authorization: token <redacted>' x"),
    ("wget --header=Authorization:Basic dXNlcjpwYXNzd29yZA==", "wget --header=Authorization:Basic <redacted>"),
    ("echo Bearer abcdefghijklmnop", "echo Bearer <redacted>"),
    ("python t.py --token=abc123 --password hunter2", "python t.py --token=<redacted> --password <redacted>"),
    ("psql postgres://user:pa@ss@db.internal:5432/db", "psql postgres://<redacted>@db.internal:5432/db"),
    ("git clone https://x:y@github.com/o/r.git", "git clone https://<redacted>@github.com/o/r.git"),
    ("see https://host/path@v2 for details", "see https://host/path@v2 for details"),
])
def test_redact_removes_authorization_headers_bearer_tokens_and_userinfo_up_to_the_last_at(text: str,
                                                                                           redacted: str) -> None:
    assert manifest.redact(text) == redacted


@pytest.mark.parametrize(("text", "expected"), [
    ("curl -u user:hunter2 https://x", "curl -u user:<redacted> https://x"),
    ("curl --user user:hunter2 https://x", "curl --user user:<redacted> https://x"),
    ("mysql -u root -phunter2 db", "mysql -u root -p<redacted> db"),
    ("docker login -p hunter2 registry", "docker login -p <redacted> registry"),
    ("sshpass -p hunter2 ssh host", "sshpass -p <redacted> ssh host"),
    ("train --db-pass=hunter2", "train --db-pass=<redacted>"),
    ("curl -H 'Cookie: session=abc123' x", "curl -H 'Cookie: <redacted>' x"),
    ("ssh -p 2222 host && python train.py -p 8", "ssh -p 2222 host && python train.py -p 8"),  # ports stay
])
def test_redact_removes_the_credential_options_of_common_commands(text: str, expected: str) -> None:
    assert manifest.redact(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("bearer: abcdefghijklmnop", "bearer: <redacted>"),
    ("Bearer=abcdefghijk", "Bearer=<redacted>"),
    ("pass=hunter2", "pass=<redacted>"),
    ("mysql -u root --pass hunter2", "mysql -u root --pass <redacted>"),
    ("password: x", "password: <redacted>"),
    ("passwd=s3cret", "passwd=<redacted>"),
    ("db_pass=x", "db_pass=<redacted>"),
    ("compass=north bypass=1", "compass=north bypass=1"),
    ("secret\x1b[0m=hunter2", "secret\x1b[0m=<redacted>"),
    ("\x1b[1;31mpassword\x1b[0m: hunter2", "\x1b[1;31mpassword\x1b[0m: <redacted>"),
    ("mysql://root:p@ss/w0rd@db:3306/x", "mysql://<redacted>@db:3306/x"),
    ("postgres://user:pa@ss@host/db", "postgres://<redacted>@host/db"),
    ("pip install git+https://github.com/org/repo@v1.2", "pip install git+https://github.com/org/repo@v1.2"),
    ("wandb login 0123456789abcdef0123456789abcdef01234567", "wandb login <redacted>"),
    ("wandb login --relogin 0123456789abcdef0123456789abcdef01234567", "wandb login --relogin <redacted>"),
    ("glpat-" + "Ab1_" * 5, "<redacted>"),
    ("curl -u sk_live_" + "a1" * 12 + ": https://api.stripe.com", "curl -u <redacted>: https://api.stripe.com"),
    ("key rk_live_" + "a1" * 12, "key <redacted>"),
    ("//registry.npmjs.org/:_authToken npm_" + "a1B2" * 9, "//registry.npmjs.org/:_authToken <redacted>"),
    ("key: AIza" + "Sy" + "A-b_" * 8 + "c", "key: <redacted>"),
    ("ghp_" + "a1" * 18, "<redacted>"), ("gho_" + "a1" * 18, "<redacted>"), ("ghs_" + "a1" * 18, "<redacted>"),
    ("github_pat_" + "a1_" * 10, "<redacted>"),
    ("xoxa-123456789-abcdef", "<redacted>"), ("xoxb-123456789-abcdef", "<redacted>"),
    ("xoxp-123456789-abcdef", "<redacted>"),
    ("hf_" + "a1B2" * 6, "<redacted>"),
])
def test_redact_removes_every_form_of_credential_and_token_shape(text: str, expected: str) -> None:
    assert manifest.redact(text) == expected
    assert manifest.redact_lines(text + "\n") == expected + "\n"


def test_every_token_shape_names_its_source_and_prefixes() -> None:
    for what, prefixes, shape, source in manifest.TOKEN_SHAPES:
        assert prefixes and shape and ("https://" in source), what
        for prefix in prefixes:
            body = {"AKIA": "A1B2" * 4, "ASIA": "A1B2" * 4, "npm_": "a1B2" * 9, "AIza": "a1B2" * 8 + "a1-", "eyJ": "a1B2c3D4e5F.a1B2c3D4e5F.a1B2c3D4e5F"}.get(
                prefix, "a1B2" * 12)
            assert manifest.redact(f"x {prefix}{body} y") == "x <redacted> y", (what, prefix)


KEY = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\nsecretbase64line\n-----END RSA PRIVATE KEY-----\n"


def test_a_private_key_block_goes_whole_across_lines_and_across_the_blocks_of_redact_lines() -> None:
    assert manifest.redact(f"before\n{KEY}after") == "before\n<redacted> (a private key)\nafter"
    # The key starts at the end of one 64 KiB block of lines and ends in the next.
    filler = "x" * 100 + "\n"
    text = filler * (manifest.BLOCK // len(filler)) + KEY + "after\n"
    out = manifest.redact_lines(text)
    assert "MIIE" not in out and "secretbase64line" not in out
    assert out == filler * (manifest.BLOCK // len(filler)) + "<redacted> (a private key)\nafter\n"
    # No END (the log ends inside the block): the rest goes; an END without its BEGIN (a tail that starts inside
    # the block): what comes before it goes.
    assert manifest.redact_lines("a\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n") == \
        "a\n<redacted> (a private key)"
    assert manifest.redact_lines("b3BlbnNzaC1rZXk\n-----END PRIVATE KEY-----\nafter\n") == \
        "<redacted> (a private key)\nafter\n"


def test_a_key_cut_by_the_uploads_tail_leaves_nothing_of_it(tmp_path: Path) -> None:
    from instance import log_upload as lu
    log = tmp_path / "train.log"
    log.write_bytes(b"x" * 100 + b"\n" + KEY.encode() + b"done\n")
    data, skipped = lu.read_tail(str(log), limit=len(KEY) + 3)  # the tail begins inside the key block
    assert skipped and b"END RSA PRIVATE KEY" in data and b"BEGIN" not in data
    out = lu.redacted(data, skipped, str(log)).decode()
    assert "secretbase64line" not in out and "MIIE" not in out
    assert out.endswith("<redacted> (a private key)\ndone\n")


def test_many_key_markers_are_redacted_in_linear_time() -> None:
    import time
    for text in ("-----END PRIVATE KEY-----\n" * 40_000, "-----BEGIN PRIVATE KEY-----\n" * 40_000,
                 "-----BEGIN PRIVATE KEY-----\nx\n-----END PRIVATE KEY-----\n" * 20_000):
        started = time.monotonic()
        out = manifest.redact_lines(text)
        assert time.monotonic() - started < 3 and "PRIVATE KEY-----" not in out


def test_a_userinfo_without_a_password_is_redacted_up_to_its_last_at() -> None:
    # a token pasted as the user name, with an @ in it: none of it before the host survives
    assert manifest.redact("git clone https://tok@en@github.com/x") == "git clone https://<redacted>@github.com/x"
