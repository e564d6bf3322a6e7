"""The spec's ``ciRun`` field: validated like every tag value, and turned into the ci-run tag only when set."""

from __future__ import annotations

import pytest

from components.spec.load import SpecError, load_stack_spec
from gpulease.core import vocabulary as v
from policies.guardrails.taggable import is_taggable
from tests.support.specs import experiment, render_experiment


def test_ci_run_must_be_a_valid_tag_value() -> None:
    with pytest.raises(SpecError) as err:
        load_stack_spec("s", {"gpulease:experiment": experiment(ciRun="run #42 <bad>")})
    [(path, message)] = err.value.problems
    assert path == "gpulease:experiment.ciRun" and "becomes a tag value" in message
    with pytest.raises(SpecError, match="ciRun: is empty"):
        load_stack_spec("s", {"gpulease:experiment": experiment(ciRun="  ")})


def test_no_ci_run_tag_unless_the_stack_is_ephemeral() -> None:
    plain = render_experiment(experiment())
    tagged = render_experiment(experiment(ciRun="octo/repo/actions/runs/1"))
    for rendering, expected in ((plain, None), (tagged, "octo/repo/actions/runs/1")):
        assert rendering.error is None, rendering.error
        taggable = [r for r in rendering.custom_resources if is_taggable(r.type)]
        assert taggable
        assert {(r.inputs.get("tags") or {}).get(v.TAG_CI_RUN) for r in taggable} == {expected}
