"""An ``eks.Cluster`` made with ``create_oidc_provider=True`` has an OIDC provider: ``cluster.core.oidc_provider``
is an ``aws.iam.OpenIdConnectProvider`` (pulumi-eks ``nodejs/eks/cluster/cluster.ts``, ``CoreData.oidcProvider``),
and the pulumi-eks IRSA example reads ``cluster.core.oidc_provider.url`` and ``.arn`` to build a service account's
trust policy. The review's offline model of the cluster must answer it, so that the program renders (no
``AttributeError: 'NoneType' object has no attribute 'url'``) and its managed GPU node group is judged."""

from __future__ import annotations

from pathlib import Path

from gpulease.review.engine import review
from tests.review.test_unknown_compute import _write
from tests.review.test_unknown_compute_more import HEAD
from tests.support.clock import FIXED_NOW

PROGRAM = (
    "import json, pulumi_eks as eks\n"
    "cl = eks.Cluster('c', skip_default_node_group=True, create_oidc_provider=True)\n"
    "pulumi.export('oidc_url', cl.core.oidc_provider.url)\n"
    "pulumi.export('oidc_arn', cl.core.oidc_provider.arn)\n"
)


def test_a_cluster_made_with_an_oidc_provider_answers_it(tmp_path: Path) -> None:
    [r] = review([str(_write(tmp_path, "eks-oidc", HEAD + PROGRAM))], now=FIXED_NOW)
    assert "AttributeError" not in (r.rendering.error or ""), r.rendering.error
    assert r.status != "error", (r.exit_code, r.rendering.error)
