"""The JSON Schema's patterns are the loader's own regexes, whole-string: a trailing newline is refused by both."""

from __future__ import annotations

import jsonschema
import pytest
from pydantic import ValidationError

from components.spec.schema import stack_config_json_schema
from components.spec.workflow import DataSpec
from gpulease.core.schema_pattern import any_case, schema_pattern

DEFS = stack_config_json_schema()["$defs"]


def _valid(definition: str, doc: dict) -> bool:
    return jsonschema.Draft202012Validator({**DEFS[definition], "$defs": DEFS}).is_valid(doc)


def test_a_secret_name_with_a_trailing_newline_is_refused() -> None:
    assert DataSpec.model_validate({"hubTokenSecret": "hub-token"}).hub_token_secret == "hub-token"
    with pytest.raises(ValidationError, match="not a secret name"):
        DataSpec.model_validate({"hubTokenSecret": "hub-token\n"})
    assert not _valid("DataSpec", {"hubTokenSecret": "hub-token\n"})


@pytest.mark.parametrize(("definition", "field", "good"), [
    ("ExperimentSpec", "name", "lora-7b"),
    ("ExperimentSpec", "owner", "alice@example.com"),
    ("SshSpec", "user", "ubuntu"),
    ("DataSourceSpec", "sha256", "ab" * 32),
    ("ImageSpec", "fromStack", "org/project/stack"),
    ("IamSpec", "permissionsBoundary", "arn:aws:iam::123456789012:policy/b"),
])
def test_the_schema_pattern_matches_the_whole_value(definition: str, field: str, good: str) -> None:
    pattern = DEFS[definition]["properties"][field]["pattern"]
    check = jsonschema.Draft202012Validator({"type": "string", "pattern": pattern})
    assert check.is_valid(good)
    assert not check.is_valid(good + "\n"), pattern
    assert not check.is_valid(" " + good), pattern


def test_schema_pattern_alternatives_and_case() -> None:
    pattern = schema_pattern(r"^a\Z", "b$")
    check = jsonschema.Draft202012Validator({"type": "string", "pattern": pattern})
    assert [check.is_valid(s) for s in ("a", "b", "ab", "a\n", "b\n")] == [True, True, False, False, False]
    assert schema_pattern(any_case("usr1")) == "^(?:(?:[Uu][Ss][Rr]1))(?![\\s\\S])"
