"""The rules of an experiment's own ``tags`` (``ExperimentSpec._tags``), as the JSON Schema states them too."""

from __future__ import annotations

from typing import Any

from gpulease.core import vocabulary as v
from gpulease.core.schema_pattern import any_case, schema_pattern

RESERVED_TAG_PREFIXES = ("aws:", "aliyun", "acs:")
"""Key prefixes the clouds keep for themselves, in any case (``gpulease:`` is the kit's own, as written)."""
TAGS_SCHEMA: dict[str, Any] = {
    "propertyNames": {"minLength": 1, "maxLength": v.TAG_KEY_MAX_LEN, "pattern": schema_pattern(v.TAG_VALUE_PATTERN),
                      "not": {"pattern": "^(?:" + "|".join([v.TAG_PREFIX, *map(any_case, RESERVED_TAG_PREFIXES)]) + ")"}},
    "additionalProperties": {"type": "string", "maxLength": v.TAG_VALUE_MAX_LEN,
                             "pattern": schema_pattern(v.TAG_VALUE_PATTERN)},
}
"""JSON Schema of the tags: a key of 1-128 tag characters without a reserved prefix, a value of at most 256."""
