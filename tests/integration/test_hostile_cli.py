"""CLI mistakes: each is one line on stderr with exit code 2 (bad input), never a traceback."""

from __future__ import annotations

import json

import pytest

from gpulease.cli import main

NAN_PRICE = "regions:\n  - cloud: aws\n    region: us-east-1\n    blockStorageGbMonth: {gp3: .nan}\n"
NEGATIVE_PRICE = "regions:\n  - cloud: aws\n    region: us-east-1\n    objectStorageGbMonth: -0.5\n"
EMPTY_PRICE = "regions:\n  - cloud: aws\n    region: us-east-1\n    blockStorageGbMonth: {gp3: }\n"
NAN_INSTANCE_PRICE = "instances:\n  - cloud: aws\n    type: g5.xlarge\n    prices: {us-east-1: .nan}\n"


def _one_line_error(capsys, code: int) -> str:
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert err.startswith("gpulease: ") and err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize(("where", "phrase"), [("missing/plan.md", "does not exist"), (".", "is a folder")])
def test_plan_output_that_cannot_be_written_is_refused_before_any_review(tmp_path, capsys, monkeypatch, where, phrase):
    def no_review(*args, **kwargs):
        raise AssertionError("the stacks were rendered before the --output check")

    monkeypatch.setattr("gpulease.cli.plan.review", no_review)
    err = _one_line_error(capsys, main(["plan", "aws-lora-7b", "--output", str(tmp_path / where)]))
    assert "--output" in err and phrase in err


def test_policy_config_that_is_binary_is_refused_naming_the_file(tmp_path, capsys):
    config = tmp_path / "policy.json"
    config.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe")
    err = _one_line_error(capsys, main(["plan", "aws-lora-7b", "--policy-config", str(config)]))
    assert f"{config}:1: is not UTF-8 text" in err


@pytest.mark.parametrize("content", ['{"all": []}', '{"all": "advisory", "all": "disabled"}', '{"x": NaN}'])
def test_policy_config_of_the_wrong_shape_is_refused(tmp_path, capsys, content):
    config = tmp_path / "policy.json"
    config.write_text(content)
    err = _one_line_error(capsys, main(["plan", "aws-lora-7b", "--policy-config", str(config)]))
    assert "policy config" in err


@pytest.mark.parametrize(
    ("content", "phrase"),
    [
        (NAN_PRICE, "blockStorageGbMonth.gp3: NaN is a number; accepted: a finite number"),
        (NEGATIVE_PRICE, "objectStorageGbMonth: -0.5 is out of range; accepted: a number greater than or equal to 0"),
        (EMPTY_PRICE, "blockStorageGbMonth.gp3: is empty (null); accepted: a number"),
        (NAN_INSTANCE_PRICE, "prices.us-east-1: NaN is a number; accepted: a finite number"),
    ],
)
@pytest.mark.parametrize("command", [["cost", "aws-lora-7b"], ["size", "--params", "7B"]])
def test_catalog_overrides_with_bad_prices_are_refused(tmp_path, capsys, command, content, phrase):
    override = tmp_path / "prices.yaml"
    override.write_text(content)
    err = _one_line_error(capsys, main([*command, "--catalog", str(override)]))
    assert str(override) in err and phrase in err and "$nan" not in err and "Input should" not in err


@pytest.mark.parametrize("command", [["cost", "aws-lora-7b"], ["size", "--params", "7B"]])
def test_a_binary_catalog_override_is_refused(tmp_path, capsys, command):
    override = tmp_path / "prices.yaml"
    override.write_bytes(bytes(range(256)))
    err = _one_line_error(capsys, main([*command, "--catalog", str(override)]))
    assert f"{override}:2: is not UTF-8 text (byte 0x80)" in err  # the first line ends at byte 10


