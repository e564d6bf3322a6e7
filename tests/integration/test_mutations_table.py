"""``make mutate``'s table stays true to the code: each edit it lists finds its text exactly once, in a file that
exists, and names tests that exist (a file, or one test of it as pytest names it: ``file::test``); a file moved or a
line rewritten would otherwise silently drop a mutation."""

from __future__ import annotations

import pytest

from tests.support.paths import ROOT
from tools.mutations import MUTATIONS


@pytest.mark.parametrize("mutation", MUTATIONS, ids=lambda m: f"{m.path}:{m.rule}")
def test_every_mutation_applies_once_and_its_tests_exist(mutation) -> None:
    source = (ROOT / mutation.path).read_text()
    assert source.count(mutation.find) == 1, f"{mutation.path}: {mutation.find!r}"
    assert mutation.replace != mutation.find
    for test in mutation.tests:
        path, _, name = test.partition("::")  # a file, or one test of it
        assert (ROOT / path).is_file(), test
        assert not name or f"def {name.partition('[')[0]}(" in (ROOT / path).read_text(), test
