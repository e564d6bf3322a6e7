"""Text a stack file gives that the instance passes on (paths, commands): no control characters a file name, a
shell or a log line would read differently."""

from __future__ import annotations

import re
import unicodedata

from gpulease.core.printable import hidden

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_CONTROL_IN_COMMAND = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_CONTROL_NAMES = {"\x00": "NUL", "\r": "CR", "\n": "a line break", "\t": "a tab", "\x1b": "ESC"}


def _control_name(char: str) -> str:
    return _CONTROL_NAMES.get(char, f"the control character U+{ord(char):04X}")


def plain_path(path: str, what: str = "path") -> str:
    """``path`` unless it holds a control character (NUL, CR, ESC, a tab, a line break), which a file name on the
    instance, a shell and a log line would each read differently."""
    bad = _CONTROL.search(path)
    if bad:
        raise ValueError(f"{path!r} holds {_control_name(bad.group())}; accepted: a {what} of printable characters")
    return path


def plain_command(command: str | None, what: str = "command") -> str | None:
    """A command a shell runs on the instance: not blank, and no control characters but line breaks and tabs (NUL
    would cut it short where the instance passes it on, CR and ESC hide what it does in a log)."""
    if command is None:
        return None
    if not command.strip():
        raise ValueError(f"is blank; accepted: a {what} to run, or omit the field")
    bad = _CONTROL_IN_COMMAND.search(command)
    if bad:
        raise ValueError(f"holds {_control_name(bad.group())}; accepted: a {what} of printable characters (line "
                         "breaks and tabs allowed)")
    return command


def hidden_character(text: str) -> str | None:
    """Why ``text`` would not read as written (None: it does): a control or format character (U+202E RIGHT-TO-LEFT
    OVERRIDE and the other bidirectional controls, zero-width spaces, NUL, ESC: Unicode categories Cc and Cf), a line
    or paragraph separator, a character drawn as nothing (a Hangul filler, the braille blank, a variation selector),
    or a space at either end: ``gpulease.core.printable.hidden``, the one definition."""
    for char in text:
        if hidden(char):
            name = _CONTROL_NAMES.get(char) or unicodedata.name(char, "")
            return (f"holds U+{ord(char):04X}{f' ({name})' if name else ''}, a character that is not shown as "
                    "itself (a control, format, invisible or unassigned character)")
    if text != text.strip():
        return "starts or ends with a space"
    return None


def schema_pattern(*regexes: re.Pattern[str] | str) -> str:
    """The loader's own regex(es), whole-string matched, as one JSON Schema pattern: ``jsonschema`` searches
    (ECMA-262 semantics), so the pattern is anchored with ``^`` and ended with ``(?![\\s\\S])``: neither ``\\Z``
    (not ECMA-262) nor ``$`` (which Python lets match before a trailing newline)."""
    parts = []
    for regex in regexes:
        text = regex.pattern if isinstance(regex, re.Pattern) else regex
        text = text.removeprefix("^")
        for end in ("\\Z", "$"):
            if text.endswith(end) and not text.endswith("\\" + end):
                text = text.removesuffix(end)
                break
        parts.append(text)
    return "^(?:" + "|".join(f"(?:{p})" for p in parts) + ")(?![\\s\\S])"


def any_case(pattern: str) -> str:
    """``pattern`` (letters, digits and regex syntax) matching its letters in either case, without a flag (a JSON
    Schema pattern has none)."""
    return "".join(f"[{c.upper()}{c.lower()}]" if c.isalpha() else c for c in pattern)
