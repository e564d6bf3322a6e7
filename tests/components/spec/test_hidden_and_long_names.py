"""A ``to:`` folder that would not read as written (U+202E RIGHT-TO-LEFT OVERRIDE, a zero-width space, a space at
either end), and a one-file source whose name cannot be a file name on the instance (over NAME_MAX with the
``.part.json`` staging writes beside it), are refused at plan: one line naming the file, the field and the limit,
instead of a mislabelled folder or a raw ENAMETOOLONG on the paid instance."""

from __future__ import annotations

import pytest

from components.spec.load import SpecError, load_stack_spec
from tests.support.specs import experiment

EXP = "gpulease:experiment"
SOURCE = "stacks/Pulumi.dev.yaml"


def _load(uri: str, to: str = "/data/raw/x") -> None:
    load_stack_spec("dev", {EXP: experiment(data={"sources": [{"uri": uri, "to": to}]})}, source=SOURCE)


def _refusal(uri: str, to: str, field: str) -> str:
    """The one line of the refusal that names ``field`` (the message opens with the file)."""
    with pytest.raises(SpecError) as err:
        _load(uri, to)
    message = str(err.value)
    assert SOURCE in message.splitlines()[0], message
    lines = [line for line in message.splitlines() if line.startswith(f"  - {EXP}.{field}:")]
    assert len(lines) == 1, message
    return lines[0]


@pytest.mark.parametrize(("to", "phrase"), [
    ("/data/raw/\u202etxt.exe", "holds U+202E (RIGHT-TO-LEFT OVERRIDE)"),
    ("/data/raw/a\u200bb", "holds U+200B (ZERO WIDTH SPACE)"),
    ("/data/raw/a\u2066b", "holds U+2066 (LEFT-TO-RIGHT ISOLATE)"),
    ("/data/raw/a\u2028b", "holds U+2028 (LINE SEPARATOR)"),
    ("/data/raw/a\x85b", "holds U+0085"),
    ("/data/raw/x ", "starts or ends with a space"),
    (" /data/raw/x", "starts or ends with a space"),
])
def test_a_to_folder_that_does_not_read_as_written_is_refused(to: str, phrase: str) -> None:
    line = _refusal("https://h/f", to, "data.sources[0].to")
    assert phrase in line and "accepted: a folder path of visible characters" in line, line


def test_visible_unicode_names_stay_accepted() -> None:
    _load("https://h/f", "/data/raw/données-日本")


@pytest.mark.parametrize("uri", ["https://h/" + "a" * 300, "s3://bucket-a/x/" + "b" * 246,
                                 "https://h/" + "%C3%A9" * 123])
def test_a_file_name_too_long_for_the_instance_is_refused_with_the_limit(uri: str) -> None:
    line = _refusal(uri, "/data/raw/x", "data.sources[0].uri")  # the rule of both sides, on the URI
    assert "accepted: a file name of at most 245 bytes (NAME_MAX 255 per path component, less the .part.json " \
        "staging writes beside the file)" in line, line


def test_the_longest_name_that_fits_stays_accepted() -> None:
    _load("https://h/" + "a" * 245)
