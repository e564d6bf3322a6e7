"""``gpulease init``: a stack file from flags or a terminal's answers, the GPU that fits the model and method, a
comment on every field, valid by construction (read back through the spec), never written over without --force,
reviewed at once; and the ``pulumi new`` template: its files make a project and stack that review clean."""

from __future__ import annotations

import io
import json
import os
import shutil
from pathlib import Path

import pytest
import yaml

from components.spec.load import load_stack_spec
from gpulease.cli import init as init_cli
from gpulease.cli.main import main
from gpulease.lifecycle import verdict
from gpulease.review import stacks
from gpulease.review.engine import review

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA+hBi33bSLRNsgbKP5NSFs+fQAUzBEl3aSwo5F2Lh5+ ada@laptop"
TEMPLATE = stacks.PROJECT_ROOT / "templates" / "gpulease-experiment"


@pytest.fixture
def key_file(tmp_path: Path) -> Path:
    path = tmp_path / "id_ed25519.pub"
    path.write_text(KEY + "\n")
    return path


@pytest.fixture
def reviewed(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Path, str]]:
    """The review stubbed (a PASS); what it was asked to review."""
    calls: list[tuple[Path, str]] = []

    def fake(path: Path, stack: str) -> verdict.Verdict:
        calls.append((path, stack))
        return verdict.Verdict(stack=stack, status="pass", hourly_usd=0.8823, worst_case="$15.24", budget_usd=60.0)

    monkeypatch.setattr(verdict, "REVIEW", fake)
    return calls


