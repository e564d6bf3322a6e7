"""An apply called on an output that has already resolved: run offline when its value is unknown (the callback the SDK
skips), run as the SDK runs it when known, with the same verdicts as an apply on an output still pending."""

from __future__ import annotations

from pathlib import Path

from gpulease.review.engine import review
from tests.review.test_unknown_compute import _write
from tests.review.test_unknown_compute_more import HEAD
from tests.support.clock import FIXED_NOW

INSTANCE = "aws.ec2.Instance('gpu', instance_type='p4d.24xlarge', tags=tags)"
# The coroutine awaits the output first, so its data has resolved before the program calls apply on it.
AFTER = ("async def after(output):\n"
         "    await output.future()\n"
         f"    output.apply(lambda v: {INSTANCE})\n"
         "    return 1\n")


def test_an_apply_on_a_resolved_unknown_output_is_run_offline(tmp_path: Path) -> None:
    body = HEAD + AFTER + "pulumi.Output.from_input(after(U))\n"
    [r] = review([str(_write(tmp_path, "resolved-unknown", body))], now=FIXED_NOW)
    assert [x.name for x in r.rendering.of_type("aws:ec2/instance:Instance")] == ["gpu"], r.rendering.error
    assert "'gpu' was registered by an apply run offline with an unknown value" in str(r.rendering.error)
    assert r.exit_code != 0


def test_an_apply_on_a_resolved_known_output_runs_as_the_sdk_runs_it(tmp_path: Path) -> None:
    body = HEAD + AFTER + "pulumi.Output.from_input(after(pulumi.Output.from_input('x').apply(lambda v: v)))\n"
    [r] = review([str(_write(tmp_path, "resolved-known", body))], now=FIXED_NOW)
    assert [x.name for x in r.rendering.of_type("aws:ec2/instance:Instance")] == ["gpu"], r.rendering.error
    assert "apply run offline" not in str(r.rendering.error or "")
