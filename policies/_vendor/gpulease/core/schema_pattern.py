"""A model's own regex as a JSON Schema pattern, so that the schema and the validator share one definition."""

from __future__ import annotations

import re


def schema_pattern(*regexes: re.Pattern[str] | str) -> str:
    """The regex(es) a validator matches the whole value with, as one JSON Schema pattern: ``jsonschema`` searches
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


def any_case(words: str) -> str:
    """``words`` (letters, digits and regex syntax without escapes or classes) matching its letters in either case,
    without a flag (a JSON Schema pattern has none)."""
    return "".join(f"[{c.upper()}{c.lower()}]" if c.isalpha() else c for c in words)


PY_SPACE = r"\t\n\x0b\x0c\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
"""Python's whitespace (``str.isspace``, what ``str.strip`` removes), spelled out for a class: ``\\s`` means another
set in each engine (Python's lacks U+FEFF, ECMA-262's has it and lacks U+001C-U+001F and U+0085)."""
ANY_SPACE = PY_SPACE + r"\ufeff"
"""Whitespace to either engine (Python's and ECMA-262's ``\\s`` together), spelled out for a class."""


_SYNTAX = frozenset("^$\\.*+?()[]{}|/")


def literal(text: str) -> str:
    """``text`` matched as itself, in a pattern both Python and ECMA-262 with the ``u`` flag read: only syntax
    characters escaped (``re.escape`` escapes ``-`` too, and ``\\-`` outside a class is an error under ``u``)."""
    return "".join("\\" + c if c in _SYNTAX else c for c in text)
