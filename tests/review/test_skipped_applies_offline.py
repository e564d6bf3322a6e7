"""A skipped apply's callback run offline (issue 25): it changes nothing outside the review, it gets the value the
SDK would hand it (``Output.all``: a list or dict of markers), a ``KeyboardInterrupt`` in it is one line at its
``file:line``, a program whose only resource is inside an apply is partial, and an EKS node group launching from a
template the program does not make is partial."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from gpulease.cli.main import main
from gpulease.review import report
from gpulease.review.engine import review
from tests.review.test_unknown_compute import _write
from tests.review.test_unknown_compute_more import HEAD
from tests.support.clock import FIXED_NOW

GPU = ("aws.ec2.Instance('gpu', instance_type='p4d.24xlarge', ami='ami-0123456789abcdef0', tags=tags, "
       "metadata_options=MD, root_block_device={'encrypted': True})")
KNOWN = "aws.s3.Bucket('b', tags=tags)\n"

SIDE_EFFECTS = {
    "write-named-after-value": "U.apply(lambda t: open(f'{t}.txt', 'w').write('x'))\n",
    "pathlib-write": "import pathlib\nU.apply(lambda t: pathlib.Path('out.txt').write_text(str(t)))\n",
    "os-open-create": "import os\nU.apply(lambda t: os.close(os.open('made.txt', os.O_WRONLY | os.O_CREAT)))\n",
    "remove": "import os\nU.apply(lambda t: os.remove('keep.txt'))\n",
    "rename": "import os\nU.apply(lambda t: os.rename('keep.txt', 'moved.txt'))\n",
    "mkdir": "import os\nU.apply(lambda t: os.mkdir('made'))\n",
    "subprocess": "import subprocess\nU.apply(lambda t: subprocess.run(['touch', 'ran.txt']))\n",
    "os-system": "import os\nU.apply(lambda t: os.system('touch ran.txt'))\n",
    # scheduled by the callback, run later on the event loop (asyncio copies the callback's context)
    "call-soon": "import asyncio\nU.apply(lambda t: asyncio.get_event_loop().call_soon(lambda: open('later.txt', 'w')))\n",
    "task": ("import asyncio\nasync def w():\n    open('task.txt', 'w').close()\n"
             "U.apply(lambda t: asyncio.ensure_future(w()))\n"),
}


@pytest.mark.parametrize("name", sorted(SIDE_EFFECTS))
def test_a_callback_run_offline_changes_no_file(tmp_path: Path, name: str) -> None:
    d = _write(tmp_path, name, HEAD + KNOWN + SIDE_EFFECTS[name])
    (d / "keep.txt").write_text("kept")
    before = sorted(p.name for p in d.iterdir())
    [r] = review([str(d)], now=FIXED_NOW)
    assert sorted(p.name for p in d.iterdir()) == before
    assert (d / "keep.txt").read_text() == "kept"
    # open, os, pathlib, subprocess, asyncio are not on the static rule's allow-list: it may register (fails closed).
    assert "an apply on a value unknown offline was not run" in str(r.rendering.error), r.rendering.error


def test_a_callback_run_offline_connects_nowhere(tmp_path: Path) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        server.settimeout(0.5)
        port = server.getsockname()[1]
        body = f"import socket\nU.apply(lambda t: socket.create_connection(('127.0.0.1', {port})).send(b'x'))\n"
        review([str(_write(tmp_path, "connect", HEAD + KNOWN + body))], now=FIXED_NOW)
        with pytest.raises(TimeoutError):
            server.accept()


def test_a_refused_callback_that_may_register_is_partial(tmp_path: Path) -> None:
    body = f"def cb(t):\n    open(f'{{t}}.txt', 'w').write('x')\n    {GPU}\nU.apply(cb)\n"
    d = _write(tmp_path, "refused", HEAD + KNOWN + body)
    [r] = review([str(d)], now=FIXED_NOW)
    assert not list(d.glob("*-*.txt"))
    assert r.exit_code == 3 and "an apply on a value unknown offline was not run (at __main__.py:" in r.rendering.error


def test_the_reviews_own_writes_are_not_refused(tmp_path: Path) -> None:
    # A callback registers a resource (the mocks answer it) and the CLI writes its report afterwards.
    d = _write(tmp_path, "own-writes", HEAD + f"U.apply(lambda t: {GPU})\n")
    out = tmp_path / "report.json"
    assert main(["plan", str(d), "--format", "json", "--output", str(out)]) == 3
    [stack] = json.loads(out.read_text())["stacks"]
    assert [r["name"] for r in stack["resources"]] == ["gpu"]


ALL_SHAPES = {
    "list-of-markers": f"pulumi.Output.all(U, U).apply(lambda a: {GPU} if isinstance(a, list) and len(a) == 2 else None)\n",
    "known-part-kept": f"pulumi.Output.all('k', U).apply(lambda a: {GPU} if a[0] == 'k' and a[1] != 'k' else None)\n",
    "dict-of-markers": f"pulumi.Output.all(a=U, b='k').apply(lambda d: {GPU} if d['b'] == 'k' and 'a' in d else None)\n",
    "nested-all": f"pulumi.Output.all(pulumi.Output.all(U), 'k').apply(lambda a: {GPU} if isinstance(a[0], list) else None)\n",
}


@pytest.mark.parametrize("name", sorted(ALL_SHAPES))
def test_output_all_hands_the_callback_the_sdks_shape(tmp_path: Path, name: str) -> None:
    [r] = review([str(_write(tmp_path, name, HEAD + ALL_SHAPES[name]))], now=FIXED_NOW)
    assert "resource aws:ec2/instance:Instance 'gpu' was registered by an apply run offline" in str(r.rendering.error)
    assert [x.name for x in r.rendering.resources] == ["gpu"]


@pytest.mark.parametrize("raised", ["KeyboardInterrupt", "SystemExit(4)"])
@pytest.mark.parametrize("other", ["", KNOWN])
def test_an_interrupt_in_a_callback_is_one_line_at_its_line(tmp_path: Path, raised: str, other: str) -> None:
    body = other + f"def cb(t):\n    raise {raised}\nU.apply(cb)\n"
    [r] = review([str(_write(tmp_path, "interrupt", HEAD + body))], now=FIXED_NOW)
    line = HEAD.count("\n") + other.count("\n") + 2
    assert r.rendering.error.startswith(f"__main__.py:{line}: {raised.split('(')[0]}"), r.rendering.error
    assert "\n" not in r.rendering.error
    # A program fault: partial when anything was registered, not reviewed when nothing was.
    assert r.exit_code == (3 if other else 2)


@pytest.mark.parametrize("body", [
    f"def cb(env):\n    if env == 'prod':\n        {GPU}\nU.apply(cb)\n",
    "import pulumi_aws\nU.apply(lambda t: pulumi_aws.ec2.Instance('gpu', instance_type=t['type']))\n",
])
def test_a_program_whose_only_resource_is_in_an_apply_is_partial(tmp_path: Path, body: str) -> None:
    [r] = review([str(_write(tmp_path, "only-apply", HEAD + body))], now=FIXED_NOW)
    assert (r.exit_code, r.status) == (3, "partial"), r.rendering.error
    assert report.to_json([r])["stacks"][0]["partial"] is True


NODE_GROUP = ("aws.eks.NodeGroup('ng', cluster_name='c', node_role_arn='arn:aws:iam::123456789012:role/r',\n"
              "    subnet_ids=['s'], tags=tags, launch_template={REF, 'version': '1'},\n"
              "    scaling_config={'desired_size': 1, 'min_size': 0, 'max_size': 2})\n")
TEMPLATE = ("aws.ec2.LaunchTemplate('lt', name='gpu-lt', tags=tags, metadata_options=MD, instance_type='p4d.24xlarge',\n"
            "    block_device_mappings=[{'device_name': '/dev/xvda', 'ebs': {'encrypted': 'true'}}])\n")


@pytest.mark.parametrize("ref", ["'id': 'lt-0123456789abcdef0'", "'name': 'made-elsewhere'"])
def test_a_node_group_on_a_template_made_elsewhere_is_partial(tmp_path: Path, ref: str) -> None:
    body = TEMPLATE + NODE_GROUP.replace("REF", ref)
    [r] = review([str(_write(tmp_path, "ng-elsewhere", HEAD + body))], now=FIXED_NOW)
    assert r.exit_code == 3, r.rendering.error
    assert r.rendering.error.startswith(f"__main__.py:{HEAD.count(chr(10)) + 3}: GPU compute may be here: "
                                        "aws:eks/nodeGroup:NodeGroup 'ng' sets no instance types")


@pytest.mark.parametrize("order", ["template-first", "template-after"])
def test_a_node_group_on_the_programs_template_is_judged(tmp_path: Path, order: str) -> None:
    ng = NODE_GROUP.replace("REF", "'name': 'gpu-lt'")
    body = TEMPLATE + ng if order == "template-first" else ng + TEMPLATE
    [r] = review([str(_write(tmp_path, order, HEAD + body))], now=FIXED_NOW)
    assert "is none of the program's" not in str(r.rendering.error)
    assert r.status != "partial"
