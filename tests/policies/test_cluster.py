"""The pack on a cluster: it judges each instance, so every node of a rendered 4-node cluster is checked on its own
(a node the deadline schedule misses, a node that allows IMDSv1, a node with no release time are each named)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from gpulease.review.policy_runner import PolicyRunner
from gpulease.review.render import CapturedResource, Rendering
from tests.support.alicloud import ali_experiment, render_ali
from tests.support.clock import FIXED_NOW
from tests.support.policy import found
from tests.support.specs import experiment, render_experiment

AWS_INSTANCE = "aws:ec2/instance:Instance"
ALI_INSTANCE = "alicloud:ecs/instance:Instance"


@pytest.fixture(scope="module")
def aws4() -> Rendering:
    r = render_experiment(experiment(name="pre", gpu={"instanceType": "p4d.24xlarge"}, nodes=4, budgetUsd=5000))
    assert r.error is None, r.error
    return r


@pytest.fixture(scope="module")
def ali4() -> Rendering:
    r = render_ali(ali_experiment(name="pre", gpu={"instanceType": "ecs.gn8is-4x.16xlarge"}, nodes=4, budgetUsd=5000))
    assert r.error is None, r.error
    return r


def changed(r: Rendering, urn: str, update, drop_dependency: str | None = None) -> Rendering:
    """The rendering with resource ``urn``'s inputs and outputs changed (their wire form rebuilt from them), and
    ``drop_dependency`` (a URN) gone from its property dependencies."""
    def edit(x: CapturedResource) -> CapturedResource:
        if x.urn != urn:
            return x
        inputs, outputs = update(json.loads(json.dumps(x.inputs))), update(json.loads(json.dumps(x.outputs)))
        deps = {k: [d for d in urns if d != drop_dependency] for k, urns in x.property_dependencies.items()}
        return replace(x, inputs=inputs, outputs=outputs, input_struct=None, output_struct=None,
                       property_dependencies=deps)
    return replace(r, resources=[edit(x) for x in r.resources])


def analyze(r: Rendering):
    return PolicyRunner().analyze(r, now=FIXED_NOW)


def test_a_rendered_cluster_passes_the_pack_on_both_clouds(aws4: Rendering, ali4: Rendering) -> None:
    for r in (aws4, ali4):
        assert analyze(r).mandatory == [], [x.detail for x in analyze(r).mandatory]


def test_the_deadline_schedule_must_cover_every_node(aws4: Rendering) -> None:
    # One schedule per node: node 3's schedule pointed at node 2 leaves node 3 without a cloud-side stop.
    schedule = aws4.by_name("pre-node3-deadline")
    node3 = aws4.by_name("pre-node3-instance")
    node2 = aws4.by_name("pre-node2-instance")

    def drop_node3(props: dict) -> dict:
        props["target"]["input"] = json.dumps({"InstanceIds": [node2.id]})
        return props

    hits = found(analyze(changed(aws4, schedule.urn, drop_node3, drop_dependency=node3.urn)), "max-runtime-cloud-stop")
    assert [(level, name) for _, level, name, _ in hits] == [("mandatory", "pre-node3-instance")]


def test_a_node_that_allows_imdsv1_is_named(aws4: Rendering) -> None:
    def optional(props: dict) -> dict:
        props["metadataOptions"] = {"httpTokens": "optional"}
        return props

    hits = found(analyze(changed(aws4, aws4.by_name("pre-node2-efa").urn, optional)), "imdsv2-required")
    assert [name for _, _, name, _ in hits] == ["pre-node2-efa"]


def test_a_node_without_a_release_time_is_named(ali4: Rendering) -> None:
    def no_release(props: dict) -> dict:
        props.pop("autoReleaseTime", None)
        return props

    hits = found(analyze(changed(ali4, ali4.by_name("pre-node1-instance").urn, no_release)), "max-runtime-cloud-stop")
    assert [name for _, _, name, _ in hits] == ["pre-node1-instance"]
    assert "has no autoReleaseTime" in hits[0][3]
