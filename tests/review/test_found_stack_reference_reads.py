"""Reads of a value the preview does not have, other than ``is_dry_run()`` and ``Output.future()``, that let a
program decide at ``pulumi up`` to launch a GPU the review never sees: ``await ref.get_output_details(name)``
(the SDK's documented read of a stack output, which awaits ``future()`` itself), ``ref.outputs`` (the referenced
stack's whole output map, answered offline as if it held nothing) and ``await output.is_known()``. Each must make
the review partial (exit 3), like ``future()`` of an output unknown offline, never pass (exit 0)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpulease.review.engine import review
from tests.review.test_unknown_compute import _write
from tests.review.test_unknown_compute_more import HEAD
from tests.support.clock import FIXED_NOW

GPU = ("aws.ec2.Instance('gpu', instance_type=t, ami='ami-0123456789abcdef0', tags=tags, metadata_options=MD,\n"
       "        root_block_device={'encrypted': True})")
REF = "import asyncio\nref = pulumi.StackReference('acme/ml/prod')\naws.ec2.SecurityGroup('sg', tags=tags)\n"
PROGRAMS = {
    "get-output-details": REF + "async def build():\n    details = await ref.get_output_details('gpuType')\n"
                                "    t = details.value\n    if t:\n        " + GPU + "\nasyncio.ensure_future(build())\n",
    "outputs-map": REF + "gpu_type = ref.outputs.apply(lambda o: o.get('gpuType'))\n"
                         "gpu_type.apply(lambda t: " + GPU.replace("\n        ", " ") + " if t else None)\n",
    "output-is-known": REF + "out = ref.get_output('gpuType')\nasync def build():\n    if not await out.is_known():\n"
                             "        return\n    t = 'p4d.24xlarge'\n    " + GPU + "\nasyncio.ensure_future(build())\n",
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_read_of_a_value_unknown_at_preview_is_partial(tmp_path: Path, name: str) -> None:
    [r] = review([str(_write(tmp_path, name, HEAD + PROGRAMS[name]))], now=FIXED_NOW)
    assert r.exit_code == 3, (r.exit_code, r.status, r.rendering.error)
