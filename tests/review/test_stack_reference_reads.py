"""Reads of a value the preview does not have, other than ``is_dry_run()`` and ``Output.future()``, that let a
program decide at ``pulumi up`` to launch a GPU the review never sees: ``await ref.get_output_details(name)``
(the SDK's documented read of a stack output, which awaits ``future()`` itself), ``ref.outputs`` (the referenced
stack's whole output map, which the review does not have) and ``await output.is_known()``. Each makes the review
partial (exit 3), like ``future()`` of an output unknown offline, never pass (exit 0). An output the mocks do
answer (a baking stack's ``bakedImage``) is read as before."""

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
LINES = {
    "get-output-details": "the program awaits the value of an output unknown offline (__main__.py:",
    "outputs-map": "was registered by an apply run offline with an unknown value",
    "output-is-known": "the program awaits whether it knows an output unknown offline (__main__.py:",
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_read_of_a_value_unknown_at_preview_is_partial(tmp_path: Path, name: str) -> None:
    [r] = review([str(_write(tmp_path, name, HEAD + PROGRAMS[name]))], now=FIXED_NOW)
    assert r.exit_code == 3, (r.exit_code, r.status, r.rendering.error)
    assert LINES[name] in (r.rendering.error or ""), r.rendering.error


BAKED = ("import asyncio\nref = pulumi.StackReference('acme/bake/aws-exp')\n"
         "async def build():\n    details = await ref.get_output_details('bakedImage')\n"
         "    aws.ec2.SecurityGroup('sg', tags=tags, description=details.value['id'])\n"
         "asyncio.ensure_future(build())\n")


def test_the_details_of_an_output_the_mocks_answer_are_its_value(tmp_path: Path) -> None:
    [r] = review([str(_write(tmp_path, "baked-details", HEAD.replace(
        "U = pulumi.StackReference('acme/infra/prod').get_output('x')\n", "") + BAKED))], now=FIXED_NOW)
    assert r.rendering.error is None, r.rendering.error
    [sg] = [c for c in r.rendering.resources if c.name == "sg"]
    assert sg.inputs["description"].startswith("ami-"), sg.inputs


def test_the_output_map_a_program_reads_is_unknown_and_the_sdk_still_reads_it(tmp_path: Path) -> None:
    program = ("ref = pulumi.StackReference('acme/bake/aws-exp')\n"
               "aws.ec2.SecurityGroup('sg', tags=tags, description=ref.get_output('bakedImage').apply(lambda i: i['id']))\n"
               "pulumi.export('known', ref.outputs.apply(lambda o: 'yes'))\n")
    [r] = review([str(_write(tmp_path, "outputs-known", HEAD + program))], now=FIXED_NOW)
    [sg] = [c for c in r.rendering.resources if c.name == "sg"]
    assert sg.inputs["description"].startswith("ami-"), sg.inputs
    assert r.rendering.outputs.get("known") != "yes", r.rendering.outputs
