"""``gpulease logs`` prints the end of each log, not its start, and never lets a log's bytes drive the terminal."""

from __future__ import annotations

import json

import pytest

from gpulease.cli.main import main
from gpulease.cli.printable import printable
from gpulease.live import logs
from tests.live.test_logs import LOGS, STACK


def _log_lines(out: str, name: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith(f"[{name}]")]


def test_logs_show_the_last_lines_of_each_log_and_say_how_many_are_left_out(bucket, capsys):
    bucket["put"](LOGS + "bootstrap.log", "".join(f"line {i}\n" for i in range(1, 251)).encode())
    assert main(["logs", STACK, "--outputs", bucket["outputs"]]) == 0
    assert _log_lines(capsys.readouterr().out, "bootstrap.log") == [
        "[bootstrap.log] ... 150 earlier lines not shown (--lines 0 shows all)",
        *[f"[bootstrap.log] line {i}" for i in range(151, 251)],
    ]
    assert main(["logs", STACK, "--outputs", bucket["outputs"], "--lines", "2"]) == 0
    out = capsys.readouterr().out
    assert _log_lines(out, "bootstrap.log") == ["[bootstrap.log] ... 248 earlier lines not shown (--lines 0 shows all)",
                                                "[bootstrap.log] line 249", "[bootstrap.log] line 250"]
    assert "[bootstrap]   FAIL data: hf://org/m: 401 Unauthorized" in out  # the records are shown whole
    assert main(["logs", STACK, "--outputs", bucket["outputs"], "--lines", "0"]) == 0
    assert len(_log_lines(capsys.readouterr().out, "bootstrap.log")) == 250


def test_a_log_longer_than_one_read_is_read_from_its_end(bucket, monkeypatch, capsys):
    monkeypatch.setattr(logs, "MAX_LOG_BYTES", 64)
    bucket["put"](LOGS + "bootstrap.log", "".join(f"line {i:03d}\n" for i in range(1, 101)).encode())  # 900 bytes
    assert main(["logs", STACK, "--outputs", bucket["outputs"]]) == 0
    assert _log_lines(capsys.readouterr().out, "bootstrap.log") == [
        "[bootstrap.log] ... 836 earlier bytes not read (only the last 64 bytes are read)",
        *[f"[bootstrap.log] line {i:03d}" for i in range(94, 101)]]


def test_the_tail_note_of_a_log_read_from_its_end_says_bytes_were_not_read(bucket, monkeypatch, capsys):
    monkeypatch.setattr(logs, "MAX_LOG_BYTES", 64)
    bucket["put"](LOGS + "bootstrap.log", "".join(f"line {i:03d}\n" for i in range(1, 101)).encode())
    assert main(["logs", STACK, "--outputs", bucket["outputs"], "--lines", "2"]) == 0
    assert _log_lines(capsys.readouterr().out, "bootstrap.log") == [
        "[bootstrap.log] ... 836 earlier bytes not read (only the last 64 bytes are read) and 5 earlier lines of "
        "those not shown (--lines 0 shows every line read)", "[bootstrap.log] line 099", "[bootstrap.log] line 100"]
    assert main(["logs", STACK, "--outputs", bucket["outputs"], "--lines", "0"]) == 0
    out = capsys.readouterr().out
    assert "shows all" not in out and len(_log_lines(out, "bootstrap.log")) == 8


def test_logs_escape_control_characters_visibly(bucket, capsys):
    bucket["put"](LOGS + "bootstrap.log", b"\x1b[2J\x1b]0;owned\x07cleared\rhidden\ttab \xe2\x80\xae rtl \xc2\x9b csi\n")
    assert main(["logs", STACK, "--outputs", bucket["outputs"]]) == 0
    out = capsys.readouterr().out
    assert _log_lines(out, "bootstrap.log") == [
        "[bootstrap.log] \\e[2J\\e]0;owned\\acleared\\rhidden\ttab \\u202e rtl \\x9b csi"]
    assert not any(c in out for c in "\x1b\x07\r\x9b\u202e")
    assert main(["logs", STACK, "--outputs", bucket["outputs"], "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)  # JSON escapes them itself: the text is kept as it was
    assert "[bootstrap.log] \x1b[2J\x1b]0;owned\x07cleared\rhidden\ttab \u202e rtl \x9b csi" in doc["data"]["lines"]


def test_follow_tails_and_escapes_its_first_screen(bucket, monkeypatch, capsys):
    bucket["put"](LOGS + "bootstrap.log", "".join(f"\x1bline {i}\n" for i in range(1, 6)).encode())
    monkeypatch.setattr(logs, "FOLLOW_POLL_SECONDS", 0.0)
    assert main(["logs", STACK, "--outputs", bucket["outputs"], "--follow", "--minutes", "0.0001", "-n", "1"]) == 0
    assert _log_lines(capsys.readouterr().out, "bootstrap.log") == [
        "[bootstrap.log] ... 4 earlier lines not shown (--lines 0 shows all)", "[bootstrap.log] \\eline 5"]


@pytest.mark.parametrize("text", ["-1", "x", "1e3", "²", "2000000"])
def test_a_bad_line_count_is_one_line_exit_2(text, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["logs", STACK, "--lines", text])
    assert exit_.value.code == 2
    shown = "'" + text.encode("ascii", "backslashreplace").decode() + "'"  # '²' is written as '\xb2', one backslash
    assert f"{shown} is not a number of lines; accepted: 0 (all) to 1000000, e.g. 100" in capsys.readouterr().err


def test_printable_keeps_text_and_tabs():
    assert printable("step 3\tloss 1.80 é 日本") == "step 3\tloss 1.80 é 日本"
    assert printable("\x00\x7f\u200b") == "\\0\\x7f\\u200b"
