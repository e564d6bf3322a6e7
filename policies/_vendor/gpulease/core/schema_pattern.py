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