@pytest.mark.parametrize("ending", ["import sys\nsys.exit(0)\n", "raise SystemExit('bye')\n"])
def test_a_program_that_exits_during_render_is_a_partial_review(tmp_path, capsys, ending):
    project = tmp_path / "exits"
    project.mkdir()
    (project / "Pulumi.yaml").write_text("name: exits\nruntime: python\n")
    (project / "Pulumi.dev.yaml").write_text("config: {}\n")
    (project / "__main__.py").write_text(
        "import pulumi_aws as aws\n"
        "aws.ec2.SecurityGroup('early', description='registered before the exit')\n" + ending
    )
    code = main(["plan", str(project), "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    (stack,) = report["stacks"]
    # What it registered before the exit is judged; the review is partial, and exit 3 says so (never a pass).
    assert code == 3 and stack["status"] == "partial" and stack["partial"] is True
    assert [r["name"] for r in stack["resources"]] == ["early"]
    assert any(v["policy"] == "budget-tags" and v["resourceName"] == "early" for v in stack["violations"])
    assert "the program called sys.exit(" in stack["error"] and "before it finished" in stack["error"]


def test_an_unknown_stack_is_one_line(capsys):
    err = _one_line_error(capsys, main(["plan", "no-such-stack"]))
    assert "no stack 'no-such-stack'" in err and "known stacks: " in err


def test_a_spec_error_is_one_line_on_the_cli(capsys):
    argv = ["ephemeral", "up", "--base-stack", "aws-lora-7b", "--stack-name", "ci-1-abc1234", "--set", "budgetUsd=-1",
            "--set", "ssh.user=root;sh"]
    err = _one_line_error(capsys, main(argv))
    assert "gpulease:experiment.budgetUsd: -1 is out of range; accepted: a number greater than 0" in err
    assert "gpulease:experiment.ssh.user: 'root;sh' is not a user name" in err


# --- numbers that overflow, names that are empty, values the SDKs refuse, missing credentials ------------------


def _exit_code(argv: list[str]) -> int:
    """``main``'s code, or argparse's for a usage mistake (it exits: ``SystemExit``)."""
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


def test_a_policy_config_number_that_overflows_is_refused_naming_it(tmp_path, capsys):
    config = tmp_path / "policy.json"
    config.write_text('{"max-runtime": {"enforcementLevel": "mandatory", "maxHours": 1e999}}')
    err = _one_line_error(capsys, main(["plan", "aws-lora-7b", "--policy-config", str(config)]))
    assert f"policy config {config}: max-runtime.maxHours: inf is not a finite number" in err


@pytest.mark.parametrize("value", ["1e300", "inf", "0", "-1", "nan", "86401"])
def test_a_plan_timeout_out_of_range_is_refused(capsys, value):
    code = _exit_code(["plan", "aws-lora-7b", "--timeout", value])
    _out, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert f"argument --timeout: {value!r} is not a number of seconds above 0 and at most 86400" in err


@pytest.mark.parametrize("name", ["", "  "])
def test_an_empty_stack_name_is_an_error_not_every_stack(capsys, monkeypatch, name):
    monkeypatch.setattr("gpulease.cli.plan.review", lambda *a, **k: pytest.fail("a review ran"))
    code = _exit_code(["plan", name])  # refused by the parser: a usage mistake
    _out, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert "argument stacks: an empty stack name" in err


@pytest.fixture
def no_aws_credentials(monkeypatch, tmp_path):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                 "AWS_DEFAULT_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN",
                 "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "f.txt").write_text("x\n")
    return folder


@pytest.mark.parametrize(
    ("env", "extra", "phrase"),
    [
        ({}, [], "no AWS credentials found"),
        ({"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE"}, [], "Partial credentials found in env"),
        ({"AWS_PROFILE": "nope"}, [], "The config profile (nope) could not be found"),
        ({}, ["--profile", "nope"], "The config profile (nope) could not be found"),
        ({}, ["--json"], "no AWS credentials found"),
    ],
    ids=["none", "partial", "AWS_PROFILE", "--profile", "json"],
)
def test_push_without_credentials_is_one_line(no_aws_credentials, monkeypatch, capsys, env, extra, phrase):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    code = main(["push", "aws-lora-7b", str(no_aws_credentials), "--bucket", "my-bucket", *extra])
    _out, err = capsys.readouterr()
    assert code == 2 and err.startswith("gpulease: ") and err.count("\n") == 1 and "Traceback" not in err, err
    assert phrase in err


def test_a_bucket_name_the_sdk_would_refuse_is_refused_first(no_aws_credentials, capsys):
    code = _exit_code(["push", "aws-lora-7b", str(no_aws_credentials), "--bucket", "Bad_Bucket;id"])
    _out, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1 and "'Bad_Bucket;id' is not a bucket name" in err


@pytest.mark.parametrize(
    ("to", "phrase"),
    [
        ("checkpoints/", "checkpoints/ holds the stack's checkpoints"),
        ("checkpoints/run2", "checkpoints/ holds the stack's checkpoints"),
        ("checkpoints/_gpulease/", "_gpulease/ is the instance's control area"),
        ("data/_gpulease/x", "_gpulease/ is the instance's control area"),
        ("/etc/", "an absolute path"),
        ("data/../../x", "accepted: a folder in the bucket"),
        ("data/\x1b[2J", "holds U+001B (ESC)"),
    ],
)
def test_push_to_a_reserved_or_outside_folder_is_refused_before_any_lookup(no_aws_credentials, monkeypatch, capsys,
                                                                           to, phrase):
    monkeypatch.setattr("gpulease.cli.push.located", lambda args: pytest.fail("the bucket was looked up"))
    err = _one_line_error(capsys, main(["push", "aws-lora-7b", str(no_aws_credentials), "--to", to]))
    assert phrase in err


@pytest.mark.parametrize("org", ["../x", "a/b", "", "x" * 101])
def test_an_org_that_is_not_a_name_is_refused(capsys, org):
    code = _exit_code(["pull", "aws-lora-7b", "--offline", "--org", org])
    _out, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1 and "not an organization name" in err


@pytest.mark.parametrize("command", [["ls", "--cloud", "alicloud"], ["reap", "--cloud", "alicloud"],
                                     ["push", "ali-lora-7b", "PATH", "--bucket", "my-bucket"]])
def test_alibaba_without_credentials_is_one_line_even_when_the_sdk_logs(monkeypatch, tmp_path, capsys, command):
    import logging
    import sys

    from alibabacloud_credentials.exceptions import CredentialException

    from gpulease.inventory.alicloud_clients import AlicloudClients
    from tests.support.alicloud_inventory import offline_credentials

    offline_credentials(monkeypatch, keys=False)
    # The SDK's providers log each failure with a traceback, through a handler of their own on this logger.
    sdk_log = logging.getLogger("credentials")
    handler = logging.StreamHandler(sys.stderr)
    monkeypatch.setattr(sdk_log, "handlers", [handler])

    def failing(self):
        try:
            raise CredentialException("Failed to get RAM session credentials from ECS metadata service.")
        except CredentialException as exc:
            sdk_log.error("Refresh credentials failed", exc_info=True)
            raise exc

    monkeypatch.setattr(AlicloudClients, "credential", lambda self: type("C", (), {"get_credential": failing})())
    (tmp_path / "f").write_text("x")
    argv = [str(tmp_path / "f") if a == "PATH" else a for a in command]
    code = main([*argv, "--region", "cn-hangzhou"] if command[0] != "push" else argv)
    _out, err = capsys.readouterr()
    assert code == 2 and err.startswith("gpulease: ") and err.count("\n") == 1 and "Traceback" not in err, err
    assert "Alibaba Cloud credentials" in err
