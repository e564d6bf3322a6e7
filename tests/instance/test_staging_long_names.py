"""A path from a hub listing or a bucket that cannot be a file on the instance (a name over NAME_MAX with the
``.part.json`` staging writes beside it, or a path that would pass PATH_MAX below the longest ``to:``) fails its
source with the limit named, before anything is opened: never a raw ENAMETOOLONG."""

from __future__ import annotations

import pytest

from components.spec import workflow
from gpulease.core import datasources as ds
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
    assert sf.TO_MAX_BYTES == workflow.TO_MAX_BYTES and sf.NAME_MAX == workflow.NAME_MAX
    assert sf.LONGEST_SUFFIX == ds.LONGEST_SUFFIX


def _spec_refusal(to: str) -> str | None:
    from components.spec.load import SpecError, load_stack_spec
    from tests.support.specs import experiment

    try:
        load_stack_spec("dev", {"gpulease:experiment": experiment(
            data={"sources": [{"uri": "https://h/f", "to": to}]})}, source="stacks/Pulumi.dev.yaml")
    except SpecError as exc:
        return str(exc)
    return None


def test_the_to_folder_is_counted_in_utf8_bytes_at_plan_and_on_the_instance() -> None:
    emoji = "\U0001f600"  # 4 bytes in UTF-8
    fits = "/data/" + "/".join([emoji * 60] * 2)  # 6 + 2 * 240 + 1 = 487 bytes, 127 characters
    assert len(fits.encode()) == 487 and _spec_refusal(fits) is None
    sf.check_to(fits)
    too_long = "/data/" + "/".join([emoji * 60] * 3)  # 728 bytes but only 188 characters
    assert len(too_long) == 188 and len(too_long.encode()) == 728
    refused = _spec_refusal(too_long)
    assert refused is not None and "data.sources[0].to: is 728 bytes in UTF-8 (188 characters)" in refused
    assert "accepted: a folder path of at most 512 bytes, each name at most 255 bytes" in refused
    with pytest.raises(sf.ConfinementError, match=r"728 bytes, its longest name 240 bytes; accepted: at most 512"):
        sf.check_to(too_long)
    long_name = "/data/" + emoji * 64  # one name of 256 bytes, 64 characters
    assert "its longest name 256 bytes" in (_spec_refusal(long_name) or "")
    with pytest.raises(sf.ConfinementError, match="its longest name 256 bytes"):
        sf.check_to(long_name)
    # The instance refuses what plan refuses, and accepts what plan accepts, at the edge.
    edge = "/data/" + "/".join(["a" * 255, "b" * 250])  # 512 bytes
    assert len(edge.encode()) == 512 and _spec_refusal(edge) is None
    sf.check_to(edge)
    assert _spec_refusal(edge + "c") is not None
    with pytest.raises(sf.ConfinementError):
        sf.check_to(edge + "c")
