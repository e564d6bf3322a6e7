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


GC_PROBE = """
import contextlib, gc, io, json, sys
sys.argv = ["gpulease", *sys.argv[1:]]
from gpulease.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    code = main()
print(json.dumps({"code": code, "frozen": gc.get_freeze_count(), "enabled": gc.isenabled()}))
"""


def test_run_as_the_process_command_the_loaded_modules_stay_frozen_to_the_exit() -> None:
    """The objects the command's imports built are left out of the collector's work, the last collection at exit
    included (``imports_frozen``; a seventh of ``gpulease plan``'s time, bench/plan_speed.py); the collector
    itself is on again for the command."""
    done = subprocess.run([sys.executable, "-c", GC_PROBE, "schema"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, check=True)
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["code"] == 0, done.stderr
    assert result["enabled"] is True
    assert result["frozen"] > 10_000  # what the interpreter and the command's modules (pydantic, the models) built


def test_called_with_argv_main_gives_the_objects_back_to_the_collector(capsys: pytest.CaptureFixture[str]) -> None:
    """Called from a longer-lived process (as here), nothing stays frozen after ``main`` returns, and the collector is
    as it was."""
    import gc

    from gpulease.cli import main

    assert gc.get_freeze_count() == 0
    assert main(["schema"]) == 0
    assert json.loads(capsys.readouterr().out)  # the command ran and printed its schema
    assert gc.get_freeze_count() == 0
    assert gc.isenabled()
