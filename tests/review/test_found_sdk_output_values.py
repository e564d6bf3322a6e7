"""A known part an ``Output.all`` hands a callback may be an instance of a provider SDK's ``@pulumi.output_type``
class: a resource's nested output (``cluster.vpc_config``, ``pulumi_aws.eks.outputs.ClusterVpcConfig``, a ``dict``
subclass) or a lookup's result (``aws.get_caller_identity_output()``, ``GetCallerIdentityResult``). Such an object
only holds the engine's answer and each of its properties only reads it (``gpulease/review/sdk_outputs.py``), so a
callback that reads ``a[0].subnet_ids`` or ``a[0].account_id`` off it reaches nothing that registers: it stays
judged, never partial."""

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
    "nested-resource-output": EKS + "pulumi.export('subnets', pulumi.Output.all(cluster.vpc_config, U)"
                                    ".apply(lambda a: ','.join(a[0].subnet_ids) + a[1]))\n",
    "lookup-result": "me = aws.get_caller_identity_output()\naws.ec2.SecurityGroup('sg', tags=tags)\n"
                     "pulumi.export('role', pulumi.Output.all(me, U)"
                     ".apply(lambda a: f'arn:aws:iam::{a[0].account_id}:role/{a[1]}'))\n",
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_an_sdk_output_value_among_the_known_parts_stays_judged(tmp_path: Path, name: str) -> None:
    [r] = review([str(_write(tmp_path, name, HEAD + PROGRAMS[name]))], now=FIXED_NOW)
    assert r.rendering.error is None and r.exit_code != 3, r.rendering.error