def _exit_code(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # a flag's own type refuses it while argparse parses
        return int(exc.code or 0)


def _flags(out: Path, key_file: Path, *extra: str) -> list[str]:
    return ["init", "--name", "llama8b-lora", "--owner", "ada@example.org", "--params", "8B", "--method", "lora",
            "--region", "us-west-2", "--ssh-from", "203.0.113.7/32", "--public-key", str(key_file), "--budget", "60",
            "--source", "hf://meta-llama/Llama-3.1-8B", "--source", "s3://my-data/sets/alpaca/:/data/sets/alpaca",
            "--output", str(out), *extra]


def test_init_from_flags_writes_a_commented_valid_stack_file_and_reviews_it(tmp_path, key_file, reviewed, capsys):
    out = tmp_path / "Pulumi.llama8b-lora.yaml"
    assert main([*_flags(out, key_file), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is True and doc["errors"] == []
    assert doc["data"]["instanceType"] == "g6e.xlarge" and doc["data"]["gpu"] == "1 x L40S 48 GB"
    assert doc["data"]["review"]["status"] == "pass" and reviewed == [(out, "llama8b-lora")]
    text = out.read_text()
    config = yaml.safe_load(text)["config"]
    exp = config["gpulease:experiment"]
    assert config["aws:region"] == "us-west-2"
    assert exp["gpu"] == {"fit": {"params": "8B", "method": "lora"}}
    assert exp["ssh"] == {"mode": "ssh", "allowedCidrs": ["203.0.113.7/32"], "publicKey": KEY}
    assert exp["data"]["sources"] == [{"uri": "hf://meta-llama/Llama-3.1-8B", "to": "/data/models/Llama-3.1-8B"},
                                      {"uri": "s3://my-data/sets/alpaca/", "to": "/data/sets/alpaca"}]
    assert exp["budgetUsd"] == 60 and exp["maxRuntimeHours"] == 8 and exp["market"] == "spot"
    # Every field line carries its comment; the GPU line names what it resolves to today.
    fields = [line for line in text.splitlines()[5:] if line.strip() and not line.strip().startswith(("-", "publicKey"))]
    assert all(" # " in line for line in fields), [line for line in fields if " # " not in line]
    assert "(today: g6e.xlarge, the cheapest type that holds it in us-west-2)" in text
    spec = load_stack_spec("llama8b-lora", {k: v for k, v in config.items() if k.startswith("gpulease:")})
    assert spec.base.gpu.fit is not None and spec.base.ssh.allowed_cidrs == ["203.0.113.7/32"]


def test_init_no_port_mode_per_cloud_and_the_full_method(tmp_path, reviewed, capsys):
    out = tmp_path / "Pulumi.ali.yaml"
    assert main(["init", "--name", "ali", "--owner", "ada@example.org", "--params", "8B", "--method", "full",
                 "--cloud", "alicloud", "--region", "cn-hangzhou", "--no-port", "--budget", "200", "--output",
                 str(out)]) == 0
    exp = yaml.safe_load(out.read_text())["config"]["gpulease:experiment"]
    assert exp["ssh"] == {"mode": "cloud-assistant"} and exp["cloud"] == "alicloud"
    assert exp["gpu"]["fit"] == {"params": "8B", "method": "full"}
    # Wrapped between words at the reader's width (a long temporary path pushes the rest onto the next line).
    assert "8B full on alicloud cn-hangzhou -> ecs.gn8is-4x.16xlarge (4 x L20 48 GB" in " ".join(
        capsys.readouterr().out.split())


def test_init_never_writes_over_a_file_without_force(tmp_path, key_file, reviewed, capsys):
    out = tmp_path / "Pulumi.llama8b-lora.yaml"
    out.write_text("config: {}\n")
    assert main(_flags(out, key_file)) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"gpulease: {out}: exists already; accepted: another --name, or --force to replace it"
    assert out.read_text() == "config: {}\n" and reviewed == []
    assert main([*_flags(out, key_file), "--force"]) == 0
    assert "gpulease:experiment" in out.read_text()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary file left


@pytest.mark.parametrize(("change", "message"), [
    (["--region", "us-west2"], "--region 'us-west2': not a region of aws the catalog prices (did you mean us-west-2?)"),
    (["--ssh-from", "203.0.113.7/33"], "--ssh-from '203.0.113.7/33': not a CIDR"),
    (["--method", "lorra"], "--method 'lorra':"),
    (["--budget", "-5"], "--budget: '-5' is not an amount of USD; accepted: a number above 0 and at most 1000000, "
                         "e.g. 60 (ASCII digits)"),
    (["--name", "Llama_8B"], "--name 'Llama_8B': not a stack name"),
    (["--cloud", "alicoud"], "--cloud 'alicoud': unknown cloud (did you mean alicloud?)"),
    (["--source", "my-data/x"], "--source 'my-data/x': not a URI"),
    (["--source", "hf://org/repo:/etc/x"], "the folder '/etc/x' is not on the data disk"),
])
def test_init_bad_answers_are_one_line_exit_2_and_write_nothing(tmp_path, key_file, reviewed, capsys, change, message):
    out = tmp_path / "Pulumi.llama8b-lora.yaml"
    argv = _flags(out, key_file)
    flag = change[0]
    if flag in argv and flag not in ("--source", "--ssh-from"):
        argv[argv.index(flag) + 1] = change[1]
    else:
        argv += change
    if flag == "--ssh-from":
        argv[argv.index("--ssh-from") + 1] = change[1]
    assert _exit_code(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "Traceback" not in err
    assert not out.exists() and reviewed == []


def test_init_validates_through_the_spec_before_writing(tmp_path, reviewed, capsys):
    bad_key = tmp_path / "bad.pub"
    bad_key.write_text("ssh-ed25519 not-base64!!! ada@laptop\n")
    out = tmp_path / "Pulumi.llama8b-lora.yaml"
    assert main(_flags(out, bad_key)) == 2
    err = capsys.readouterr().err
    assert f"in stack 'llama8b-lora' ({out}): gpulease:experiment.ssh.publicKey: the base64 part" in err
    assert err.count("\n") == 1
    assert not out.exists() and list(tmp_path.iterdir()) == [bad_key] and reviewed == []


def test_init_without_a_terminal_names_the_missing_answer(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert main(["init", "--params", "8B", "--output", str(tmp_path / "Pulumi.x.yaml"), "--json"]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is False and doc["data"] is None
    assert doc["errors"] == [{"code": "bad-input", "message": "--owner is missing: your e-mail (stdin is not a "
                                                               "terminal, so nothing is asked)"}]


def test_init_asks_on_a_terminal(tmp_path, key_file, monkeypatch, reviewed, capsys):
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr("sys.stdin", Tty(""))
    answers = iter(["", "8B", "qlora", "us-west-2", "", "ada@example.org", "45", "12", "", "", "198.51.100.9/32"])
    asked: list[str] = []
    monkeypatch.setattr(init_cli, "ASK", lambda q: asked.append(q) or next(answers))
    out = tmp_path / "Pulumi.exp-8b-qlora.yaml"
    assert main(["init", "--public-key", str(key_file), "--output", str(out)]) == 0
    assert asked[0] == "cloud (aws, alicloud) [aws]: " and asked[4] == "stack name [exp-8b-qlora]: "
    assert asked[7] == "hours until the hard deadline (maxRuntimeHours) [8]: "
    assert asked[8] == "market (spot, on-demand) [spot]: " and asked[9].endswith("[train.py]: ")
    exp = yaml.safe_load(out.read_text())["config"]["gpulease:experiment"]
    assert exp["name"] == "exp-8b-qlora" and exp["budgetUsd"] == 45 and exp["gpu"]["fit"]["method"] == "qlora"
    assert exp["ssh"]["allowedCidrs"] == ["198.51.100.9/32"]
    assert exp["market"] == "spot" and exp["checkpoints"]["signal"] == "USR1"
    assert exp["maxRuntimeHours"] == 12  # the answer, not the default 8


def _project(tmp_path: Path) -> Path:
    """A project like this one (its program), with an empty stacks folder."""
    root = tmp_path / "proj"
    (root / "stacks").mkdir(parents=True)
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(stacks.PROJECT_ROOT / name, root / name)
    return root


def test_init_review_is_the_plan_review_pass_and_fail(tmp_path, key_file, capsys):
    root = _project(tmp_path)
    out = root / "stacks" / "Pulumi.llama8b-lora.yaml"
    assert main(_flags(out, key_file)) == 0
    text = capsys.readouterr().out
    assert "review: PASS" in text and "worst case $15.24 of a $60.00 budget" in text
    tight = root / "stacks" / "Pulumi.tight.yaml"
    argv = _flags(tight, key_file)
    argv[argv.index("--name") + 1] = "tight"
    argv[argv.index("--budget") + 1] = "5"
    assert main(argv) == 1  # written and valid, but the review refuses the worst case
    text = capsys.readouterr().out
    assert "review: FAIL" in text and "mandatory budget-" in text and tight.is_file()


def _pulumi_new(template: Path, into: Path, project: str, stack: str, answers: dict[str, str]) -> None:
    """What `pulumi new <template>` lays down: the files with ${PROJECT} / ${DESCRIPTION} replaced, the template
    section taken out of Pulumi.yaml, and the stack file with each prompt's answer (or its default)."""
    shutil.copytree(template, into)
    for path in into.iterdir():
        if path.is_file():
            path.write_text(path.read_text().replace("${PROJECT}", project).replace("${DESCRIPTION}", "an experiment"))
    meta = yaml.safe_load((into / "Pulumi.yaml").read_text())
    prompts = meta.pop("template")["config"]
    (into / "Pulumi.yaml").write_text(yaml.safe_dump(meta))
    values = {key: answers.get(key, spec.get("default")) for key, spec in prompts.items()}
    (into / f"Pulumi.{stack}.yaml").write_text(yaml.safe_dump({"config": {k: v for k, v in values.items() if v}}))


def test_the_pulumi_new_template_makes_a_project_and_stack_that_review_clean(tmp_path):
    meta = yaml.safe_load((TEMPLATE / "Pulumi.yaml").read_text())
    assert meta["name"] == "${PROJECT}" and meta["runtime"]["name"] == "python"
    prompts = meta["template"]["config"]
    assert {"aws:region", "gpulease-new:owner", "gpulease-new:params", "gpulease-new:method",
            "gpulease-new:sshFrom", "gpulease-new:budgetUsd"} <= set(prompts)
    project = tmp_path / "myexp"
    _pulumi_new(TEMPLATE, project, "myexp", "dev", {"gpulease-new:owner": "ada@example.org",
                                                    "gpulease-new:sshFrom": "203.0.113.7/32",
                                                    "gpulease-new:publicKey": KEY})
    [found] = review([str(project)])
    assert found.status == "pass", (found.rendering.error, found.policy and found.policy.mandatory)
    types = {r.type for r in found.rendering.resources}
    assert "aws:ec2/instance:Instance" in types and "aws:ebs/volume:Volume" in types
    instance = next(r for r in found.rendering.resources if r.type == "aws:ec2/instance:Instance")
    assert instance.inputs["instanceType"] == "g6e.xlarge"


def test_the_template_refuses_a_bad_prompt_answer_with_the_spec_s_line(tmp_path):
    project = tmp_path / "bad"
    _pulumi_new(TEMPLATE, project, "bad", "dev", {"gpulease-new:owner": "ada@example.org",
                                                  "gpulease-new:budgetUsd": "lots"})
    [found] = review([str(project)])
    assert found.status == "error" and "budgetUsd" in (found.rendering.error or "")


def test_init_refuses_a_folder_that_is_another_program_s_project(tmp_path, key_file, reviewed, capsys):
    (tmp_path / "Pulumi.yaml").write_text("name: webshop\nruntime: nodejs\ndescription: not gpulease\n")
    out = tmp_path / "Pulumi.llama8b-lora.yaml"
    assert main(_flags(out, key_file)) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and not out.exists() and reviewed == []
    assert captured.err == (f"gpulease: {out}: not written; {tmp_path / 'Pulumi.yaml'} is the Pulumi project 'webshop' "
                            "(runtime nodejs), not a gpulease program: a stack file there would configure that "
                            "program; accepted: a new folder (mkdir llama8b-lora && cd llama8b-lora), a gpulease "
                            "project, or --output FILE elsewhere (--force never writes into another project)\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Pulumi.yaml", "id_ed25519.pub"]


def test_init_after_a_review_error_does_not_say_next_up(tmp_path, key_file, monkeypatch, capsys):
    monkeypatch.setattr(verdict, "REVIEW", lambda path, stack: verdict.Verdict(stack=stack, status="error",
                                                                               error="the program failed"))
    monkeypatch.chdir(tmp_path)  # where a bare name finds the file written
    assert main(_flags(tmp_path / "Pulumi.llama8b-lora.yaml", key_file)) == 1
    out = capsys.readouterr().out
    assert "gpulease up" not in out
    assert out.splitlines()[-1] == "next: gpulease plan llama8b-lora shows what the review found; fix that first"


# ``init --public-key`` naming something that is not a regular file says what it is (never opened: a FIFO would
# block, /dev/zero never ends), one line, exit 2, nothing written.
@pytest.mark.parametrize(("make", "what"), [
    (lambda tmp: Path(os.devnull), "a device"),
    (lambda tmp: tmp, "a folder"),
    (lambda tmp: (os.mkfifo(tmp / "key.pub"), tmp / "key.pub")[1], "a named pipe (FIFO)"),
    (lambda tmp: ((tmp / "link.pub").symlink_to("/dev/zero"), tmp / "link.pub")[1], "a device"),
])
def test_a_public_key_that_is_not_a_regular_file_is_named_for_what_it_is(tmp_path, reviewed, capsys,
                                                                         make, what) -> None:
    key = make(tmp_path)
    out = tmp_path / "Pulumi.llama8b-lora.yaml"
    assert main(_flags(out, key)) == 2
    assert capsys.readouterr().err == (f"gpulease: --public-key {key}: is {what}, not a regular file; accepted: an "
                                       "OpenSSH .pub file, e.g. ~/.ssh/id_ed25519.pub (`ssh-keygen -t ed25519` makes "
                                       "one), or --key-name, or --no-port\n")
    assert not out.exists()
