"""Every render is isolated: stacks and projects never share a program's modules, and a program that crashes,
hangs or exits is bounded and reported, with what it registered before still judged."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from gpulease.cli import main
from gpulease.review import engine, isolation

pytestmark = pytest.mark.skipif(not isolation.available(), reason="renders are isolated by fork")




def project(root: Path, name: str, main_py: str, files: dict[str, str] | None = None,
            stacks: dict[str, str] | None = None) -> Path:
    folder = root / name
    folder.mkdir()
    (folder / "Pulumi.yaml").write_text(f"name: {name}\nruntime: python\n")
    (folder / "__main__.py").write_text(main_py)
    for rel, text in (files or {}).items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for stack, config in (stacks or {}).items():
        (folder / f"Pulumi.{stack}.yaml").write_text(config)
    return folder


def plan(capsys, *args: str) -> tuple[int, dict]:
    code = main(["plan", *args, "--format", "json"])
    out = capsys.readouterr().out
    return code, json.loads(out)


def names(stack: dict) -> list[str]:
    return sorted(r["name"] for r in stack["resources"] if r["custom"])


HELPER = (
    "import pulumi_aws as aws\n"
    "# Created when the module is imported: a second import in the same interpreter would create nothing.\n"
    "shared = aws.ec2.SecurityGroup('helper-sg', description='from the helper module')\n"
)


def test_two_stacks_of_one_project_both_see_the_resources_of_a_helper_module(tmp_path, capsys):
    folder = project(tmp_path, "helpers", "import helper\nimport pulumi_aws as aws\n"
                     "aws.ec2.SecurityGroup('main-sg', description='from main')\n",
                     files={"helper.py": HELPER},
                     stacks={"one": "config: {aws:region: us-east-1}\n", "two": "config: {aws:region: eu-west-1}\n"})
    code, report = plan(capsys, str(folder))
    assert [s["stack"] for s in report["stacks"]] == ["one", "two"]
    for stack in report["stacks"]:
        assert stack["error"] is None and names(stack) == ["helper-sg", "main-sg"], stack["stack"]
    assert code == 1  # untagged security groups: budget-tags, in both stacks


IAM_A = "import pulumi_aws as aws\ndef role():\n    return aws.iam.Role('role-a', assume_role_policy='{}')\n"
IAM_B = "import pulumi_aws as aws\ndef make_b_role():\n    return aws.iam.Role('role-b', assume_role_policy='{}')\n"


def test_two_projects_with_a_module_of_the_same_name_each_import_their_own(tmp_path, capsys):
    a = project(tmp_path, "proj-a", "import iam\niam.role()\n", files={"iam.py": IAM_A},
                stacks={"dev": "config: {}\n"})
    b = project(tmp_path, "proj-b", "import iam\niam.make_b_role()\n", files={"iam.py": IAM_B},
                stacks={"dev": "config: {}\n"})
    _, report = plan(capsys, str(a), str(b))
    first, second = report["stacks"]
    assert first["error"] is None and names(first) == ["role-a"]
    # Without isolation: "module 'iam' has no attribute 'make_b_role'".
    assert second["error"] is None and names(second) == ["role-b"]


def test_a_project_with_its_own_components_package_does_not_meet_the_kits(tmp_path, capsys):
    folder = project(
        tmp_path, "own-components",
        "from components.network import make_network\nmake_network()\n",
        files={"components/__init__.py": "", "components/network.py":
               "import pulumi_aws as aws\ndef make_network():\n"
               "    return aws.ec2.SecurityGroup('own-net', description='the project s own components package')\n"},
        stacks={"dev": "config: {}\n"},
    )
    import components  # the kit's package, imported in the reviewer as a forked child inherits it

    # The kit's own stack first, so its components package is also imported in a render before the project's.
    _, report = plan(capsys, "aws-debug-t4", str(folder))
    kit, own = report["stacks"]
    assert kit["error"] is None and kit["status"] == "pass"
    assert own["error"] is None and names(own) == ["own-net"]
    # And in this process the kit's package is still the kit's.
    assert Path(components.__file__).parent.parent == Path(engine.PROJECT_ROOT)


EARLY = "import pulumi_aws as aws\nsg = aws.ec2.SecurityGroup('early', description='registered before the end')\n"


def once_registered(code: str) -> str:
    """Run ``code`` once the security group is registered (its id known): registration is asynchronous, so a
    crash in the program's first lines would come before anything reached the engine."""
    return f"def after(_):\n    {code}\nsg.id.apply(after)\n"


