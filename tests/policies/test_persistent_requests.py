"""The corpus programs of persistent spot requests on their own (``make mutate`` runs them without the rest of the
corpus): a request's end by valid_until, a flexible window on either schedule, a request terminated on a reclaim,
and the persistent requests instances take from pulumi_aws and aws-native launch templates. Each is held to its
``expected.yaml`` exactly as ``test_programs.py`` holds every program."""

from __future__ import annotations

import pytest
import yaml

from tests.policies.test_programs import PROGRAMS, reviewed, unmatched


@pytest.mark.parametrize("name", ["aws-persistent-ends", "aws-persistent-templates", "aws-persistent-instance"])
def test_a_persistent_request_program_finds_exactly_what_is_expected(name: str) -> None:
    program = PROGRAMS / name
    expected = yaml.safe_load((program / "expected.yaml").read_text())
    assert unmatched(expected["findings"], reviewed(program)["violations"]) == ([], [])
