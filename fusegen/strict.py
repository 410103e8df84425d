"""The one strict pydantic base of every model that validates a file fusegen reads."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Strict(BaseModel):
    """Unknown keys are errors, values are not coerced (a quoted number stays a string), and a validated
    value cannot change afterwards."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
