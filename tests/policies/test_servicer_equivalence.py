"""The pack's servicer (``gpulease plan`` and ``pulumi up``) hands each rule only the types it declares it reads;
the SDK's own servicer hands every rule everything. Every program of the corpus (``test_programs.py``) and of the
review's fixtures (``tests/review/test_corpus.py``) is held to the same verdicts from both; here, the program whose
scheduled scale-up the budget rules missed when they were handed only taggable types and compute forms."""

from __future__ import annotations

from pathlib import Path

from gpulease.review.engine import render_target
from gpulease.review.policy_runner import PolicyRunner
from tests.policies.test_programs import assert_same_verdicts_as_the_sdks_servicer
from tests.support.clock import FIXED_NOW

PROGRAM = Path(__file__).parent / "programs" / "aws-scheduled-scale-up"


def test_a_scheduled_scale_up_reaches_the_budget_and_alert_rules_through_the_packs_servicer():
    rendering = render_target(PROGRAM, PROGRAM / "Pulumi.test.yaml", now=FIXED_NOW)
    assert_same_verdicts_as_the_sdks_servicer(rendering)
    found = {x.policy: x.message for x in PolicyRunner().analyze(rendering, now=FIXED_NOW).violations}
    assert "worst-case cost $17,568.00 of 'sched'" in found["budget-worst-case"]
    assert "exceeds budgetUsd $500.00" in found["budget-worst-case"]
    assert "(autoscaling group of p4d.24xlarge, up to 100)" in found["budget-alert"]
