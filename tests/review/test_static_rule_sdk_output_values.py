"""A known part an ``Output.all`` hands a callback may be an instance of a provider SDK's ``@pulumi.output_type``
class: a resource's nested output (``cluster.vpc_config``, ``pulumi_aws.eks.outputs.ClusterVpcConfig``, a ``dict``
subclass) or a lookup's result (``aws.get_caller_identity_output()``, ``GetCallerIdentityResult``). Such an object
only holds the engine's answer and each of its properties only reads it (``gpulease/review/sdk_outputs.py``), so a
callback that reads ``a[0].subnet_ids`` or ``a[0].account_id`` off it reaches nothing that registers: it stays
judged, never partial. What such an object holds is read by the same rule, and a class of the program's (a
subclass of an SDK output type) is the program's code: either may register."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpulease.review.engine import review
from tests.review.test_skipped_applies_offline import GPU
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


MK = (f"def mk():\n    {GPU}\n"
      "from pulumi_aws.eks.outputs import ClusterVpcConfig\n")
# an output that resolves to the object itself (an output of a dict is lifted to a plain dict: ``Output.from_input``)
KNOWN = "vo = pulumi.Output.from_input(1).apply(lambda _: v)\n"
MAY_REGISTER = {
    # what the SDK object holds is read: a program function put in it is called by the callback at update
    "program-function-held": MK + "v = ClusterVpcConfig(subnet_ids=mk)\n" + KNOWN
    + "pulumi.export('s', pulumi.Output.all(vo, U).apply(lambda a: a[0].subnet_ids() if a[1] == 'prod' else 0))\n",
    # a program's subclass of an SDK output type runs the program's property
    "program-subclass": MK + "class P(ClusterVpcConfig):\n    @property\n    def subnet_ids(self):\n"
                             "        return mk()\n" + "v = P(subnet_ids=[])\n" + KNOWN
    + "pulumi.export('s', pulumi.Output.all(vo, U).apply(lambda a: a[0].subnet_ids if a[1] == 'prod' else 0))\n",
}


@pytest.mark.parametrize("name", sorted(MAY_REGISTER))
def test_a_program_value_in_or_a_program_subclass_of_an_sdk_output_type_may_register(tmp_path: Path,
                                                                                     name: str) -> None:
    body = HEAD + "aws.s3.Bucket('b', tags=tags)\n" + MAY_REGISTER[name]
    [r] = review([str(_write(tmp_path, name, body))], now=FIXED_NOW)
    assert r.exit_code == 3 and "an apply on a value unknown offline was not run" in r.rendering.error, \
        (r.exit_code, r.rendering.error)
