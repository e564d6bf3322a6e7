"""Secret values are judged as what they are and never printed: a secret envelope that swallows a whole dict, a
secret from secure stack config, and secrets printed outside the redacted report text."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from rich.console import Console

from gpulease.review import redact, report
from gpulease.review.engine import review
from gpulease.review.terminal import print_terminal
from tests.review.test_unknown_compute import TAGS, _write
from tests.support.clock import FIXED_NOW

MD = "MD = {'http_tokens': 'required'}\n"
HEAD = "import pulumi, pulumi_aws as aws\nS = pulumi.Output.secret\n" + MD + TAGS
INSTANCE = ("aws.ec2.Instance('gpu', instance_type='g5.xlarge', ami='ami-0123456789abcdef0', tags={tags},\n"
            "    metadata_options=MD, root_block_device={rbd})\n")


def test_eks_node_group_options_with_one_secret_field_keeps_its_gpu_type(tmp_path: Path) -> None:
    # One secret field makes the SDK send the whole nodeGroupOptions as one secret envelope; the model read the
    # envelope's keys, found no instanceType and built t3.medium nodes: the p4d.24xlarge rules never ran.
    body = ("import pulumi, pulumi_eks as eks\n"
            "eks.Cluster('training', node_group_options=eks.ClusterNodeGroupOptionsArgs(instance_type='p4d.24xlarge',\n"
            "    desired_capacity=2, min_size=1, max_size=4, node_public_key=pulumi.Output.secret('ssh-rsa AAAAkey')))\n")
    [r] = review([str(_write(tmp_path, "eks", body))], now=FIXED_NOW)
    doc = report.to_json([r])["stacks"][0]
    assert any(v["policy"] == "max-runtime" for v in doc["violations"]), doc["violations"]
    assert "t3.medium" not in json.dumps(doc)


def test_a_secret_instance_type_from_secure_config_never_passes(tmp_path: Path) -> None:
    d = _write(tmp_path, "cfgsec", HEAD + "c = pulumi.Config()\n"
               "aws.ec2.Instance('gpu', instance_type=c.require_secret('instanceType'), ami='ami-0123456789abcdef0',\n"
               "    tags=tags, metadata_options=MD, root_block_device={'encrypted': True},\n"
               "    instance_market_options={'market_type': 'spot'})\n")
    (d / "Pulumi.test.yaml").write_text("config:\n  aws:region: us-east-1\n  cfgsec:instanceType:\n"
                                        "    secure: v1:AAAABBBBCCCCDDDD\n")
    [r] = review([str(d)], now=FIXED_NOW)
    assert r.exit_code != 0  # "[secret]" is a placeholder, not an instance type that is known to be no GPU
    assert r.exit_code == 3 and "the secure config 'cfgsec:instanceType'" in (r.rendering.error or ""), \
        r.rendering.error  # unknown at preview: partial, naming the key


def test_a_secure_config_value_read_as_text_says_it_is_secret(tmp_path: Path) -> None:
    d = _write(tmp_path, "cfgtext", HEAD + "c = pulumi.Config()\nt = c.require('instanceType')\n")
    (d / "Pulumi.test.yaml").write_text("config:\n  aws:region: us-east-1\n  cfgtext:instanceType:\n"
                                        "    secure: v1:AAAABBBBCCCCDDDD\n")
    [r] = review([str(d)], now=FIXED_NOW)
    error = r.rendering.error or ""
    assert r.exit_code == 2 and "Missing required" not in error, error
    assert "'cfgtext:instanceType' is a secure: value" in error and "cannot be decrypted offline" in error, error
    assert "__main__.py:" in error, error


def test_a_secret_root_block_device_does_not_crash(tmp_path: Path) -> None:
    body = HEAD + INSTANCE.format(tags="tags", rbd="S({'encrypted': True})")
    [r] = review([str(_write(tmp_path, "rbd", body))], now=FIXED_NOW)  # AttributeError: 'str' has no 'get'
    assert r.exit_code in (0, 1, 3)


def test_one_secret_tag_keeps_the_comment_marker(tmp_path: Path) -> None:
    body = HEAD + INSTANCE.format(tags="{**tags, 'gpulease:owner': S('li@example.com')}", rbd="{'encrypted': True}")
    [r] = review([str(_write(tmp_path, "tag", body))], now=FIXED_NOW)
    text = report.markdown([r])
    assert text.startswith(report.COMMENT_MARKER)  # was "<!-- [secret]-plan -->": --output refuses it next run
    assert "li@example.com" not in text


def test_a_multiline_secret_in_a_partial_line_is_hidden_in_markdown(tmp_path: Path) -> None:
    body = (HEAD + "pw = S('Hunter2\\nSecretPw')\n" + INSTANCE.format(tags="{**tags, 'Name': pw}",
                                                                     rbd="{'encrypted': True}")
            + "def boom(v):\n    raise ValueError('bad password ' + v)\npw.apply(boom)\n")
    [r] = review([str(_write(tmp_path, "nl", body))], now=FIXED_NOW)
    assert "SecretPw" not in report.markdown([r])  # the cell wrote Hunter2<br>SecretPw


def test_a_secret_the_program_raises_is_hidden(tmp_path: Path) -> None:
    body = HEAD + "pw = S('Hunter2SecretPw')\npw.apply(lambda v: (_ for _ in ()).throw(ValueError('bad ' + v)))\n"
    [r] = review([str(_write(tmp_path, "exc", body))], now=FIXED_NOW)
    assert "Hunter2SecretPw" not in json.dumps(report.to_json([r])) + report.markdown([r])


def test_a_secret_equal_to_a_json_key_keeps_the_report_schema(tmp_path: Path) -> None:
    body = HEAD + ("aws.ec2.Instance('gpu', instance_type='g5.xlarge', ami='ami-0123456789abcdef0', tags=tags,\n"
                   "    metadata_options=MD, root_block_device={'encrypted': True}, user_data=S('type'))\n")
    [r] = review([str(_write(tmp_path, "key", body))], now=FIXED_NOW)
    resource = report.to_json([r])["stacks"][0]["resources"][0]
    assert "type" in resource and "[secret]" not in resource  # the key itself was rewritten to "[secret]"


def test_a_secret_the_program_logs_or_prints_is_hidden_on_stderr(tmp_path: Path) -> None:
    body = HEAD + ("pw = S('Hunter2SecretPw')\npw.apply(lambda v: pulumi.log.warn('pw is ' + v))\n"
                   "pw.apply(lambda v: print('printed ' + v))\n")
    # The CLI, as a user runs it: under pytest the program's log records would go to pytest's own handlers.
    done = subprocess.run([sys.executable, "-m", "gpulease", "plan", str(_write(tmp_path, "log", body)), "--format",
                           "json"], capture_output=True, text=True, timeout=300, check=False,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert "pw is [secret]" in done.stderr and "printed [secret]" in done.stderr, done.stderr
    assert "Hunter2SecretPw" not in done.stderr + done.stdout, done.stderr


def test_one_secret_tag_hides_only_that_tag() -> None:
    from google.protobuf import struct_pb2
    from pulumi.runtime import rpc

    struct = struct_pb2.Struct()  # the SDK sends the tags holding one secret as one secret envelope
    struct.update({"tags": {rpc._special_sig_key: rpc._special_secret_sig,
                            "value": {"Name": "Hunter2SecretPw", "team": "research"}}})
    assert redact.secret_values([struct], {"Hunter2SecretPw"}) == set()  # the program made only that one secret
    assert redact.secret_values([struct]) == {"Hunter2SecretPw", "research"}  # none known: the whole is hidden


def test_a_literal_secret_placeholder_in_the_cost_line_is_printed_as_text(tmp_path: Path) -> None:
    body = HEAD + ("aws.ec2.Instance('gpu', instance_type='[secret]', ami='ami-0123456789abcdef0', tags=tags,\n"
                   "    metadata_options=MD, root_block_device={'encrypted': True})\n")
    [r] = review([str(_write(tmp_path, "lit", body))], now=FIXED_NOW)
    out = io.StringIO()
    print_terminal([r], Console(file=out, width=400, color_system=None))
    [cost] = [line for line in out.getvalue().splitlines() if line.startswith("cost:")]
    assert "aws instance [secret] in us-east-1" in cost, cost  # not swallowed as a markup tag


def test_many_long_secrets_build_one_redaction_quickly() -> None:
    values = [f"s{i:03d}|\t\"\\" + "ab|\t\"\\xyz" * 399 for i in range(495)]
    started = time.monotonic()
    hide = redact.Redactor(values)
    assert time.monotonic() - started < 5  # one alternation of every spelling compiled in 15 s or more
    assert hide.text(f"x {values[7]} y {values[300][:50]}") == f"x [secret] y {values[300][:50]}"
