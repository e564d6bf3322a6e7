"""A path from a hub listing or a bucket that cannot be a file on the instance (a name over NAME_MAX with the
``.part.json`` staging writes beside it, or a path that would pass PATH_MAX below the longest ``to:``) fails its
source with the limit named, before anything is opened: never a raw ENAMETOOLONG."""

from __future__ import annotations

import pytest

from components.spec import workflow
from instance import staging_files as sf


@pytest.mark.parametrize(("rel", "phrase"), [
    ("a" * 246, "a name of 246 bytes; accepted: names of at most 245 bytes (NAME_MAX 255 less the .part.json"),
    ("dir/" + "é" * 123, "a name of 246 bytes"),
    ("/".join(["d" * 200] * 18), "3617 bytes; accepted: at most 3573 bytes below its folder (PATH_MAX 4096"),
])
def test_a_path_too_long_for_the_instance_is_refused_with_the_limit(rel: str, phrase: str) -> None:
    with pytest.raises(sf.ConfinementError) as err:
        sf.rel_parts(rel)
    assert phrase in str(err.value) and "\n" not in str(err.value)


def test_the_longest_that_fit_are_accepted_and_the_limits_match_the_spec() -> None:
    assert sf.rel_parts("a" * 245) == ["a" * 245]
    assert len(sf.rel_parts("/".join(["d" * 199] * 17) + "/" + "e" * 173)) == 18
    assert sf.TO_MAX_BYTES == workflow.TO_MAX_LENGTH and sf.NAME_MAX == workflow.NAME_MAX
    assert sf.LONGEST_SUFFIX == workflow.STAGING_SUFFIX
