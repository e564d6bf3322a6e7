"""Text a stack file gives that the instance passes on (paths, commands): no control characters a file name, a
shell or a log line would read differently."""

from __future__ import annotations

import re
import unicodedata

from gpulease.core.printable import INVISIBLE, hidden
from gpulease.core.schema_pattern import PY_SPACE
from gpulease.core.unicode_table import HIDDEN

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



def _class_range(a: int, b: int) -> str:
    # \uXXXX reads alike in Python and ECMA-262; a character beyond U+FFFF goes in as itself (ECMA-262 writes it
    # \u{...} under the u flag, which Python does not read).
    one = (lambda c: f"\\u{c:04x}") if b <= 0xFFFF else chr
    return one(a) if a == b else f"{one(a)}-{one(b)}"


HIDDEN_SCHEMA = {"not": {"type": "string", "pattern": "[" + "".join(
    _class_range(a, b) for a, b in sorted(HIDDEN + INVISIBLE)) + f"]|^[{PY_SPACE}]|[{PY_SPACE}](?![\\s\\S])"}}
"""JSON Schema of ``hidden_character``: no hidden character, no space at either end."""
PATH_SCHEMA = {"not": {"type": "string", "pattern": _CONTROL.pattern}}
"""JSON Schema of ``plain_path``: no control character."""
COMMAND_SCHEMA = {"pattern": f"[^{PY_SPACE}]", "not": {"type": "string", "pattern": _CONTROL_IN_COMMAND.pattern}}
"""JSON Schema of ``plain_command``: not blank, no control character but line breaks and tabs."""
