"""``iam.permissionsBoundary``: every IAM role a stack creates carries the boundary when it is set (single instance,
sweep runs, a cluster's nodes and its deadline role), none when it is not; a malformed ARN or the field on Alibaba
Cloud is one clear refusal."""

from __future__ import annotations

import pytest

from tests.support.alicloud import ali_experiment, render_ali
from tests.support.specs import experiment, render_experiment

BOUNDARY = "arn:aws:iam::123456789012:policy/gpulease-boundary"
ROLE = "aws:iam/role:Role"


@pytest.mark.parametrize("overrides", [
    {},
    {"ssh": {"mode": "ssm"}},
    {"gpu": {"instanceType": "p4d.24xlarge"}, "nodes": 4, "budgetUsd": 5000},
], ids=["single", "ssm", "cluster"])
def test_every_role_carries_the_boundary(overrides: dict) -> None:
    r = render_experiment(experiment(iam={"permissionsBoundary": BOUNDARY}, **overrides))
    assert r.error is None, r.error
    roles = r.of_type(ROLE)
    assert len(roles) >= 2  # the instance role(s) and the deadline role
    assert {x.name: x.inputs.get("permissionsBoundary") for x in roles} == {x.name: BOUNDARY for x in roles}


def test_no_boundary_unless_set() -> None:
    r = render_experiment(experiment())
    assert r.error is None, r.error
    assert all("permissionsBoundary" not in x.inputs for x in r.of_type(ROLE))


@pytest.mark.parametrize("value", ["gpulease-boundary", "arn:aws:iam::123:policy/x", "arn:aws:s3:::bucket"])
def test_a_malformed_boundary_is_refused_naming_the_field(value: str) -> None:
    r = render_experiment(experiment(iam={"permissionsBoundary": value}))
    assert r.error is not None
    text = str(r.error)
    assert "iam.permissionsBoundary" in text and "is not an IAM policy ARN" in text
    assert "arn:aws:iam::123456789012:policy/gpulease-boundary" in text
    assert not r.resources or all(x.type.startswith("pulumi:") for x in r.resources if x.custom)


def test_alibaba_cloud_refuses_the_boundary() -> None:
    r = render_ali(ali_experiment(iam={"permissionsBoundary": BOUNDARY}))
    assert r.error is not None and "iam.permissionsBoundary" in str(r.error)
    assert "RAM roles have no permissions boundary" in str(r.error)
