"""Every price a person reads is written one way (gpulease.core.money): scan the text of ``cost``, ``size``,
``plan``, ``down``, ``ls``, the budget policy's message and the ephemeral summary for price tokens, and hold each
to the one grammar, written exactly as ``usd`` / ``usd_per_hour`` / ``usd_per_month`` write its value; and no
bare number with cents in a table where prices are shown."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from gpulease.cli import main
from gpulease.core.money import usd, usd_per_gb, usd_per_hour, usd_per_month
from gpulease.ephemeral.progress import print_summary
from tests.cli.test_down import STACK
from tests.support.inventory import FUTURE, REGION, address, launch, tags, volume
from tests.support.policy import AWS_INSTANCE, aws_gpu, aws_schedule_for, checkpoint_bucket, found, res
from tests.support.policy import analyze as analyze_policy
from tests.support.policy import tags as policy_tags

TOKEN = re.compile(r"\$([0-9][0-9,]*\.[0-9]{2,})(/h|/month|/GB)?")
SHOW = {None: usd, "/h": usd_per_hour, "/month": usd_per_month, "/GB": usd_per_gb}
# A number with cents and no ``$`` in front: a price someone forgot to mark (times are ``s``, sizes ``GB``; the values
# a verdict tells the user to type into the stack file, ``budgetUsd 8.17`` and ``maxRuntimeHours 0.98``, are bare).
BARE = re.compile(r"(?<!budgetUsd )(?<!maxRuntimeHours )(?<![\w$.,/·-])\d[\d,]*\.\d{2,}(?![\w.]|\s*(?:s\b|GB|%|x\b|h\b))")


def bad_prices(text: str) -> list[str]:
    """Each ``$`` that does not start a price written the one way, and each bare price."""
    bad = []
    for at in (i for i, ch in enumerate(text) if ch == "$"):
        m = TOKEN.match(text, at)
        if m is None:
            bad.append(text[at:at + 12])
            continue
        if SHOW[m.group(2)](float(m.group(1).replace(",", ""))) != m.group(0):
            bad.append(m.group(0))
    bad += [m.group(0) for m in BARE.finditer(text)]
    return bad


def test_the_scan_catches_each_old_way() -> None:
    for wrong in ("$0.0379/h", "(est. 60% off $0.8048)", "$0.85/h", "$0.3219/h", "| 0.322 |", "$1234.50", "$1,234.5",
                  "$0.0000/h", "$12.3/month", "$0.09/GB", "${:g}"):
        assert bad_prices(wrong), wrong
    assert bad_prices("$0.322/h $0.0042/h $1,234.57 $12.30/month $0.090/GB, 21.7 GB, 0.25 s, 8 h") == []


@pytest.mark.parametrize("argv", [
    ["cost", "aws-lora-7b"], ["cost", "aws-sweep-lora"], ["cost", "ali-cluster-2x8"], ["cost", "aws-cluster-4x8"],
    ["size", "--params", "7B", "--method", "lora", "--cloud", "aws", "--region", "us-east-1"],
    ["size", "--params", "7B", "--method", "lora", "--cloud", "alicloud", "--region", "cn-hangzhou"],
    ["plan", "aws-lora-7b"], ["plan", "ali-lora-7b"],
])
def test_command_text_writes_prices_one_way(argv, capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "160")
    main(argv)
    out = capsys.readouterr().out
    assert "$" in out
    assert bad_prices(out) == []


def test_down_writes_prices_one_way(deployed, capsys) -> None:
    assert main(["down", STACK]) == 0
    out = capsys.readouterr().out
    assert "/month" in out and bad_prices(out) == []


def test_ls_writes_prices_one_way(aws, capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    ec2 = aws.client("ec2")
    launch(ec2, tags(expires=FUTURE), instance_type="g5.xlarge")
    volume(ec2, tags(retain=True))
    address(ec2, tags())
    assert main(["ls", "--region", REGION]) == 0
    out = capsys.readouterr().out
    assert "/h" in out and bad_prices(out) == []


def test_budget_policy_message_writes_prices_one_way() -> None:
    (hit,) = found(analyze_policy(res(AWS_INSTANCE, "gpu", aws_gpu(tags=policy_tags(budget="1"))),
                                  aws_schedule_for("gpu"), *checkpoint_bucket()), "budget-worst-case")
    assert "$" in hit[3] and bad_prices(hit[3]) == []


def test_ephemeral_summary_writes_prices_one_way() -> None:
    out = io.StringIO()
    print_summary({"stack": "aws-lora-7b-eph", "outcome": "succeeded", "estimatedCostUsd": 0.1234, "hourlyUsd": 0.3219,
                   "worstCaseUsd": 6.44, "teardown": {}}, Console(file=out, width=200, no_color=True))
    text = out.getvalue()
    assert "/h while it existed" in text and bad_prices(text) == []
