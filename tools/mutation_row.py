"""One row of ``make mutate``: an edit to the safety code, and the tests that must fail when it is made."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mutation:
    area: str
    path: str
    find: str
    replace: str
    tests: tuple[str, ...]
    rule: str
