"""The corpus: small foreign Pulumi programs (one per compute form and per accuracy item, on both clouds), each
reviewed through the real offline path (``gpulease plan``'s review engine: render under mocks, the pack through the
analyzer, the cost model) and held to the findings and cost its ``expected.yaml`` lists.

``expected.yaml``::

    findings:            # exactly these, in any order (budget-prices-fresh, the stale-price advisory, left out)
      - [policy, level, resource name or null, "a substring of the message"]
    cost:                # optional
      region: us-east-1
      worst_case_known: true
      worst_case_usd: 123.45        # to the cent
      items: ["a substring of one cost line's item", ...]
      unpriced: ["a substring of one unknown_prices entry", ...]
      reason: ["a substring of worst_case_reason", ...]   # an unknown worst case is null, with its reason
      regions: {"a substring of a line's item": region}   # the region that line was priced in
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gpulease.review import report
from gpulease.review.engine import review
from tests.support.clock import FIXED_NOW

PROGRAMS = Path(__file__).parent / "programs"
IGNORED = {"budget-prices-fresh"}


def programs() -> list[Path]:
    return sorted(p for p in PROGRAMS.iterdir() if (p / "Pulumi.yaml").exists())


def reviewed(program: Path) -> dict:
    reviews = review([str(program)], now=FIXED_NOW)
    (stack,) = report.to_json(reviews)["stacks"]
    assert stack["error"] is None, stack["error"]
    assert_same_verdicts_as_the_sdks_servicer(reviews[0].rendering)
    return stack


def assert_same_verdicts_as_the_sdks_servicer(rendering) -> None:
    """The pack's servicer (``gpulease plan``, ``pulumi up``) hands each rule only the types it declares; the SDK's
    own hands every rule everything: the same verdicts, or a rule misses a type it reads (a scheduled action that
    resizes a group, a schedule that launches instances) and passes at ``pulumi up`` what the SDK blocks."""
    from gpulease.review.policy_runner import PolicyRunner, check_sdk_shape

    def verdicts(result) -> list[tuple]:
        return sorted((x.policy, x.level, x.urn, x.message, x.stage) for x in result.violations)

    routed = PolicyRunner().analyze(rendering, now=FIXED_NOW)
    everything = PolicyRunner(servicer_class=check_sdk_shape(), narrow=False).analyze(rendering, now=FIXED_NOW)
    assert verdicts(routed) == verdicts(everything)
    assert sorted(routed.not_applicable) == sorted(everything.not_applicable)


def unmatched(expected: list[list], violations: list[dict]) -> tuple[list, list]:
    """Pair each expected finding with one actual finding; return what is left on either side."""
    left = [v for v in violations if v["policy"] not in IGNORED]
    missing = []
    for policy, level, name, text in expected:
        hit = next((v for v in left if (v["policy"], v["level"], v["resourceName"]) == (policy, level, name)
                    and text in v["message"]), None)
        if hit is None:
            missing.append([policy, level, name, text])
        else:
            left.remove(hit)
    return missing, [(v["policy"], v["level"], v["resourceName"], v["message"]) for v in left]


def test_the_corpus_covers_every_compute_form_on_both_clouds():
    from gpulease.core.compute import FORMS

    used = "\n".join((p / "__main__.py").read_text() for p in programs())
    # Each form's SDK class appears in at least one program (aws.autoscaling.Group → "autoscaling.Group(").
    missing = []
    for token in FORMS:
        module, cls = token.split(":")[1].split("/")[0], token.rsplit(":", 1)[-1]
        if token.startswith("kubernetes:"):  # a custom resource: its apiVersion and kind, as written
            if f'api_version="{token.split(":")[1]}", kind="{cls}"' not in used:
                missing.append(token)
        elif f"{module}.{cls}(" not in used:
            missing.append(token)
    assert missing == []
    assert {p.name.split("-")[0] for p in programs()} == {"aws", "ali"}


@pytest.mark.parametrize("program", programs(), ids=lambda p: p.name)
def test_program_review_finds_exactly_what_is_expected(program):
    expected = yaml.safe_load((program / "expected.yaml").read_text())
    stack = reviewed(program)
    missing, extra = unmatched(expected.get("findings") or [], stack["violations"])
    assert (missing, extra) == ([], [])
    cost = expected.get("cost")
    if cost:
        actual = stack["cost"]
        assert actual["region"] == cost["region"]
        assert actual["worstCaseKnown"] is cost.get("worst_case_known", True)
        if not actual["worstCaseKnown"]:  # never a number that reads as the bound
            assert actual["worstCaseUsd"] is None and actual["worstCaseReason"]
            assert all(e["worstCaseUsd"] is None for e in actual["experiments"] if not e["worstCaseKnown"])
        else:
            assert actual["worstCaseReason"] is None
        reason = actual["worstCaseReason"] or ""
        assert [r for r in cost.get("reason", []) if r not in reason] == [], reason
        if "worst_case_usd" in cost:
            assert round(actual["worstCaseUsd"], 2) == cost["worst_case_usd"]
        for item, region in (cost.get("regions") or {}).items():
            assert {line["region"] for line in actual["lines"] if item in line["item"]} == {region}
        items = [line["item"] for line in actual["lines"]]
        assert [i for i in cost.get("items", []) if not any(i in item for item in items)] == [], items
        unpriced = actual["unknownPrices"]
        assert [u for u in cost.get("unpriced", []) if not any(u in str(x) for x in unpriced)] == [], unpriced


def test_unpriced_program_reports_unknown_worst_case_and_module_qualified_types(capsys):
    """Never $0.00 for an unpriced instance; the type column keeps an RDS and an EC2 instance apart."""
    from gpulease.cli import main

    main(["plan", str(PROGRAMS / "aws-unpriced"), "--format", "markdown"])
    out = capsys.readouterr().out
    assert ("| 8 h | unknown: aws instance p6e-gb200.36xlarge in eu-west-1 (not in the catalog); not priced: "
            "aws:rds/instance:Instance 'results-db' db.t4g.micro (a resource type the estimate does not price) |") in out
    assert "$0.00" not in out.split("#### Estimated cost")[1].split("After destroy")[0]
    assert "| `rds:Instance` | results-db |" in out
    assert "| `ec2:Instance` | remote |" in out
    stack = reviewed(PROGRAMS / "aws-unpriced")
    root_disks = [x for x in stack["cost"]["lines"] if x["item"] == "root disk gp2 100 GB"]
    # The same disk costs more in eu-west-1 (the explicit provider's region) than in us-east-1 (the stack's).
    assert len(root_disks) == 2 and root_disks[0]["worstCaseUsd"] < root_disks[1]["worstCaseUsd"]
