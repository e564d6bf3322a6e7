"""How a message shows what the user gave: a file by the path they would type for it, a value they gave capped
and with its control characters written out.

A refusal echoes the user's own value back (``'spto' is not one of the choices``); a value of thousands of
characters would bury the message, and one holding ESC or CR would change what the terminal shows. ``echo`` is
that value as a message quotes it (``repr``, whose escapes cover every non-printable character: ``\\x1b``,
``\\u202e``), cut to ``ECHO_MAX`` characters with ``…``. ``capped_quotes`` does the same to every quoted value of
a message already written (the parser's own ``invalid choice: '...'``), at the one place each message is printed.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from gpulease.core.printable import escaped, invisible

ECHO_MAX = 80
"""The most characters of a user's value a message repeats (the quotes and the ``…`` included)."""
ELLIPSIS = "…"
_PARTIAL_ESCAPE = re.compile(r"\\(?:x[0-9a-fA-F]?|u[0-9a-fA-F]{0,3}|U[0-9a-fA-F]{0,7})?\Z")

# A value a message quotes: 'single' (repr's usual form) or "double" (JSON's, or repr's for text holding a '),
# escapes included; never an apostrophe inside a word ("stack's").
_QUOTED = re.compile(r"""(?<![\w'"])('(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")(?![\w'"])""")


def capped(text: str, limit: int = ECHO_MAX) -> str:
    """``text`` cut to ``limit`` characters, the last one ``…``, when it is longer (never inside a ``\\x..``
    escape: a cut escape would read as another character)."""
    if len(text) <= limit:
        return text
    return _PARTIAL_ESCAPE.sub("", text[: limit - 1]) + ELLIPSIS


def echo(value: Any, limit: int = ECHO_MAX) -> str:
    """``value`` as a message quotes it: its ``repr`` (escaping every control and format character), an invisible
    character written out too, capped at ``limit`` characters with the closing quote kept."""
    text = repr(value)
    if isinstance(value, str) and any(invisible(c) for c in value):
        text = escaped(text, {})
    return cap_quoted(text, limit)


def cap_quoted(text: str, limit: int = ECHO_MAX) -> str:
    """``capped``, keeping the closing quote of a quoted ``text`` (``'aaa…'``)."""
    if len(text) <= limit or len(text) < 2 or text[0] not in "'\"" or text[-1] != text[0]:
        return capped(text, limit)
    return capped(text[:-1], limit - 1) + text[-1]


def capped_quotes(message: str, limit: int = ECHO_MAX) -> str:
    """``message`` with each quoted value longer than ``limit`` characters capped (``echo``'s rule), and any
    control character left unquoted written out."""
    return escaped(_QUOTED.sub(lambda m: cap_quoted(m.group(1), limit), message), {}, keep="\n\t")


def shown_path(path: str | Path) -> str:
    """A file as the user would type it here: relative to the working folder when it is inside it
    (``Pulumi.dev.yaml``, ``stacks/Pulumi.dev.yaml``), else its absolute path."""
    text = os.fspath(path)
    try:
        here = Path.cwd()
        absolute = Path(os.path.abspath(text))
        return str(absolute.relative_to(here)) if absolute.is_relative_to(here) else str(absolute)
    except (OSError, ValueError):  # no working folder any more (deleted under the process)
        return text
