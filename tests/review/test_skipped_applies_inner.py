"""Checks of the static rule and of inner applies that no other program isolates: an ``import`` of a provider
inside the callback (its name read nowhere else), and an apply called during an offline run, whose own line is
named whether it registers a resource or registers nothing and may register."""

from __future__ import annotations

from pathlib import Path

from gpulease.review.engine import review
from tests.review.test_skipped_applies_offline import GPU
from tests.review.test_unknown_compute import _write
from tests.review.test_unknown_compute_more import HEAD
from tests.support.clock import FIXED_NOW

FIRST = len(HEAD.splitlines()) + 1  # the first line after HEAD


def _errors(tmp_path: Path, name: str, body: str) -> tuple[int, str]:
    [r] = review([str(_write(tmp_path, name, HEAD + body))], now=FIXED_NOW)
    return r.exit_code, str(r.rendering.error)


def test_an_import_of_a_provider_inside_the_callback_may_register(tmp_path: Path) -> None:
    # ``pulumi_aws`` is bound nowhere in the program's globals (HEAD imports it as ``aws``): only the import says it.
    code, error = _errors(tmp_path, "import-inside", "def cb(t):\n    if t == 'prod':\n"
                          "        import pulumi_aws as cloud\n"
                          "        cloud.ec2.Instance('gpu', instance_type='p4d.24xlarge')\nU.apply(cb)\n")
    assert code == 3, error
    assert f"an apply on a value unknown offline was not run (at __main__.py:{FIRST + 4})" in error, error


def test_a_resource_registered_by_an_inner_apply_names_the_inner_apply(tmp_path: Path) -> None:
    body = (f"K = pulumi.Output.from_input('k')\ndef cb(t):\n    return K.apply(lambda k: {GPU})\nU.apply(cb)\n")
    code, error = _errors(tmp_path, "inner-registers", body)
    assert code == 3, error
    assert ("'gpu' was registered by an apply run offline with an unknown value "
            f"(at __main__.py:{FIRST + 2})") in error, error


def test_an_inner_apply_that_registers_nothing_is_named_when_it_may_register(tmp_path: Path) -> None:
    body = (f"K = pulumi.Output.from_input('k')\ndef cb(t):\n"
            f"    return K.apply(lambda k: {GPU} if t == 'prod' else None)\nU.apply(cb)\n")
    code, error = _errors(tmp_path, "inner-may-register", body)
    assert code == 3, error
    assert f"an apply on a value unknown offline was not run (at __main__.py:{FIRST + 2})" in error, error
