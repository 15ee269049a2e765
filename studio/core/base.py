"""Base class for every frozen domain value."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Frozen(BaseModel):
    """Immutable pydantic model that rejects unknown fields.

    Use :meth:`replace` to derive an edited copy (validated again).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)

    def replace(self, **changes):  # noqa: ANN201 - returns Self
        """Return a validated copy with ``changes`` applied."""
        data = self.model_dump()
        for key, value in changes.items():
            data[key] = value.model_dump() if isinstance(value, BaseModel) else value
        return type(self).model_validate(data)
