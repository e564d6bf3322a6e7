"""A provider SDK's ``*_output`` lookup (``aws.iam.get_policy_document_output``, ``aws.ec2.get_subnets_output``)
and ``pulumi.Output.json_loads`` wrap their result in an apply of the SDK's own: a callback that only builds the
lookup's result object (``GetPolicyDocumentResult(id=pulumi.get(__response__, 'id'), ...)``) or parses JSON, and
registers nothing. When an argument is unknown offline (an OIDC provider's URL in an EKS IRSA trust policy, a
VPC id read from a StackReference) the apply is skipped at preview; the review must not count that SDK callback
as one that may register resources, or every such program is partial (exit 3) for no resource it could miss."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpulease.review.engine import review
from tests.review.test_unknown_compute import _write
from tests.review.test_unknown_compute_more import HEAD
from tests.support.clock import FIXED_NOW

EKS = ("role = aws.iam.Role('r', tags=tags, assume_role_policy='{}')\n"
       "cluster = aws.eks.Cluster('c', role_arn=role.arn, tags=tags, vpc_config={'subnet_ids': ['s1', 's2']})\n")
PROGRAMS = {
    # the IRSA trust policy of the EKS examples: the OIDC provider's URL is unknown at preview
    "eks-irsa-trust-policy": EKS
    + "oidc = aws.iam.OpenIdConnectProvider('oidc', client_id_lists=['sts.amazonaws.com'], tags=tags,\n"
      "    thumbprint_lists=['9e99a48a9960b14926bb7f3b02e22da2b0ab7280'], url=cluster.identities[0].oidcs[0].issuer)\n"
      "doc = aws.iam.get_policy_document_output(statements=[{'actions': ['sts:AssumeRoleWithWebIdentity'],\n"
      "    'principals': [{'type': 'Federated', 'identifiers': [oidc.arn]}],\n"
      "    'conditions': [{'test': 'StringEquals', 'variable': oidc.url.apply(lambda u: f\"{u.replace('https://', '')}:sub\"),\n"
      "                    'values': ['system:serviceaccount:kube-system:aws-node']}]}])\n"
      "aws.iam.Role('irsa', assume_role_policy=doc.json, tags=tags)\n",
    # a network stack's VPC read through a StackReference, its subnets looked up
    "stack-reference-subnets-lookup": "infra = pulumi.StackReference('acme/infra/prod')\nvpc_id = infra.get_output('vpcId')\n"
      "subnets = aws.ec2.get_subnets_output(filters=[{'name': 'vpc-id', 'values': [vpc_id]}])\n"
      "aws.ec2.SecurityGroup('sg', vpc_id=vpc_id, tags=tags)\npulumi.export('subnets', subnets.ids)\n",
    "stack-reference-cluster-lookup": "infra = pulumi.StackReference('acme/infra/prod')\n"
      "cl = aws.eks.get_cluster_output(name=infra.get_output('clusterName'))\n"
      "aws.ec2.SecurityGroup('sg', tags=tags)\npulumi.export('endpoint', cl.endpoint)\n",
    "output-json-loads": "aws.ec2.SecurityGroup('sg', tags=tags)\n"
      "pulumi.export('settings', pulumi.Output.json_loads(U))\n",
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_an_sdk_lookup_on_a_value_unknown_offline_is_not_partial(tmp_path: Path, name: str) -> None:
    [r] = review([str(_write(tmp_path, name, HEAD + PROGRAMS[name]))], now=FIXED_NOW)
    assert "an apply on a value unknown offline was not run" not in (r.rendering.error or ""), r.rendering.error
    assert r.status != "partial" and r.exit_code != 3, (r.exit_code, r.rendering.error)
