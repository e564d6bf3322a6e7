"""``push`` of a folder once (1) crashed with ``UnicodeEncodeError`` (a traceback at the CLI) when a
file's name is not UTF-8 (``bad\\xff``: ``run.py`` ``f.key.encode()``), and (2) uploaded names holding ESC, U+202E or
a Hangul filler as keys, which ``pull`` and the instance's staging (``rel_parts``) then refuse: the bucket was
filled with objects the paid instance will fail on. Now it is refused in one line naming the file (escaped), before anything is sent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from rich.console import Console

from gpulease.core.errors import UserError
from gpulease.transfer.run import push
from tests.transfer.test_pull_key_forms import WHERE, Store


def test_a_file_name_that_is_not_utf8_is_refused_by_name_not_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "ok.txt").write_text("x")
    (tmp_path / os.fsdecode(b"bad\xff")).write_text("z")
    store = Store([])
    with pytest.raises(UserError) as err:
        push(WHERE, store, tmp_path, "data/raw", Console(quiet=True), bar=False)
    line = str(err.value)
    assert "\n" not in line and "bad\\xff" in line and "not UTF-8" in line and "nothing sent" in line
    assert store.uploaded == []


@pytest.mark.parametrize(("name", "shown"), [("\u202egnp.exe", "\\u202egnp.exe"), ("a\x1b[31m", "a\\x1b[31m"),
                                             ("\u3164", "\\u3164")])
def test_a_hidden_file_name_is_refused_before_anything_is_uploaded(tmp_path: Path, name: str, shown: str) -> None:
    (tmp_path / name).write_text("x")
    (tmp_path / "ok.txt").write_text("x")
    store = Store([])
    with pytest.raises(UserError) as err:
        push(WHERE, store, tmp_path, "data/raw", Console(quiet=True), bar=False)
    line = str(err.value)
    assert shown in line and name not in line and "\n" not in line
    assert store.uploaded == []  # nothing at all: not ok.txt either
