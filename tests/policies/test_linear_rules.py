"""The pack's cost grows with the stack, not with its square: on a sweep, each resource is converted once per
request whatever the number of rules, each schedule's input is parsed once whatever the number of units, each role's
names are read once, the budget rules share one estimate and each provider is built once. Counted, not timed; the
verdicts are the SDK servicer's (``tests/policies/test_pack.py``), and the memo lives only while a request is
answered."""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path

import pytest
from pulumi_policy import policy as sdk

from gpulease.core import cost
from gpulease.review.policy_runner import PolicyRunner
from gpulease.review.render import Rendering, render
from policies.guardrails import access, common, deadlines, sources

RUNS = 6


@pytest.fixture(scope="module")
def sweep() -> Rendering:
    config = {
        "aws:region": "us-east-1",
        "gpulease:sweep": {
            "base": {"name": "lin", "owner": "ada@example.org", "project": "p", "costCenter": "c", "budgetUsd": 100000,
                     "gpu": {"gpuMemoryGb": 24}, "maxRuntimeHours": 6,
                     "ssh": {"allowedCidrs": ["203.0.113.7/32"], "keyName": "k"}, "dataDisk": {"sizeGb": 100},
                     "checkpoints": {"prefix": "sweeps/lin/"}},
            "runs": [{"name": f"r{i}"} for i in range(RUNS)],
        },
    }
    rendering = render(config, stack="lin", project="gpulease")
    assert rendering.error is None, rendering.error
    return rendering


def counting(monkeypatch: pytest.MonkeyPatch, owner: object, name: str, calls: Counter) -> None:
    original = getattr(owner, name)

    def counted(*args, **kwargs):
        calls[name] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)


def test_a_sweep_is_judged_with_one_conversion_per_resource_and_no_pairwise_work(
        sweep: Rendering, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    runner = PolicyRunner()
    baseline = runner.analyze(sweep)
    calls: Counter = Counter()
    counting(monkeypatch, common, "Registered", calls)
    counting(monkeypatch, deadlines, "_schedule_input", calls)
    counting(monkeypatch, access, "_role_names", calls)
    counting(monkeypatch, cost, "estimate_resources", calls)
    counting(monkeypatch, sdk._PolicyAnalyzerServicer, "_get_provider_resource", calls)
    counting(monkeypatch, sources, "_staged_settings", calls)
    counting(monkeypatch, sdk._PolicyAnalyzerServicer, "_get_enforcement_level", calls)
    result = runner.analyze(sweep)
    assert [v.message for v in result.violations] == [v.message for v in baseline.violations]

    types = Counter(r.type for r in sweep.resources)
    schedules, roles = types["aws:scheduler/schedule:Schedule"], types["aws:iam/role:Role"]
    assert schedules == 2 * RUNS and roles >= RUNS  # each recovering run: its request's cancel and its deadline
    assert calls["_schedule_input"] == schedules  # once each, not once per unit and schedule
    assert calls["_role_names"] <= roles  # once per role trusted by instances, not once per role and holder
    assert calls["estimate_resources"] == 1  # three budget rules, one estimate
    # Each instance's user-data is decoded and parsed once, for both data-source rules that read it.
    assert calls["_staged_settings"] == types["aws:ec2/instance:Instance"] == RUNS
    # The policies' levels are read once per Configure, not once per request and policy.
    assert calls["_get_enforcement_level"] == 0
    # Each stack resource a rule reads becomes a Registered once, whatever the number of rules that read it.
    assert calls["Registered"] <= len(sweep.resources)
    # A provider is built once per request in which it appears (each Analyze is a request of its own).
    analyzed = sum(1 for r in sweep.resources if runner._judged_types(r.type))
    assert calls["_get_provider_resource"] <= analyzed + 5  # the stack request: the sweep's few providers


def test_the_memo_lives_only_while_a_request_is_answered_and_only_on_its_thread() -> None:
    built: list[int] = []

    def build() -> list[int]:
        built.append(1)
        return built

    key = object()
    assert common.memoized("k", (key,), build) is common.memoized("k", (key,), build) and len(built) == 2
    with common.one_request():
        first = common.memoized("k", (key,), build)
        assert common.memoized("k", (key,), build) is first and len(built) == 3
        assert common.memoized_by("v", ("a", 1), lambda: "x") == common.memoized_by("v", ("a", 1), lambda: "y") == "x"
        elsewhere: list[int] = []
        thread = threading.Thread(target=lambda: elsewhere.append(len(common.memoized("k", (key,), build))))
        thread.start()
        thread.join()
        assert elsewhere == [4]  # another thread's request does not see this one's memo
    common.memoized("k", (key,), build)
    assert len(built) == 5
