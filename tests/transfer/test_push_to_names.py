"""``push --to``: a refusal shows the folder escaped (never a Hangul filler or an escape raw), and a folder name
longer than pull can write locally (255 bytes of UTF-8) is refused."""

from __future__ import annotations

import pytest

from gpulease.core.errors import UserError
from gpulease.transfer.files import key_prefix


@pytest.mark.parametrize(("to", "shown"), [("data/\u3164x", "'data/\\u3164x'"), ("data/\x1b[2Jx", "'data/\\x1b[2Jx'"),
                                           ("da\u202eta/", "'da\\u202eta/'")])
def test_a_refused_to_is_shown_escaped(to: str, shown: str) -> None:
    with pytest.raises(UserError) as caught:
        key_prefix(to)
    message = str(caught.value)
    assert message.startswith(f"--to {shown}: ") and to not in message


def test_a_folder_name_over_255_bytes_is_refused_as_pull_would() -> None:
    assert key_prefix("data/" + "a" * 255) == "data/" + "a" * 255 + "/"
    with pytest.raises(UserError, match=r"a folder name of 256 bytes; .* each folder name at most 255 bytes"):
        key_prefix("data/" + "a" * 256)
    with pytest.raises(UserError, match=r"a folder name of 258 bytes"):
        key_prefix("data/" + "é" * 129)
