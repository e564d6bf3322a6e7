"""A secret input is judged and priced by its value but never printed: every report (text, markdown, JSON,
``gpulease cost``) shows ``[secret]`` where the value would be."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from gpulease.cli.main import main
from gpulease.review import redact, report
from gpulease.review.engine import review
from gpulease.review.terminal import print_terminal
from tests.review.test_unknown_compute import TAGS, _write
from tests.review.test_unknown_compute_more import HEAD
from tests.support.clock import FIXED_NOW

SECRETS = {
    "instance-type": "aws.ec2.Instance('i', ami='ami-0123456789abcdef0', tags=tags, metadata_options=MD,\n"
                     "    root_block_device={'encrypted': True}, instance_type=pulumi.Output.secret('g5.48xlarge'))\n",
    "node-group-args": "aws.eks.NodeGroup('ng', cluster_name='c', node_role_arn='arn:aws:iam::123456789012:role/r', subnet_ids=['s'],\n"
                       "    tags=tags, instance_types=pulumi.Output.secret(['g5.48xlarge']),\n"
                       "    scaling_config={'desired_size': 1, 'min_size': 0, 'max_size': 2})\n",
    "pod-node-selector": "k8s.core.v1.Pod('p', spec={'containers': [{'name': 'c', 'image': 'x', 'resources': {'limits': {'nvidia.com/gpu': '1'}}}],\n"
                         "    'node_selector': {'node.kubernetes.io/instance-type': pulumi.Output.secret('g5.48xlarge')}})\n",
}


def _text(reviews) -> str:
    out = io.StringIO()
    print_terminal(reviews, Console(file=out, width=100, color_system=None))
    return out.getvalue()


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_secret_value_is_never_printed(tmp_path: Path, name: str) -> None:
    [r] = review([str(_write(tmp_path, name, HEAD + SECRETS[name]))], now=FIXED_NOW)
    assert "g5.48xlarge" not in json.dumps(report.to_json([r]))
    assert "g5.48xlarge" not in report.markdown([r])


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_secret_value_is_never_printed_in_text(tmp_path: Path, name: str) -> None:
    [r] = review([str(_write(tmp_path, name, HEAD + SECRETS[name]))], now=FIXED_NOW)
    text = _text([r])
    assert "g5.48xlarge" not in text
    if name == "instance-type":  # judged by its value all the same: the on-demand finding names it hidden
        assert "[secret]" in text and r.exit_code == 1


def test_a_secret_instance_type_is_still_priced_and_judged(tmp_path: Path) -> None:
    [r] = review([str(_write(tmp_path, "it", HEAD + SECRETS["instance-type"]))], now=FIXED_NOW)
    doc = report.to_json([r])["stacks"][0]
    assert doc["cost"]["hourlyUsd"] and doc["cost"]["hourlyUsd"] > 10  # a g5.48xlarge's on-demand price
    assert any("[secret]" in v["message"] for v in doc["violations"])
    assert doc["resources"][-1]["inputs"]["instanceType"] == "[secret]"


def test_gpulease_cost_never_prints_a_secret(tmp_path: Path, capsys) -> None:
    directory = _write(tmp_path, "c", HEAD + SECRETS["instance-type"])
    main(["cost", str(directory), "--json"])
    out = capsys.readouterr().out
    assert "g5.48xlarge" not in out and "[secret]" in out
    assert json.loads(out)["data"]["stacks"][0]["hourlyUsd"] > 10
    main(["cost", str(directory)])
    out = capsys.readouterr().out
    assert "g5.48xlarge" not in out and "[secret]" in out


TAG_SECRETS = {
    "owner": ('"gpulease:owner": "li@example.com"', '"gpulease:owner": pulumi.Output.secret("SEKRIT-owner")',
              "SEKRIT-owner"),
    "checkpoint-uri": ('"gpulease:checkpoint-uri": "none"',
                       '"gpulease:checkpoint-uri": pulumi.Output.secret("s3://SEKRIT/ck")', "SEKRIT"),
}


@pytest.mark.parametrize("name", sorted(TAG_SECRETS))
def test_a_secret_tag_value_is_never_printed(tmp_path: Path, name: str) -> None:
    old, new, value = TAG_SECRETS[name]
    tags = TAGS.replace(old, new)
    assert tags != TAGS
    body = HEAD.replace(TAGS, tags) + SECRETS["instance-type"].replace("pulumi.Output.secret('g5.48xlarge')",
                                                                       "'g5.48xlarge'")
    [r] = review([str(_write(tmp_path, name, body))], now=FIXED_NOW)
    for shown in (json.dumps(report.to_json([r])), report.markdown([r]), _text([r])):
        assert value not in shown
        assert "g5.48xlarge" in shown  # what is not secret is still shown


def test_a_secret_nested_in_a_dict_and_numbers() -> None:
    from google.protobuf import struct_pb2
    from pulumi.runtime import rpc

    struct = struct_pb2.Struct()
    struct.update({"a": {"b": [{rpc._special_sig_key: rpc._special_secret_sig,
                                "value": {"k": "nested-secret", "n": 4242, "short": "ab"}}]}, "plain": "open"})
    values = redact.secret_values([struct])
    assert {"nested-secret", "4242"} <= values and "open" not in values and "ab" not in values
    r = redact.Redactor(values)
    assert r.data({"m": "x nested-secret y", "n": 4242, "z": 4243}) == {"m": "x [secret] y", "n": "[secret]",
                                                                         "z": 4243}


def test_the_longest_secret_is_replaced_first() -> None:
    r = redact.Redactor(["p4d", "p4d.24xlarge"])
    assert r.text("on p4d.24xlarge and p4d.") == "on [secret] and [secret]."
    assert redact.Redactor([]).text("p4d.24xlarge") == "p4d.24xlarge"


def test_too_many_secrets_is_not_reviewed() -> None:
    assert redact.too_many({f"s{i:04d}" for i in range(redact.MAX_SECRETS + 1)})
    assert redact.too_many({"x" * (redact.MAX_LENGTH + 1)})
    assert redact.too_many({"abc"}) is None


def test_a_program_past_the_secret_bound_is_not_reviewed(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(redact, "MAX_SECRETS", 0)
    [r] = review([str(_write(tmp_path, "many", HEAD + SECRETS["instance-type"]))], now=FIXED_NOW)
    assert r.exit_code == 2 and "secret inputs hold 1 distinct values" in r.rendering.error
    assert "g5.48xlarge" not in json.dumps(report.to_json([r])) + _text([r])


def test_a_secret_export_is_never_printed(tmp_path: Path) -> None:
    body = "import pulumi\npulumi.export('instanceType', pulumi.Output.secret('SEKRIT-export'))\n" \
           "pulumi.export('nested', {'a': pulumi.Output.secret('SEKRIT-nested')})\npulumi.export('open', 'shown')\n"
    [r] = review([str(_write(tmp_path, "export", body))], now=FIXED_NOW)
    assert r.rendering.outputs == {"instanceType": "[secret]", "nested": "[secret]", "open": "shown"}
    for shown in (json.dumps(report.to_json([r])), report.markdown([r]), _text([r])):
        assert "SEKRIT" not in shown
