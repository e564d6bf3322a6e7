"""The deadline rule never holds a deadline that is not a time: a non-finite ``max_runtime_hours`` (from damaged
settings that got past the reader) ends the instance at its first boot, and a tag read as NaN or infinity is
treated as unread (the deadline held stays)."""

from __future__ import annotations

import math

import pytest

from instance.deadline_rule import DeadlineRule

FIRST_BOOT = 1_790_000_000.0
SETTINGS = {"deadline_tag": "gpulease:expires-at", "final_sync_minutes": 5, "warn_minutes": 30}


def rule(hours: object, read_value: float = FIRST_BOOT + 7200) -> tuple[DeadlineRule, list[tuple[str, str]]]:
    decisions: list[tuple[str, str]] = []
    made = DeadlineRule({**SETTINGS, "max_runtime_hours": hours}, {"first_boot": FIRST_BOOT},
                        lambda: (read_value, "the tag"), lambda: None, lambda k, m: decisions.append((k, m)))
    return made, decisions


@pytest.mark.parametrize("hours", [float("nan"), float("inf"), float("-inf"), -1, "8", True, None])
def test_a_runtime_that_is_not_a_number_of_hours_ends_at_first_boot(hours: object) -> None:
    made, _ = rule(hours)
    assert made.deadline == FIRST_BOOT
    assert "is not a time: ending now" in made.source


def test_a_finite_runtime_gives_first_boot_plus_the_hours() -> None:
    made, _ = rule(8)
    assert made.deadline == FIRST_BOOT + 8 * 3600


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_a_tag_read_as_a_non_finite_number_keeps_the_deadline_held(value: float) -> None:
    made, decisions = rule(8, read_value=value)
    made.refresh()
    assert made.deadline == FIRST_BOOT + 8 * 3600 and math.isfinite(made.final_at())
    assert decisions and decisions[0][0] == "deadline-unread" and "not a time" in decisions[0][1]
