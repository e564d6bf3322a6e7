"""A cost the review cannot complete never reads as a known figure: a partial review's worst case is unknown, and
the hourly cost is unknown (with what is unpriced) while compute has no price, in every format."""

from __future__ import annotations

import json

from gpulease.cli import main

TAGS = ('{"gpulease:max-runtime-hours": "4", "gpulease:expires-at": "2026-12-01T12:00:00Z", '
        '"gpulease:experiment": "e"}')


def _program(tmp_path, body: str):
    (tmp_path / "Pulumi.yaml").write_text("name: costs\nruntime: python\n")
    (tmp_path / "Pulumi.test.yaml").write_text("config:\n  aws:region: us-east-1\n")
    (tmp_path / "__main__.py").write_text("import pulumi_aws as aws\n\n" + body)
    return tmp_path


def _plan(capsys, directory, fmt: str) -> str:
    main(["plan", str(directory), "--format", fmt])
    return capsys.readouterr().out


def test_a_partial_review_has_an_unknown_worst_case_never_a_known_figure(tmp_path, capsys):
    directory = _program(tmp_path, f"aws.ec2.Instance('gpu', instance_type='g5.xlarge', ami='ami-0123456789abcdef0', "
                                   f"tags={TAGS})\nraise RuntimeError('later')\n")
    cost = json.loads(_plan(capsys, directory, "json"))["stacks"][0]["cost"]
    assert (cost["worstCaseKnown"], cost["worstCaseUsd"]) == (False, None)
    assert cost["worstCaseReason"].startswith("the review is partial: what the program registers after its failure "
                                              "is not priced")
    assert [(e["worstCaseKnown"], e["worstCaseUsd"]) for e in cost["experiments"]] == [(False, None)]
    assert "worst case unknown: the review is partial" in _plan(capsys, directory, "text")


def test_unpriced_compute_makes_the_hourly_cost_unknown_in_every_format(tmp_path, capsys):
    directory = _program(tmp_path, "aws.ec2.Instance('gpu', instance_type='p9.96xlarge', ami='ami-0123456789abcdef0')\n")
    cost = json.loads(_plan(capsys, directory, "json"))["stacks"][0]["cost"]
    assert (cost["hourlyKnown"], cost["hourlyUsd"], cost["maxHourlyUsd"]) == (False, None, None)
    assert cost["hourlyReason"].startswith("unpriced compute: gpu: p9.96xlarge")
    text = _plan(capsys, directory, "text")
    assert "cost: unknown (unpriced compute: gpu: p9.96xlarge" in text and "$0.00/h" not in text
    markdown = _plan(capsys, directory, "markdown")
    assert "| unknown |" in markdown
    priced = _program(tmp_path, "aws.ec2.Instance('gpu', instance_type='g5.xlarge', ami='ami-0123456789abcdef0')\n")
    cost = json.loads(_plan(capsys, priced, "json"))["stacks"][0]["cost"]
    assert (cost["hourlyKnown"], cost["hourlyReason"]) == (True, None) and cost["hourlyUsd"] > 0
