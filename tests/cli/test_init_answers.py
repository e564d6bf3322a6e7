"""What ``gpulease init`` is told, checked the way the rest of the CLI checks it: numbers in ASCII digits only (the
flag parser's rule, also for an answer typed on a terminal), a refused answer on a terminal asked again (3 tries in
all) but one line and exit 2 from flags; on-demand carries the reason the pack needs; the default key on Alibaba
Cloud is one its ECS imports; a spot stack is written with the checkpoint signal, so it has no spot-without-
checkpoint advisory, and without it gets that advisory at once, the same line ``plan`` gives."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from components.spec.clouds import SPEC_RULES
from gpulease.cli import init as init_cli
from gpulease.cli.main import main
from gpulease.lifecycle import answers
from gpulease.review import stacks
from tests.support.paths import ROOT

FLAGS = ["init", "--name", "llama8b-lora", "--owner", "ada@ml-team.io", "--params", "8B", "--method", "lora",
         "--region", "us-west-2", "--ssh-from", "203.0.113.7/32", "--cloud", "aws", "--hours", "8"]


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _code(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # a flag's own type refuses it while argparse parses
        return int(exc.code or 0)


def _rsa_key() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048).public_key()
    return key.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode() + " ada@laptop"


@pytest.mark.parametrize(("flag", "given"), [("--budget", "８0"), ("--budget", "٣"), ("--budget", "0x10"),
                                             ("--hours", "٣"), ("--hours", "0x10"), ("--budget", "1_000")])
def test_numbers_in_unicode_digits_or_hex_are_refused_with_the_accepted_format(tmp_path, key_file, reviewed, capsys,
                                                                              flag, given):
    out = tmp_path / "Pulumi.llama8b-lora.yaml"
    argv = [*FLAGS, "--public-key", str(key_file), "--budget", "60", "--output", str(out), flag, given]
    assert _code(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"argument {flag}: " in err and "(ASCII digits)" in err and err.isascii()
    assert not out.exists() and reviewed == []


def test_a_model_size_in_unicode_digits_is_refused(tmp_path, key_file, reviewed, capsys):
    argv = [*FLAGS, "--public-key", str(key_file), "--budget", "60", "--output", str(tmp_path / "x.yaml")]
    argv[argv.index("--params") + 1] = "８B"
    assert _code(argv) == 2
    assert capsys.readouterr().err == ("gpulease: --params '\\\\uff18B': not written in ASCII; accepted: a preset (1B "
                                       "3B 7B 8B 13B 14B 32B 34B 70B 405B) or a count such as 7e9 (ASCII digits)\n")


def _asking(monkeypatch: pytest.MonkeyPatch, typed: list[str]) -> list[str]:
    monkeypatch.setattr("sys.stdin", Tty(""))
    given = iter(typed)
    asked: list[str] = []
    monkeypatch.setattr(init_cli, "ASK", lambda q: asked.append(q) or next(given))
    return asked


def test_a_refused_answer_on_a_terminal_is_asked_again(tmp_path, key_file, reviewed, monkeypatch, capsys):
    asked = _asking(monkeypatch, ["８0", "0x10", "60", "", ""])  # budget twice refused, then 60; spot; train.py
    out = tmp_path / "Pulumi.llama8b-lora.yaml"
    assert main([*FLAGS, "--public-key", str(key_file), "--output", str(out)]) == 0
    assert asked[:3] == ["budget in USD: "] * 3
    err = capsys.readouterr().err
    assert "--budget '\\uff180' is not an amount of USD; accepted: a number above 0 and at most 1000000, e.g. 60 " \
           "(ASCII digits); asked again (2 tries left)" in err
    assert "asked again (1 try left)" in err
    assert yaml.safe_load(out.read_text())["config"]["gpulease:experiment"]["budgetUsd"] == 60


def test_three_refused_answers_end_the_command_in_one_line(tmp_path, key_file, reviewed, monkeypatch, capsys):
    asked = _asking(monkeypatch, ["lots", "٣", "-1", "60"])
    out = tmp_path / "Pulumi.llama8b-lora.yaml"
    assert main([*FLAGS, "--public-key", str(key_file), "--output", str(out)]) == 2
    assert asked == ["budget in USD: "] * 3  # bounded: the fourth answer is never asked for
    last = capsys.readouterr().err.splitlines()[-1]
    assert last == ("gpulease: --budget '-1' is not an amount of USD; accepted: a number above 0 and at most 1000000, "
                    "e.g. 60 (ASCII digits) (3 answers refused; nothing was written)")
    assert not out.exists() and reviewed == []


def test_piped_a_bad_answer_is_one_line_and_exit_2(tmp_path, key_file, reviewed, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO("60\n"))  # not a terminal: nothing is read from it
    argv = [*FLAGS, "--public-key", str(key_file), "--budget", "60", "--output", str(tmp_path / "x.yaml")]
    argv[argv.index("--region") + 1] = "us-west2"
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "(did you mean us-west-2?)" in err


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "stacks").mkdir(parents=True)
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(stacks.PROJECT_ROOT / name, root / name)
    return root


def test_on_demand_needs_a_reason_and_the_written_stack_passes_the_pack(tmp_path, key_file, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    out = _project(tmp_path) / "stacks" / "Pulumi.llama8b-lora.yaml"
    base = [*FLAGS, "--public-key", str(key_file), "--budget", "60", "--output", str(out), "--market", "on-demand"]
    assert main(base) == 2
    assert capsys.readouterr().err.startswith("gpulease: --on-demand-reason is missing: why it cannot run on spot")
    assert not out.exists()
    assert main([*base, "--on-demand-reason", "short"]) == 2
    assert capsys.readouterr().err.startswith("gpulease: --on-demand-reason 'short': too short to review (the pack "
                                              "accepts an on-demand GPU only with a reason)")
    assert main([*base, "--on-demand-reason", "interactive debugging of the data loader", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["data"]["review"]["status"] == "pass", doc  # the real review: the pack's on-demand rule holds
    exp = yaml.safe_load(out.read_text())["config"]["gpulease:experiment"]
    assert exp["market"] == "on-demand" and exp["onDemandReason"] == "interactive debugging of the data loader"
    assert "signal" not in exp["checkpoints"]  # no spot notice to answer on-demand
    assert main([*base, "--on-demand-reason", "interactive debugging of the data loader", "--force",
                 "--checkpoint-process", "train.py"]) == 2
    assert "--checkpoint-process and --no-checkpoint-signal are for --market spot" in capsys.readouterr().err


def test_on_demand_reason_is_refused_on_spot(tmp_path, key_file, reviewed, capsys):
    argv = [*FLAGS, "--public-key", str(key_file), "--budget", "60", "--output", str(tmp_path / "x.yaml"),
            "--on-demand-reason", "interactive debugging of the data loader"]
    assert main(argv) == 2
    assert capsys.readouterr().err == ("gpulease: --on-demand-reason is only for --market on-demand; accepted: leave "
                                       "it out on spot\n")


def test_on_a_terminal_declining_spot_asks_why(tmp_path, key_file, reviewed, monkeypatch):
    asked = _asking(monkeypatch, ["on-demand", "too short", "interactive debugging of the data loader"])
    out = tmp_path / "Pulumi.llama8b-lora.yaml"
    assert main([*FLAGS, "--public-key", str(key_file), "--budget", "60", "--output", str(out)]) == 0
    assert asked[0] == "market (spot, on-demand) [spot]: " and asked[1] == asked[2]
    assert asked[1].startswith("why it cannot run on spot")
    exp = yaml.safe_load(out.read_text())["config"]["gpulease:experiment"]
    assert exp["onDemandReason"] == "interactive debugging of the data loader"


def test_the_default_keys_are_types_each_cloud_imports():
    assert answers.DEFAULT_PUBLIC_KEY == {"aws": "~/.ssh/id_ed25519.pub", "alicloud": "~/.ssh/id_rsa.pub"}
    assert "ssh-ed25519" in SPEC_RULES["aws"].key_types and "ssh-rsa" in SPEC_RULES["alicloud"].key_types
    assert "ssh-ed25519" not in SPEC_RULES["alicloud"].key_types


def test_on_alicloud_the_default_key_is_the_rsa_one(tmp_path, reviewed, monkeypatch, capsys):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    (home / ".ssh" / "id_ed25519.pub").write_text(
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA+hBi33bSLRNsgbKP5NSFs+fQAUzBEl3aSwo5F2Lh5+ ada@laptop\n")
    argv = [*FLAGS, "--budget", "200", "--output", str(tmp_path / "Pulumi.llama8b-lora.yaml")]
    argv[argv.index("--region") + 1], argv[argv.index("--cloud") + 1] = "cn-hangzhou", "alicloud"
    assert main(argv) == 2  # only an ed25519 key there: the RSA one is named, and how to make it
    assert capsys.readouterr().err == ("gpulease: --public-key ~/.ssh/id_rsa.pub: no such file; accepted: an OpenSSH "
                                       ".pub file, e.g. ~/.ssh/id_rsa.pub (`ssh-keygen -t rsa -b 4096` makes one), or "
                                       "--key-name, or --no-port\n")
    key = _rsa_key()
    (home / ".ssh" / "id_rsa.pub").write_text(key + "\n")
    assert main(argv) == 0
    ssh = yaml.safe_load((tmp_path / "Pulumi.llama8b-lora.yaml").read_text())["config"]["gpulease:experiment"]["ssh"]
    assert ssh["publicKey"] == key


def test_an_ed25519_key_on_alicloud_is_refused_by_init_naming_the_flag(tmp_path, key_file, reviewed, capsys):
    argv = [*FLAGS, "--budget", "200", "--public-key", str(key_file), "--output", str(tmp_path / "x.yaml")]
    argv[argv.index("--region") + 1], argv[argv.index("--cloud") + 1] = "cn-hangzhou", "alicloud"
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"gpulease: --public-key {key_file}: ssh-ed25519 keys are refused by Alibaba Cloud's "
                          "ImportKeyPair; accepted on alicloud: ssh-rsa") and err.count("\n") == 1
    assert err.endswith("`ssh-keygen -t rsa -b 4096` makes one\n") and not (tmp_path / "x.yaml").exists()


def test_a_spot_stack_is_written_with_the_checkpoint_signal_and_no_advisory(tmp_path, key_file, reviewed, capsys):
    out = tmp_path / "Pulumi.llama8b-lora.yaml"
    assert main([*FLAGS, "--public-key", str(key_file), "--budget", "60", "--output", str(out), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["data"]["advisories"] == []
    ckpt = yaml.safe_load(out.read_text())["config"]["gpulease:experiment"]["checkpoints"]
    assert ckpt["signal"] == "USR1" and ckpt["process"] == "train.py"
    other = tmp_path / "Pulumi.other.yaml"
    argv = [*FLAGS, "--public-key", str(key_file), "--budget", "60", "--output", str(other), "--json",
            "--checkpoint-process", "finetune.py"]
    argv[argv.index("--name") + 1] = "other"
    assert main(argv) == 0
    capsys.readouterr()
    assert yaml.safe_load(other.read_text())["config"]["gpulease:experiment"]["checkpoints"]["process"] == "finetune.py"


def test_a_spot_stack_without_the_signal_gets_plans_advisory_at_once(tmp_path, key_file, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main([*FLAGS, "--public-key", str(key_file), "--budget", "60", "--no-checkpoint-signal", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)["data"]
    [advisory] = found["advisories"]
    assert advisory.startswith("experiment 'llama8b-lora': spot without checkpoints.hook or checkpoints.signal")
    assert found["review"]["status"] == "pass"  # an advisory: the review still passes
    assert main(["plan", "llama8b-lora", "--format", "json"]) == 0
    plan = json.loads(capsys.readouterr().out)["data"]
    assert list(plan["stackFileAdvisories"].values()) == [found["advisories"]]  # the same lines plan gives
    assert main([*FLAGS, "--public-key", str(key_file), "--budget", "60", "--no-checkpoint-signal", "--force",
                 "--no-review"]) == 0
    assert "advisory: experiment 'llama8b-lora': spot without checkpoints.hook" in " ".join(
        capsys.readouterr().out.split())


@pytest.mark.parametrize(("cloud", "hours", "least"), [("aws", "0.0001", "0.25"), ("alicloud", "0.5", "0.75")])
def test_hours_under_the_clouds_minimum_are_refused_before_anything_is_written(tmp_path, cloud, hours, least):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "gpulease", "init", "--cloud", cloud, "--hours", hours, "--name",
                           "short-one", "--params", "8B", "--owner", "a@b.org", "--budget", "60", "--no-port"],
                          cwd=tmp_path, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120,
                          env={"PYTHONPATH": str(ROOT), "HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "COLUMNS": "200"})
    assert done.returncode != 0
    assert f"--hours {hours} is under the {least} h an {cloud} stack runs at least" in done.stderr, done.stderr
    assert not list(tmp_path.rglob("Pulumi.*.yaml"))


def test_hours_has_one_bound_the_spec_s_in_its_help_and_its_check(tmp_path, key_file, reviewed, capsys):
    from components.spec.experiment import ExperimentSpec

    cap = next(m.le for m in ExperimentSpec.model_fields["max_runtime_hours"].metadata if hasattr(m, "le"))
    out = tmp_path / "Pulumi.llama8b-lora.yaml"
    argv = [*FLAGS, "--public-key", str(key_file), "--budget", "60", "--output", str(out), "--hours", f"{cap + 1:g}"]
    assert _code(argv) == 2
    err = capsys.readouterr().err
    assert f"at most {cap:g}," in err and not out.exists() and reviewed == []
    assert _code(["init", "--help"]) == 0
    helped = " ".join(capsys.readouterr().out.split())
    assert f"at most {cap:g} (default 8" in helped and "720" not in helped
