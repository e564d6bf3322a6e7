"""The likely intended value of a near miss: a misspelt field, a region, a choice."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from pydantic.alias_generators import to_camel


def nearest(value: str, choices: Iterable[str]) -> str | None:
    """The choice ``value`` most likely meant (same letters in another case or snake_case, or a close spelling)."""
    options = list(dict.fromkeys(choices))
    folded = {c.lower().replace("_", "").replace("-", ""): c for c in options}
    key = value.lower().replace("_", "").replace("-", "")
    if key in folded:
        return folded[key]
    camel = to_camel(value)
    if camel in options:
        return camel
    found = difflib.get_close_matches(value, options, n=1, cutoff=0.75)
    if not found:
        lowered = {c.lower(): c for c in options}
        found = [lowered[m] for m in difflib.get_close_matches(value.lower(), list(lowered), n=1, cutoff=0.75)]
    return found[0] if found else None


def nearest_hint(value: str, choices: Iterable[str]) -> str:
    """``" (did you mean X?)"`` for a near miss, empty otherwise."""
    found = nearest(value, choices)
    return f" (did you mean {found}?)" if found is not None and found != value else ""
