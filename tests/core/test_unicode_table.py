"""Whether a character reads as itself comes from one generated Unicode 14.0 table (gpulease/core/unicode_table.py,
its copy instance/unicode_table.py), never from the running Python's ``unicodedata``: an instance whose Python has
Unicode 15.x tables decides a ``to:`` path the way ``gpulease plan`` did."""

from __future__ import annotations

import unicodedata
from itertools import pairwise

import pytest

from components.userdata import tools as shipped
from gpulease.core import printable, unicode_table
from instance import staging_files
from instance import unicode_table as instance_table
from tools import unicode_table as generator

LATER_ASSIGNED = "\U0001fae9"
"""Unassigned (Cn) in Unicode 14.0, a symbol (So) from Unicode 15.0 on."""


def test_the_table_is_fresh_and_shipped_identical() -> None:
    core, instance = (path.read_text(encoding="utf-8") for path in generator.TARGETS)
    assert core == instance
    assert unicode_table.UNICODE_VERSION == instance_table.UNICODE_VERSION == generator.UNICODE_VERSION == "14.0.0"
    if unicodedata.unidata_version == generator.UNICODE_VERSION:
        assert generator.render() == core
        assert generator.stale() == [] and generator.main(["--check"]) == 0


def test_check_reports_a_stale_table(monkeypatch: pytest.MonkeyPatch, tmp_path, capsys) -> None:
    target = tmp_path / "unicode_table.py"
    target.write_text(generator.render().replace("(0x0000, 0x001F)", "(0x0000, 0x001E)"), encoding="utf-8")
    monkeypatch.setattr(generator, "TARGETS", (target,))
    monkeypatch.setattr(generator, "ROOT", tmp_path)
    monkeypatch.setattr(generator.unicodedata, "unidata_version", generator.UNICODE_VERSION)
    monkeypatch.setattr(generator, "render", lambda: "fresh\n")
    assert generator.main(["--check"]) == 1
    assert "unicode_table.py: stale" in capsys.readouterr().err


def test_ranges_are_merged_sorted_and_disjoint() -> None:
    for table in (unicode_table.UNSAFE, unicode_table.HIDDEN):
        assert all(a <= b for a, b in table)
        assert all(prev[1] + 1 < nxt[0] for prev, nxt in pairwise(table))
    assert generator.ranges(frozenset({"Cc"}), category=lambda c: "Cc" if c in "\x01\x02\x04" else "Ll") == [
        (1, 2), (4, 4)]


def test_a_later_unicode_version_does_not_change_the_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    real = unicodedata.category

    def newer(char: str) -> str:  # Unicode 15.x: U+1FAE9 assigned; U+0378 (Cn in 14.0) a pretend format character
        return "So" if char == LATER_ASSIGNED else "Cf" if char == "\u0378" else real(char)

    monkeypatch.setattr(unicodedata, "category", newer)
    assert printable.hidden(LATER_ASSIGNED)
    assert staging_files.hidden(LATER_ASSIGNED)
    assert not printable.unsafe(LATER_ASSIGNED)
    assert printable.escaped(f"a{LATER_ASSIGNED}b") == f"a{LATER_ASSIGNED}b"  # escaped covers only unsafe, not Cn
    assert staging_files.shown(LATER_ASSIGNED) == "'\\U0001fae9'"
    # A format character of a later version is what the table says in 14.0: unassigned, hidden, printed as it is.
    assert printable.hidden("\u0378") and not printable.unsafe("\u0378") and printable.escaped("a\u0378") == "a\u0378"
    assert printable.escaped("a\u202eb") == "a\\u202eb"


def test_escaped_agrees_with_unsafe_on_every_code_point() -> None:
    differ = [hex(code) for code in range(0x110000)
              if (printable.escaped(chr(code)) != chr(code)) != printable.unsafe(chr(code))]
    assert differ == []
    assert printable.escaped("a\u202eb\x1b\n", keep="\n") == "a\\u202eb\\x1b\n"


def test_the_table_ships_with_staging() -> None:
    assert shipped.INSTANCE_DIR / "unicode_table.py" in shipped.STAGING_PARTS
    assert "from unicode_table import HIDDEN" in shipped.shipped_source(shipped.INSTANCE_DIR / "staging_files.py")
