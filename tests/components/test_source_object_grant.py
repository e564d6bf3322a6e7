"""A one-object bucket source (a key not ending in ``/``) is copied alone on the instance (``aws s3 cp`` /
``ossutil cp`` without ``-r``: a head and a read of that key), so the instance role reads that key and no other:
not ``key.bak`` beside it, nor ``key-private/...``, which a ``key*`` grant would also match. A prefix source keeps its
list and read grant on ``prefix*``."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from instance import staging
from tests.components.test_workflow import run, settings_of, spec_for

KEY = "alpaca/train.jsonl"
SIBLINGS = [f"{KEY}.bak", f"{KEY}-private/secrets.json", f"{KEY}x"]
SCHEMES = {"aws": "s3", "alicloud": "oss"}


def _policy(cloud: str, uri: str) -> list[dict[str, Any]]:
    r = run(cloud, spec_for(cloud, data={"sources": [{"uri": uri, "to": "/data/raw/alpaca"}]}))
    assert r.error is None, r.error
    if cloud == "aws":
        (policy,) = [p for p in r.of_type("aws:iam/rolePolicy:RolePolicy") if p.name == "exp1-data-sources"]
        return json.loads(policy.inputs["policy"])["Statement"]
    (policy,) = [p for p in r.of_type("alicloud:ram/policy:Policy") if p.name == "exp1-data-sources"]
    return json.loads(policy.inputs["policyDocument"])["Statement"]


def _listed(value: Any) -> list[str]:
    return value if isinstance(value, list) else [value]


def _matches(pattern: str, text: str) -> bool:
    """IAM and RAM resource matching: ``*`` any characters, ``?`` one."""
    return re.fullmatch("".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern), text,
                        re.DOTALL) is not None


def _readable(statements: list[dict[str, Any]], key: str) -> bool:
    """Whether some statement lets the role read (or list the name of) ``alice-datasets/<key>``."""
    for statement in statements:
        for resource in _listed(statement["Resource"]):
            path = resource.split(":::", 1)[1] if resource.startswith("arn:") else resource.split(":", 4)[4]
            if any(a.endswith("GetObject") for a in _listed(statement["Action"])) and _matches(path,
                                                                                              f"alice-datasets/{key}"):
                return True
        condition = statement.get("Condition", {}).get("StringLike", {})
        for prefixes in condition.values():
            if any(_matches(p, key) for p in prefixes):
                return True
    return False


@pytest.mark.parametrize("cloud", ["aws", "alicloud"])
def test_a_one_object_source_grants_that_key_and_no_sibling(cloud: str) -> None:
    statements = _policy(cloud, f"{SCHEMES[cloud]}://alice-datasets/{KEY}")
    assert _readable(statements, KEY), statements
    for sibling in SIBLINGS:
        assert not _readable(statements, sibling), f"{sibling} is granted too: {statements}"


@pytest.mark.parametrize("cloud", ["aws", "alicloud"])
def test_a_prefix_source_still_lists_and_reads_under_its_prefix(cloud: str) -> None:
    statements = _policy(cloud, f"{SCHEMES[cloud]}://alice-datasets/alpaca/")
    assert _readable(statements, KEY) and _readable(statements, "alpaca/sub/part-0.jsonl")
    assert not _readable(statements, "alpaca-private/secrets.json")


@pytest.mark.parametrize("cloud", ["aws", "alicloud"])
def test_the_instance_copies_a_one_object_source_alone_with_the_settings_command(cloud: str, tmp_path: Path) -> None:
    """The grant of the key alone holds because the instance runs the ``object`` command, given that URI and no
    wider one; the ``prefix`` command (a listing) is never run for it."""
    uri = f"{SCHEMES[cloud]}://alice-datasets/{KEY}"
    commands = settings_of(run(cloud, spec_for(cloud, data={"sources": [{"uri": uri, "to": "/data/raw/a"}]})),
                           cloud)["stage_commands"]
    assert not {"-r", "--recursive", "sync"} & set(commands["object"]), commands["object"]

    record = tmp_path / "asked"
    to = tmp_path / "raw"
    settings = {"cloud": "aws", "region": "us-east-1", "mount_point": str(tmp_path),
                "metadata_url": "http://127.0.0.1:9", "data_sources": [{"uri": uri, "to": str(to)}],
                "stage_commands": {"object": ["sh", "-c", f'printf %s "$0" > {record}; printf data > "$1"', "{src}",
                                              "{dst}"],
                                   "prefix": ["sh", "-c", "exit 7"]}}
    check = staging.Stager(settings, lambda _line: None).run()
    assert check["ok"] is True, check
    assert record.read_text() == uri
    assert sorted(p.name for p in to.iterdir() if not p.name.startswith(".")) == ["train.jsonl"]
