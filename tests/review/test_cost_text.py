"""A cost the review cannot complete never reads as a known figure: a partial review's worst case is unknown, and
the hourly cost is unknown (with what is unpriced) while compute has no price, in every format."""

from __future__ import annotations

import json

import pytest

from gpulease.cli import main

TAGS = ('{"gpulease:max-runtime-hours": "4", "gpulease:expires-at": "2026-12-01T12:00:00Z", '
        '"gpulease:experiment": "e"}')


def _program(tmp_path, body: str):
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "Pulumi.yaml").write_text("name: costs\nruntime: python\n")
    (tmp_path / "Pulumi.test.yaml").write_text("config:\n  aws:region: us-east-1\n")
    (tmp_path / "__main__.py").write_text("import pulumi_aws as aws\n\n" + body)
    return tmp_path


def _plan(capsys, directory, fmt: str) -> str:
    main(["plan", str(directory), "--format", fmt])
    out = capsys.readouterr().out
    return out if fmt == "json" else " ".join(out.split())  # the terminal wraps long lines


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
    assert cost["hourlyReason"].startswith("aws instance p9.96xlarge in us-east-1 (not in the catalog)")
    text = _plan(capsys, directory, "text")
    assert "cost: unknown (aws instance p9.96xlarge in us-east-1" in text and "$0.00/h" not in text
    markdown = _plan(capsys, directory, "markdown")
    assert "| unknown |" in markdown
    priced = _program(tmp_path, "aws.ec2.Instance('gpu', instance_type='g5.xlarge', ami='ami-0123456789abcdef0')\n")
    cost = json.loads(_plan(capsys, priced, "json"))["stacks"][0]["cost"]
    assert (cost["hourlyKnown"], cost["hourlyReason"]) == (True, None) and cost["hourlyUsd"] > 0


PRICED = "aws.ec2.Instance('cpu', instance_type='g5.xlarge', ami='ami-0123456789abcdef0', tags=" + TAGS + ")\n"
UNPRICED_FORMS = {
    "type": "aws.ec2.Instance('gpu', instance_type='p9.96xlarge', ami='ami-0123456789abcdef0', tags=" + TAGS + ")\n",
    "database": "aws.rds.Instance('db', instance_class='db.r5.24xlarge', engine='postgres', allocated_storage=20, "
                "tags=" + TAGS + ")\n",
    "notebook": "aws.sagemaker.NotebookInstance('nb', instance_type='ml.g5.xlarge', role_arn='arn:aws:iam::1:role/r', "
                "tags=" + TAGS + ")\n",
    "domain": "aws.sagemaker.Domain('dom', domain_name='d', auth_mode='IAM', vpc_id='vpc-1', subnet_ids=['subnet-1'], "
              "tags=" + TAGS + ", default_user_settings={'execution_role': 'arn:aws:iam::1:role/r', "
              "'jupyter_lab_app_settings': {'default_resource_spec': {'instance_type': 'ml.g5.4xlarge'}}})\n",
    "app": "aws.sagemaker.App('app', app_name='lab', app_type='JupyterLab', domain_id='d-1', user_profile_name='u', "
           "resource_spec={'instance_type': 'ml.g5.2xlarge'}, tags=" + TAGS + ")\n",
    "unbounded group": "aws.autoscaling.Group('asg', max_size=-1, min_size=0, launch_template={'id': 'lt-1', "
                       "'version': '1'}, tags=[{'key': 'gpulease:max-runtime-hours', 'value': '4', "
                       "'propagate_at_launch': True}, {'key': 'gpulease:experiment', 'value': 'e', "
                       "'propagate_at_launch': True}])\n",
}


def test_every_figure_with_an_unpriced_item_is_unknown(tmp_path, capsys):
    # A priced instance next to each unpriced item (one program each, reviewed in one run): the sums of the priced
    # part are lower bounds only, never the figure, for the stack and for its experiment.
    directories = [str(_program(tmp_path / form.replace(" ", "-"), PRICED + body)) for form, body in UNPRICED_FORMS.items()]
    main(["plan", *directories, "--format", "json"])
    stacks = json.loads(capsys.readouterr().out)["stacks"]
    assert len(stacks) == len(UNPRICED_FORMS)
    for form, stack in zip(UNPRICED_FORMS, stacks, strict=True):
        cost = stack["cost"]
        (experiment,) = cost["experiments"]
        for figures in (cost, experiment):
            assert figures["hourlyKnown"] is figures["expectedKnown"] is figures["worstCaseKnown"] is False, form
            assert [figures[k] for k in ("hourlyUsd", "maxHourlyUsd", "expectedUsd", "worstCaseUsd")] == [None] * 4
            assert figures["hourlyReason"] and figures["expectedReason"] and figures["worstCaseReason"], form


def test_an_unknown_figure_reads_unknown_in_every_format(tmp_path, capsys):
    directory = _program(tmp_path, PRICED + UNPRICED_FORMS["type"])
    main(["cost", str(directory), "--json"])
    (stack,) = json.loads(capsys.readouterr().out)["data"]["stacks"]
    assert [stack[k] for k in ("hourlyUsd", "expectedUsd", "worstCaseUsd")] == [None] * 3
    assert [stack["experiments"][0][k] for k in ("hourlyUsd", "expectedUsd")] == [None, None]
    assert "cost: unknown (at least $1.006/h; aws instance p9.96xlarge" in _plan(capsys, directory, "text")
    markdown = _plan(capsys, directory, "markdown")
    assert "| e | unknown | unknown | 4 h | unknown: aws instance p9.96xlarge" in markdown
    assert "Per hour: at least $1.006/h, unknown because aws instance p9.96xlarge" in markdown
    main(["cost", str(directory)])
    terminal = " ".join(capsys.readouterr().out.split())
    assert "per hour: at least $1.006/h, unknown because aws instance p9.96xlarge" in terminal
    assert "expected unknown (the same unpriced items)" in terminal and "expected $" not in terminal


def test_a_retained_item_without_a_price_makes_what_bills_after_destroy_unknown(tmp_path, capsys):
    (tmp_path / "Pulumi.yaml").write_text("name: costs\nruntime: python\n")
    (tmp_path / "Pulumi.test.yaml").write_text("config:\n  aws:region: us-east-1\n")
    (tmp_path / "__main__.py").write_text(
        "import pulumi, pulumi_aws as aws\n" + PRICED.replace("aws.", "aws.", 1)
        + "aws.ebs.Volume('data', availability_zone='us-east-1a', size=100, type='io9', tags=" + TAGS
        + ", opts=pulumi.ResourceOptions(retain_on_delete=True))\n")
    cost = json.loads(_plan(capsys, tmp_path, "json"))["stacks"][0]["cost"]
    assert (cost["afterDestroyKnown"], cost["afterDestroyMonthlyUsd"]) == (False, None)
    assert "data: data disk io9 100 GB is retained and not priced" in cost["afterDestroyReason"]
    assert "after destroy unknown because data: data disk io9" in _plan(capsys, tmp_path, "text")


def test_a_priced_stack_has_every_figure_known(tmp_path, capsys):
    cost = json.loads(_plan(capsys, _program(tmp_path, PRICED), "json"))["stacks"][0]["cost"]
    for figures in (cost, *cost["experiments"]):
        assert (figures["hourlyKnown"], figures["expectedKnown"], figures["afterDestroyKnown"]) == (True, True, True)
        assert figures["expectedUsd"] == pytest.approx(figures["hourlyUsd"] * 4)
