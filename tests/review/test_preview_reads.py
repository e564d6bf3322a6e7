"""What a program reads about the preview itself: ``pulumi.runtime.is_dry_run()`` is true while the review renders
(a preview) and false during ``pulumi up``'s update, and an output unknown at preview resolves its ``future()`` to
``None``. A program frame reading either makes the review partial (exit 3) naming its line, never a pass; the SDK's
and the review's own reads, and a future of a known output, change nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpulease.review.engine import review
from tests.review.test_skipped_applies_offline import GPU
from tests.review.test_unknown_compute import _write
from tests.review.test_unknown_compute_more import HEAD
from tests.support.clock import FIXED_NOW

B = "aws.s3.Bucket('b', tags=tags)\n"
ASKS = {
    "runtime": "if not pulumi.runtime.is_dry_run():\n    " + GPU + "\n",
    "from-settings": "from pulumi.runtime.settings import is_dry_run\nif not is_dry_run():\n    " + GPU + "\n",
    "settings-module": "import pulumi.runtime.settings as s\nif not s.is_dry_run():\n    " + GPU + "\n",
    "from-runtime-renamed": "from pulumi.runtime import is_dry_run as d\nif not d():\n    " + GPU + "\n",
}
FUTURE = "import asyncio\nasync def go():\n    print(await {}.future())\nasyncio.ensure_future(go())\n"


@pytest.mark.parametrize("name", sorted(ASKS))
def test_a_gpu_created_only_outside_preview_is_partial(tmp_path: Path, name: str) -> None:
    [r] = review([str(_write(tmp_path, name, HEAD + B + ASKS[name]))], now=FIXED_NOW)
    assert r.exit_code == 3, (r.exit_code, r.status, r.rendering.error)
    assert "the program asks whether it runs as a preview (__main__.py:" in (r.rendering.error or "")


def test_asking_with_nothing_else_registered_is_partial(tmp_path: Path) -> None:
    body = "import pulumi\npulumi.export('preview', pulumi.runtime.is_dry_run())\n"
    [r] = review([str(_write(tmp_path, "asks-only", body))], now=FIXED_NOW)
    assert r.exit_code == 3 and not r.rendering.resources, (r.exit_code, r.rendering.error)


def test_awaiting_an_unknown_output_is_partial_at_its_line(tmp_path: Path) -> None:
    [r] = review([str(_write(tmp_path, "future-unknown", HEAD + B + FUTURE.format("U")))], now=FIXED_NOW)
    assert r.exit_code == 3, (r.exit_code, r.status, r.rendering.error)
    line = len((HEAD + B).splitlines()) + 3
    assert f"the program awaits the value of an output unknown offline (__main__.py:{line})" in (r.rendering.error or "")


def test_awaiting_a_known_output_changes_nothing(tmp_path: Path) -> None:
    body = HEAD + B + FUTURE.format("pulumi.Output.from_input('x')")
    [r] = review([str(_write(tmp_path, "future-known", body))], now=FIXED_NOW)
    assert r.rendering.error is None and r.exit_code != 3, r.rendering.error
