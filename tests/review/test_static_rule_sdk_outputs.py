"""Ordinary callbacks of public EKS programs read a property of an SDK output type (the cluster's
``certificate_authority.data`` for a kubeconfig, ``identities[0].oidcs[0].issuer`` for IRSA): the value is the
provider SDK's own output class, built from the engine's answer, and its properties only read it. Such a
program must stay judged (not partial). The name alone is allowed: an object of the program's with a property of
that name, reached by the callback, still makes it one that may register."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpulease.review.engine import review
from tests.review.test_skipped_applies_offline import GPU
from tests.review.test_unknown_compute import _write
from tests.review.test_unknown_compute_more import HEAD
from tests.support.clock import FIXED_NOW

EKS = ("role = aws.iam.Role('r', assume_role_policy='{}', tags=tags)\n"
       "cl = aws.eks.Cluster('c', role_arn=role.arn, vpc_config={'subnet_ids': ['subnet-1']}, tags=tags)\n")
PROGRAMS = {
    "certificate-authority-data": EKS + "pulumi.export('ca', cl.certificate_authority.apply(lambda x: x.data))\n",
    "kubeconfig-json": EKS + "import json\npulumi.export('kc', pulumi.Output.all(cl.endpoint, "
                             "cl.certificate_authority.apply(lambda x: x.data), cl.name).apply(lambda args: json.dumps("
                             "{'apiVersion': 'v1', 'clusters': [{'cluster': {'server': args[0], "
                             "'certificate-authority-data': args[1]}, 'name': 'kubernetes'}]})))\n",
    "oidc-issuer": EKS + "pulumi.export('iss', cl.identities.apply(lambda ids: ids[0].oidcs[0].issuer))\n",
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_reading_an_sdk_output_type_property_stays_judged(tmp_path: Path, name: str) -> None:
    [r] = review([str(_write(tmp_path, name, HEAD + PROGRAMS[name]))], now=FIXED_NOW)
    assert r.rendering.error is None and r.status != "partial" and r.exit_code != 3, r.rendering.error


PROGRAM_OBJECTS = {
    "global-object": "p = P()\nU.apply(lambda t: p.data if t == 'prod' else None)\n",
    "all-known-part": "pulumi.Output.all(P(), U).apply(lambda a: a[0].data if a[1] == 'prod' else None)\n",
}


@pytest.mark.parametrize("name", sorted(PROGRAM_OBJECTS))
def test_a_program_object_with_an_output_type_property_name_may_register(tmp_path: Path, name: str) -> None:
    cls = "class P:\n    @property\n    def data(self):\n        " + GPU + "\n"
    [r] = review([str(_write(tmp_path, name, HEAD + cls + PROGRAM_OBJECTS[name]))], now=FIXED_NOW)
    assert r.exit_code == 3, (r.exit_code, r.status, r.rendering.error)