@pytest.mark.parametrize(
    ("ending", "phrase"),
    [
        ("import os\n" + once_registered("os._exit(7)"), "__main__.py:5: the program called os._exit(7) before it"),
        # Right after constructing: the registration was still pending, and is finished and reviewed.
        ("import os\nos._exit(0)\n", "__main__.py:4: the program called os._exit(0) before it finished"),
        ("import os, signal\n" + once_registered("os.kill(os.getpid(), signal.SIGSEGV)"),
         "killed by SIGSEGV before it finished; what it registered until then is reviewed: 1 resources "
         "(aws:ec2/securityGroup:SecurityGroup 'early')"),
        ("raise RuntimeError('boom in the program')\n", "RuntimeError: boom in the program"),
    ],
)
def test_a_program_that_crashes_is_reported_and_what_it_registered_is_judged(tmp_path, capsys, ending, phrase):
    folder = project(tmp_path, "crash", EARLY + ending, stacks={"dev": "config: {}\n"})
    code, report = plan(capsys, str(folder))
    (stack,) = report["stacks"]
    assert phrase in stack["error"]
    assert stack["status"] == "partial" and stack["partial"] is True and code == 3 and report["exitCode"] == 3
    assert names(stack) == ["early"]
    assert {v["policy"] for v in stack["violations"] if v["resourceName"] == "early"} >= {"budget-tags"}


def test_a_program_that_hangs_is_stopped_at_the_time_limit(tmp_path, capsys):
    folder = project(tmp_path, "hangs", EARLY + "import time\n" + once_registered("time.sleep(600)"), stacks={"dev": "config: {}\n"})
    started = time.monotonic()
    code, report = plan(capsys, str(folder), "--timeout", "3")
    assert time.monotonic() - started < 60
    (stack,) = report["stacks"]
    assert "did not finish within 3 s and was stopped" in stack["error"]
    assert code == 3 and stack["status"] == "partial" and names(stack) == ["early"]


def test_a_program_that_prints_does_not_corrupt_the_json_report(tmp_path, capsys):
    folder = project(tmp_path, "chatty", "print('hello from the program')\n" + EARLY, stacks={"dev": "config: {}\n"})
    _, report = plan(capsys, str(folder))  # json.loads of stdout: nothing else on it
    assert names(report["stacks"][0]) == ["early"]


def test_a_process_killed_before_anything_reached_the_review_says_nothing_was_reviewed(tmp_path, capsys):
    folder = project(tmp_path, "killed-early", "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n",
                     stacks={"dev": "config: {}\n"})
    code, report = plan(capsys, str(folder))
    (stack,) = report["stacks"]
    assert stack["error"] == ("the program's process was killed by SIGKILL before it finished; nothing it registered "
                              "reached the review")
    assert code == 2 and stack["status"] == "error" and stack["partial"] is False


def test_a_program_failing_before_it_registers_anything_is_not_reviewed(tmp_path, capsys):
    folder = project(tmp_path, "fails-early", "raise ValueError('nothing yet')\n", stacks={"dev": "config: {}\n"})
    code, report = plan(capsys, str(folder))
    (stack,) = report["stacks"]
    assert code == 2 and stack["status"] == "error" and stack["partial"] is False
    assert stack["violations"] == [] and stack["cost"] is None


def test_the_reviewer_never_imports_a_programs_modules(tmp_path, capsys):
    folder = project(tmp_path, "marker", "import marker_module_of_the_program\n" + EARLY,
                     files={"marker_module_of_the_program.py": "X = 1\n"}, stacks={"dev": "config: {}\n"})
    plan(capsys, str(folder))
    assert "marker_module_of_the_program" not in sys.modules


class _Reviewed:
    def __init__(self, code: int):
        self.exit_code = code


def test_exit_codes_rank_not_reviewed_then_partial_then_violations():
    def of(status: str) -> engine.StackReview:
        return _Reviewed({"error": 2, "partial": 3, "fail": 1, "pass": 0}[status])  # type: ignore[return-value]

    assert engine.exit_code([of("fail"), of("partial")]) == 3
    assert engine.exit_code([of("partial"), of("error")]) == 2
    assert engine.exit_code([of("pass"), of("fail")]) == 1
    assert engine.exit_code([of("pass")]) == 0


def test_warming_the_next_childs_sdk_modules_keeps_the_lazy_packages_whole():
    # In a fresh interpreter (this session has imported everything already): the modules a child reports, loaded in
    # the reviewer in their sorted order, must leave each SDK package with the names it re-exports.
    probe = (
        "from gpulease.review import isolation\n"
        "isolation.warm(['pulumi_aws.budgets', 'pulumi_aws.budgets._inputs', 'pulumi_aws.budgets.budget'])\n"
        "import pulumi_aws as aws\n"
        "print(aws.budgets.Budget.__name__)\n"
    )
    import subprocess

    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "Budget", done.stderr[-500:]
