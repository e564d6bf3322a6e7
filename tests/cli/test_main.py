"""Each command imports only what it needs, when it runs: ``gpulease plan`` of an AWS stack loads neither the other
cloud's SDK nor boto3 (no cloud call) nor rich (JSON output) nor jsonschema (no policy config); ``size`` and
``schema`` load no Pulumi at all. Measured in a fresh process, since the test session has imported everything."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support.paths import ROOT

PROBE = """
import contextlib, io, json, sys
if sys.argv[1] == "plan":
    # The whole command in this one process: plan otherwise renders in a child process of its own, which is where
    # the program's SDK would be loaded.
    from gpulease.review import isolation
    isolation.available = lambda: False
from gpulease.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    code = main(sys.argv[1:])
print(json.dumps({"code": code, "roots": sorted({name.split(".")[0] for name in sys.modules})}))
"""


def loaded(*argv: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True
    )
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["code"] == 0, done.stderr
    return set(result["roots"])


ALIBABA = {"pulumi_alicloud", "alibabacloud_ecs20140526", "alibabacloud_oss_v2", "alibabacloud_tea_openapi"}
NOT_FOR_A_PLAN = {"boto3", "botocore", "rich", "jsonschema"}


@pytest.mark.parametrize(
    ("argv", "present", "absent"),
    [
        (("plan", "aws-lora-7b", "--format", "json"), {"pulumi_aws", "pulumi_policy"}, ALIBABA | NOT_FOR_A_PLAN),
        (("plan", "ali-lora-7b", "--format", "markdown"), {"pulumi_alicloud"}, {"pulumi_aws"} | NOT_FOR_A_PLAN),
        (("size", "--params", "7B", "--json"), set(), {"pulumi", "pulumi_aws", "pulumi_alicloud", "boto3"}),
        (("schema",), set(), {"pulumi", "pulumi_aws", "pulumi_alicloud", "boto3", "rich"}),
    ],
    ids=["plan-aws-json", "plan-alibaba-markdown", "size", "schema"],
)
def test_a_command_imports_only_what_it_needs(argv: tuple[str, ...], present: set[str], absent: set[str]) -> None:
    roots = loaded(*argv)
    assert present <= roots
    assert roots & absent == set()
