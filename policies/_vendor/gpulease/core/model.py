"""The base of every model a user writes (the stack spec and its sections): camelCase keys, nothing unknown."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class SpecModel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
        # .inf / .nan are never a budget, a price or a size: NaN compares false with every limit and inf
        # reaches the cloud as "inf".
        allow_inf_nan=False,
    )
