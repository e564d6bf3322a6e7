"""The offline review of every example stack, pinned: JSON, the pull-request comment and the terminal report.

A refactoring must leave ``gpulease plan`` saying exactly what it said. The review runs at a fixed moment (the
program's clock is frozen, so deadlines and price ages are those of that moment); resources are compared in URN
order because the SDK's mock monitor registers them in an order that varies from run to run; the project's
folder is masked (the terminal report names the stack file's absolute path).

What the instance-side tools decide is masked too: the tools bundle (the ``content`` of its object), the
user-data that carries their loader, and the bundle's SHA-256 in object keys and policies change with every
fix to those scripts and are pinned by their own tests (``test_bootstrap_user_data*``).

After a deliberate change of the review's output, rewrite the golden files and read their diff:
``GPULEASE_UPDATE_GOLDEN=1 .venv/bin/python -m pytest -q -n 0 tests/review/test_golden.py``.
"""

from __future__ import annotations

import io
import json
import os
import re
from typing import Any

import pytest
from rich.console import Console

from gpulease.review import engine, terminal
from gpulease.review import report as plan_report
from gpulease.review.render import Rendering
from tests.support.clock import REVIEW_MOMENT
from tests.support.paths import FIXTURES, ROOT

GOLDEN = FIXTURES / "review-golden"
MOMENT = REVIEW_MOMENT
UPDATE = os.environ.get("GPULEASE_UPDATE_GOLDEN") == "1"

_TOOLS_HASH = re.compile(r"(_gpulease/(?:[^\s\"]*/)?tools/)[0-9a-f]{64}")
_MASKED_INPUTS = {"userData": "<user-data>", "userDataBase64": "<user-data>"}
_TOOLS_OBJECTS = ("aws:s3/bucketObjectv2:BucketObjectv2", "alicloud:oss/bucketObject:BucketObject")


def _mask_text(text: str) -> str:
    return _TOOLS_HASH.sub(r"\1<tools-sha256>", text.replace(str(ROOT), "<root>"))


def _mask_json(doc: dict[str, Any]) -> dict[str, Any]:
    for stack in doc["stacks"]:
        for res in stack["resources"]:
            for key, placeholder in _MASKED_INPUTS.items():
                if key in res["inputs"]:
                    res["inputs"][key] = placeholder
            if res["type"] in _TOOLS_OBJECTS:
                res["inputs"]["content"] = "<tools bundle>"
    return json.loads(_mask_text(json.dumps(doc)))


@pytest.fixture(scope="module")
def reviews() -> list[Any]:
    start, judge = engine.start_render, engine.judge

    def canonical(rendering: Rendering) -> Rendering:
        """Registration order (and the order of dependency lists) as URN order, before the policies and the cost
        model read it: the SDK's mock monitor varies it from run to run."""
        for res in rendering.resources:
            res.dependencies = sorted(res.dependencies)
            res.property_dependencies = {k: sorted(v) for k, v in res.property_dependencies.items()}
        rendering.resources.sort(key=lambda res: res.urn)
        return rendering

    def start_canonical(*args: Any, **kwargs: Any) -> Any:
        pending = start(*args, **kwargs)
        result = pending.result
        pending.result = lambda: canonical(result())
        return pending

    def judge_canonical(rendering: Rendering, *args: Any) -> Any:
        return judge(canonical(rendering), *args)  # in the render's child, which judges what it rendered

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(engine, "start_render", start_canonical)
        patch.setattr(engine, "judge", judge_canonical)
        return engine.review(["."], now=MOMENT)


def _check_text(name: str, text: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        path.write_text(text)
    assert text == path.read_text(), f"{name} differs from the golden file; see this module's docstring"


def test_every_example_stack_is_reviewed(reviews) -> None:
    assert [r.rendering.stack for r in reviews] == sorted(p.name[len("Pulumi."):-len(".yaml")]
                                                           for p in (ROOT / "stacks").glob("Pulumi.*.yaml"))
    assert all(r.status == "pass" and r.reviewed_at == MOMENT for r in reviews)


def test_json_report_is_unchanged(reviews) -> None:
    doc = _mask_json(json.loads(json.dumps(plan_report.to_json(reviews), default=str)))
    path = GOLDEN / "plan.json"
    if UPDATE:
        path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    expected = json.loads(path.read_text())
    for got, want in zip(doc["stacks"], expected["stacks"], strict=True):
        for key in sorted(set(got) | set(want)):
            assert got.get(key) == want.get(key), f"{got['stack']}: {key} differs from the golden file"
    assert doc == expected


def test_pull_request_comment_is_unchanged(reviews) -> None:
    _check_text("plan.md", _mask_text(plan_report.markdown(reviews)))


def test_terminal_report_is_unchanged(reviews) -> None:
    buffer = io.StringIO()
    terminal.print_terminal(reviews, Console(file=buffer, width=160))
    _check_text("plan.txt", _mask_text(buffer.getvalue()))


def test_json_dependency_lists_do_not_depend_on_registration_order(reviews) -> None:
    review = next(r for r in reviews if any(len(x.dependencies) > 1 for x in r.rendering.resources))
    saved = {id(x): x.dependencies for x in review.rendering.resources}
    try:
        for x in review.rendering.resources:
            x.dependencies = list(reversed(x.dependencies))
        [stack] = plan_report.to_json([review])["stacks"]
        lists = [res["options"]["dependencies"] for res in stack["resources"]]
        assert any(len(deps) > 1 for deps in lists)
        assert all(deps == sorted(deps) for deps in lists)
    finally:
        for x in review.rendering.resources:
            x.dependencies = saved[id(x)]
