"""An https source whose file name decodes to a character drawn as nothing (Hangul filler,
variation selector, braille blank, combining grapheme joiner) is accepted by the spec (``parse_source`` judges the
decoded path with ``str.isprintable``, not the Unicode 14.0 table), while the instance's ``rel_parts`` refuses the
same name: plan says ok, the paid instance fails the source."""

from __future__ import annotations

import urllib.parse

import pytest

from gpulease.core.datasources import parse_source
from instance.staging_files import ConfinementError, rel_parts

INVISIBLE = ["\u3164", "\ufe0f", "a\u034f", "\u2800", "\u115f", "\U000e0100", "\u180b", "\uffa0"]


@pytest.mark.parametrize("char", INVISIBLE)
def test_plan_refuses_what_the_instance_refuses(char: str) -> None:
    name = f"f{char}.bin"
    with pytest.raises(ConfinementError):
        rel_parts(name)  # the instance refuses it ...
    with pytest.raises(ValueError):  # ... so the spec must too
        parse_source("https://example.com/" + urllib.parse.quote(name))
