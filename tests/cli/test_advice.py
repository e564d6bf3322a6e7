"""Valid but probably not meant, said as advisories by plan, init and up: spot without a checkpoint hook or
signal, budget e-mails on Alibaba Cloud (nothing sends them there), an example owner left in place."""

from __future__ import annotations

import copy
import json

import pytest

from gpulease.cli.main import main
from gpulease.lifecycle.advice import config_advisories, example_owner
from gpulease.review import stacks

SPOT = ("experiment 'llama7b-lora': spot without checkpoints.hook or checkpoints.signal: on a spot notice the job is "
        "never asked to save, only its last checkpoint is synced; accepted: checkpoints.signal: USR1 with "
        "checkpoints.process: train.py, or a checkpoints.hook")
EMAILS = ("experiment 'llama7b-lora': budgetAlerts.emails is not sent on Alibaba Cloud (the kit makes e-mail budget "
          "alerts on AWS only); the deadline and the budget check still hold; accepted: leave it out")


def _config(name: str, owner: str = "ada@ml-team.io") -> dict:
    config = stacks.load_stack_config(stacks.PROJECT_ROOT / "stacks" / f"Pulumi.{name}.yaml")
    config = copy.deepcopy(config)
    config["gpulease:experiment"]["owner"] = owner
    return config


def test_a_stack_that_means_it_has_no_advisory():
    assert config_advisories("aws-lora-7b", _config("aws-lora-7b")) == []


def test_spot_without_a_hook_or_signal():
    config = _config("aws-lora-7b")
    config["gpulease:experiment"]["checkpoints"].pop("hook")
    assert config_advisories("aws-lora-7b", config) == [SPOT]
    config["gpulease:experiment"]["checkpoints"].update(signal="USR1", process="train.py")
    assert config_advisories("aws-lora-7b", config) == []
    config["gpulease:experiment"]["market"] = "on-demand"
    config["gpulease:experiment"]["checkpoints"] = {"enabled": True}
    assert config_advisories("aws-lora-7b", config) == []


def test_budget_emails_on_alibaba_cloud():
    config = _config("ali-lora-7b")
    config["gpulease:experiment"]["budgetAlerts"] = {"emails": ["ada@ml-team.io"]}
    assert config_advisories("ali-lora-7b", config) == [EMAILS]
    aws = _config("aws-lora-7b")
    aws["gpulease:experiment"]["budgetAlerts"] = {"emails": ["ada@ml-team.io"]}
    assert config_advisories("aws-lora-7b", aws) == []


@pytest.mark.parametrize(("owner", "example"), [
    ("alice@example.com", True), ("bob@EXAMPLE.org", True), ("c@ml.example.net", True), ("d@corp.example", True),
    ("e@x.test", True), ("ada@ml-team.io", False), ("ops@example-corp.com", False), ("x@notexample.com", False)])
def test_an_example_owner(owner, example):
    assert example_owner(owner) is example


def test_plan_says_them_in_every_format(capsys):
    assert main(["plan", "aws-lora-7b"]) == 0  # the example stack's owner is alice@example.com
    text = " ".join(capsys.readouterr().out.split())
    assert ("advisory (stack file): experiment 'llama7b-lora': owner 'alice@example.com' is an example address "
            "(left from an example?)") in text
    assert main(["plan", "aws-lora-7b", "--format", "json"]) == 0
    found = json.loads(capsys.readouterr().out)["data"]["stackFileAdvisories"]
    assert list(found) == ["gpulease/aws-lora-7b"] and "alice@example.com" in found["gpulease/aws-lora-7b"][0]


def test_an_invalid_or_foreign_config_has_none():
    assert config_advisories("x", {"web:replicas": 2}) == []
    assert config_advisories("x", {"gpulease:experiment": {"name": "x"}}) == []
