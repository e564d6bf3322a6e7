"""A provider SDK's ``*_output`` lookup (``aws.iam.get_policy_document_output``, ``aws.ec2.get_subnets_output``)
and ``pulumi.Output.json_loads`` wrap their result in an apply of the SDK's own: a callback that only builds the
lookup's result object (``GetPolicyDocumentResult(id=pulumi.get(__response__, 'id'), ...)``) or parses JSON, and
registers nothing. When an argument is unknown offline (an OIDC provider's URL in an EKS IRSA trust policy, a
VPC id read from a StackReference) the apply is skipped at preview; the review must not count that SDK callback
as one that may register resources, or every such program is partial (exit 3) for no resource it could miss.

What such a callback closes over is still the program's (``json_loads``'s ``object_hook``), and an SDK function the
program hands to ``apply`` itself is no callback the SDK made: both may register. An ``async def`` callback run
offline returns a coroutine that never runs there; it is closed, so no "never awaited" warning reaches the
reviewer's terminal."""

from __future__ import annotations

import gc
import sys
import warnings
from pathlib import Path

import pytest

from gpulease.review import static_rule
from gpulease.review.engine import review
from gpulease.review.render import render
from tests.review.test_skipped_applies_offline import GPU
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


MK = f"def mk(d):\n    if d.get('gpu'):\n        {GPU}\n    return d\n"
MAY_REGISTER = {
    # json.loads calls the object_hook with each object it decodes: at update, mk registers the GPU
    "json-loads-object-hook": MK + "pulumi.export('s', pulumi.Output.json_loads(U, object_hook=mk))\n",
    # an SDK function the program itself hands to apply: it makes the manifest's resources at update
    "sdk-function-as-the-callback": "import pulumi_kubernetes.yaml.yaml as y\n"
                                    "aws.s3.Bucket('b', tags=tags)\nU.apply(y._parse_yaml_object)\n",
}


@pytest.mark.parametrize("name", sorted(MAY_REGISTER))
def test_what_an_sdk_callback_closes_over_or_an_sdk_function_the_program_applies_may_register(
        tmp_path: Path, name: str) -> None:
    [r] = review([str(_write(tmp_path, name, HEAD + MAY_REGISTER[name]))], now=FIXED_NOW)
    assert r.exit_code == 3 and "an apply on a value unknown offline was not run" in r.rendering.error, \
        (r.exit_code, r.rendering.error)


def test_an_sdk_function_applied_by_a_program_frame_is_not_taken_for_the_sdks_own_callback() -> None:
    import pulumi_kubernetes.yaml.yaml as y

    parse = y._parse_yaml_object
    static_rule.sdk_made(parse, sys._getframe())
    assert static_rule.may_register(parse)


def test_an_async_callback_run_offline_leaves_no_coroutine_unawaited(tmp_path: Path) -> None:
    program = _write(tmp_path, "async", HEAD + "aws.s3.Bucket('b', tags=tags)\n"
                                               "async def later(t):\n    return t\nU.apply(later)\n")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        rendering = render({"aws:region": "us-east-1"}, stack="test", project="async",
                           program_path=program / "__main__.py", now=FIXED_NOW)
        gc.collect()
    assert rendering.resources, rendering.error
    assert not [w for w in seen if "never awaited" in str(w.message)], [str(w.message) for w in seen]
