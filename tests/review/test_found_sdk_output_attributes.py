"""Ordinary callbacks of public EKS programs read a property of an SDK output type (the cluster's
``certificate_authority.data`` for a kubeconfig, ``identities[0].oidcs[0].issuer`` for IRSA): the value is the
provider SDK's own output class, built from the engine's answer, and its properties only read it. Such a
program must stay judged (not partial)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpulease.review.engine import review
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
