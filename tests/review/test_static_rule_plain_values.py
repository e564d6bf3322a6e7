"""docs/policies.md and ``gpulease/review/static_rule.py`` count plain data as harmless up to 100 items for each
``tuple``, ``list`` or ``dict`` and allow an ``import`` in a callback of a module on the allow-list. A callback that
reads a 60-entry lookup table (a region-to-AMI map) or does ``from json import dumps`` reaches nothing but plain
data and allowed helpers: it stays judged, never partial. A 101-entry table, and ``from m import name`` of a name
off the allow-list (or of a module off it), may register."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpulease.review.engine import review
from tests.review.test_unknown_compute import _write
from tests.review.test_unknown_compute_more import HEAD
from tests.support.clock import FIXED_NOW

PROGRAMS = {
    "dict-of-100-entries": "AMIS = {f'region-{i}': f'ami-{i:017d}' for i in range(100)}\n"
                           "pulumi.export('ami', U.apply(lambda r: AMIS.get(r, 'ami-00000000000000000')))\n",
    "dict-of-60-entries": "AMIS = {f'region-{i}': f'ami-{i:017d}' for i in range(60)}\n"
                          "pulumi.export('ami', U.apply(lambda r: AMIS.get(r, 'ami-00000000000000000')))\n",
    "from-allowed-module-import": "def doc(v):\n    from json import dumps\n    return dumps({'name': v})\n"
                                  "pulumi.export('doc', U.apply(doc))\n",
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_callback_reaching_only_plain_data_and_allowed_helpers_stays_judged(tmp_path: Path, name: str) -> None:
    body = HEAD + "aws.ec2.SecurityGroup('sg', tags=tags)\n" + PROGRAMS[name]
    [r] = review([str(_write(tmp_path, name, body))], now=FIXED_NOW)
    assert r.rendering.error is None and r.exit_code != 3, r.rendering.error


MAY_REGISTER = {
    # past the bound the table is not read: a program function among its entries would not be seen
    "dict-of-101-entries": "AMIS = {f'region-{i}': f'ami-{i:017d}' for i in range(101)}\n"
                           "pulumi.export('ami', U.apply(lambda r: AMIS.get(r, 'ami-00000000000000000')))\n",
    # a name of an allowed module that is no harmless value (a class), also when only an inner function uses it
    "from-allowed-module-import-of-a-class": "def doc(v):\n    from string import Template\n"
                                             "    return (lambda: str(Template(v)))()\n"
                                             "pulumi.export('doc', U.apply(doc))\n",
    "from-allowed-module-import-of-an-internal": "def doc(v):\n    from json import JSONDecoder\n"
                                                 "    return JSONDecoder().decode(v)\npulumi.export('doc', U.apply(doc))\n",
    "from-other-module-import": "def doc(v):\n    from subprocess import run\n"
                                "    return run(['echo', v])\npulumi.export('doc', U.apply(doc))\n",
}


@pytest.mark.parametrize("name", sorted(MAY_REGISTER))
def test_past_the_bound_or_off_the_allow_list_a_callback_may_register(tmp_path: Path, name: str) -> None:
    body = HEAD + "aws.ec2.SecurityGroup('sg', tags=tags)\n" + MAY_REGISTER[name]
    [r] = review([str(_write(tmp_path, name, body))], now=FIXED_NOW)
    assert r.exit_code == 3 and "an apply on a value unknown offline was not run" in r.rendering.error, \
        (r.exit_code, r.rendering.error)


def test_a_relative_import_is_the_programs_own_module(tmp_path: Path) -> None:
    """``from .json import dumps`` in a package of the program imports the program's ``json``, not the allowed one."""
    body = HEAD + "aws.ec2.SecurityGroup('sg', tags=tags)\nfrom lib.doc import doc\npulumi.export('doc', U.apply(doc))\n"
    program = _write(tmp_path, "relative", body)
    (program / "lib").mkdir()
    (program / "lib" / "__init__.py").write_text("")
    (program / "lib" / "json.py").write_text(
        "import pulumi, pulumi_aws as aws\ndef dumps(v):\n    if v == 'prod':\n"
        "        aws.ec2.Instance('gpu', instance_type='p4d.24xlarge', ami='ami-0123456789abcdef0')\n    return v\n")
    (program / "lib" / "doc.py").write_text("def doc(v):\n    from .json import dumps\n    return dumps(v)\n")
    [r] = review([str(program)], now=FIXED_NOW)
    assert r.exit_code == 3 and "an apply on a value unknown offline was not run" in r.rendering.error, \
        (r.exit_code, r.rendering.error)
