"""One definition of a character that does not read as itself (gpulease/core/printable.py), used by the refusals of
``to:``, ``push --to``, ``pull --dest`` and prefixes, and by the escaper; the instance's copy (standard library only,
instance/staging_files.py) agrees with it on every code point."""

from __future__ import annotations

import sys

import pytest

from components.spec.load import SpecError, load_stack_spec
from components.spec.text import hidden_character
from gpulease.core import printable
from gpulease.core.errors import UserError
from gpulease.transfer.files import key_prefix
from instance import staging_files
from tests.support.specs import experiment

INVISIBLE = ["\u115f", "\u1160", "\u3164", "\uffa0", "\u2800", "\u034f", "\ufe00", "\ufe0f", "\U000e0100",
             "\U000e01ef", "\u180b", "\u180c", "\u180d", "\u180e", "\u180f"]


@pytest.mark.parametrize("char", INVISIBLE, ids=lambda c: f"U+{ord(c):04X}")
def test_each_invisible_character_is_refused_and_escaped(char: str) -> None:
    assert printable.hidden(char) and printable.unsafe(char) and staging_files.hidden(char)
    assert hidden_character(f"/data/raw{char}x") is not None
    assert printable.escaped(f"a{char}b") == f"a\\u{ord(char):04x}b" if ord(char) <= 0xFFFF else \
        f"a\\U{ord(char):08x}b"
    with pytest.raises(SpecError, match=rf"data\.sources\[0\]\.to: .*U\+{ord(char):04X}.*accepted"):
        load_stack_spec("dev", {"gpulease:experiment": experiment(
            data={"sources": [{"uri": "https://h/f", "to": f"/data/raw{char}x"}]})}, source="stacks/Pulumi.dev.yaml")
    with pytest.raises(UserError, match=rf"--to .*U\+{ord(char):04X}"):
        key_prefix(f"data/raw{char}/")
    from gpulease.cli.pull import _dest, _prefix

    for parse in (_dest, _prefix):
        with pytest.raises(Exception, match=rf"U\+{ord(char):04X}"):
            parse(f"out{char}")
    with pytest.raises(staging_files.ConfinementError, match=rf"U\+{ord(char):04X}"):
        staging_files.check_to(f"/data/raw{char}x")


def test_visible_neighbours_stay_accepted() -> None:
    for text in ("/data/raw/한글", "/data/raw/数据", "/data/raw/café", "/data/raw/⠁⠃", "/data/raw/e\u0301"):
        assert hidden_character(text) is None and printable.escaped(text) == text
        staging_files.check_to(text)


def test_the_instance_and_the_kit_agree_on_every_code_point() -> None:
    kit, instance = printable.hidden, staging_files.hidden
    differ = [hex(code) for code in range(sys.maxunicode + 1) if kit(chr(code)) != instance(chr(code))]
    assert differ == []
    assert printable.INVISIBLE == staging_files.INVISIBLE
