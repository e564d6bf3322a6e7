"""An ``eks.Cluster`` made with ``create_oidc_provider=True`` has an OIDC provider: ``cluster.core.oidc_provider``
is an ``aws.iam.OpenIdConnectProvider`` (pulumi-eks ``nodejs/eks/cluster/cluster.ts``, ``CoreData.oidcProvider``),
and the pulumi-eks IRSA example reads ``cluster.core.oidc_provider.url`` and ``.arn`` to build a service account's
trust policy. The review's offline model of the cluster answers it, so that the program renders (no
``AttributeError: 'NoneType' object has no attribute 'url'``); its URL is the cluster's issuer and its ARN names
that URL, both unknown at preview, so an apply on them is judged as one on a value unknown offline. A lifted
attribute read that fails (a cluster without the provider) names the program's ``file:line``."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpulease.review.engine import review
from tests.review.test_unknown_compute import _write
from tests.review.test_unknown_compute_more import HEAD
from tests.support.clock import FIXED_NOW

CLUSTER = "import json, pulumi_eks as eks\ncl = eks.Cluster('c', skip_default_node_group=True, create_oidc_provider=True)\n"
PROGRAM = CLUSTER + ("pulumi.export('oidc_url', cl.core.oidc_provider.url)\n"
                     "pulumi.export('oidc_arn', cl.core.oidc_provider.arn)\n")
GPU = ("aws.ec2.Instance('gpu', instance_type='p4d.24xlarge', ami='ami-0123456789abcdef0', tags=tags, "
       "metadata_options=MD, root_block_device={'encrypted': True})")


def test_a_cluster_made_with_an_oidc_provider_answers_it(tmp_path: Path) -> None:
    [r] = review([str(_write(tmp_path, "eks-oidc", HEAD + PROGRAM))], now=FIXED_NOW)
    assert "AttributeError" not in (r.rendering.error or ""), r.rendering.error
    assert r.status != "error", (r.exit_code, r.rendering.error)
    [provider] = [c for c in r.rendering.resources if c.type == "aws:iam/openIdConnectProvider:OpenIdConnectProvider"]
    assert provider.name == "c-oidcProvider" and provider.inputs["clientIdLists"] == ["sts.amazonaws.com"]
    assert provider.parent is not None and provider.parent.endswith("eks:index:Cluster::c")


@pytest.mark.parametrize("read", ["cl.core.oidc_provider.arn", "cl.core.oidc_provider.url", "cl.oidc_provider_arn",
                                  "cl.oidc_provider_url"])
def test_the_oidc_providers_url_and_arn_are_unknown_offline(tmp_path: Path, read: str) -> None:
    program = CLUSTER + f"{read}.apply(lambda a: {GPU})\n"
    [r] = review([str(_write(tmp_path, "eks-oidc-apply", HEAD + program))], now=FIXED_NOW)
    assert r.exit_code == 3, (r.exit_code, r.rendering.error)
    assert "registered by an apply run offline with an unknown value" in (r.rendering.error or ""), r.rendering.error


def test_a_failed_lifted_attribute_read_names_the_program_line(tmp_path: Path) -> None:
    program = ("import pulumi_eks as eks\ncl = eks.Cluster('c', skip_default_node_group=True)\n"
               "pulumi.export('oidc_url', cl.core.oidc_provider.url)\n")
    source = HEAD + program
    line = source.splitlines().index("pulumi.export('oidc_url', cl.core.oidc_provider.url)") + 1
    [r] = review([str(_write(tmp_path, "eks-no-oidc", source))], now=FIXED_NOW)
    assert r.exit_code == 3, (r.exit_code, r.rendering.error)
    assert f"__main__.py:{line}: AttributeError: 'NoneType' object has no attribute 'url'" in (r.rendering.error or "")
