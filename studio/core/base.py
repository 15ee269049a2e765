"""Base class for every frozen domain value."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Frozen(BaseModel):
    """Immutable pydantic model that rejects unknown fields.

    Use :meth:`replace` to derive an edited copy (validated again).

    Schemas are built on first use (``defer_build``), not when the class is defined: a process
    that touches a few models (``layout-studio --version``, ``presets``) does not pay for all of
    them. Validation and serialisation are the same either way.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True, defer_build=True)

    def replace(self, **changes):
        """Return a validated copy with ``changes`` applied.

        The copy's own validators run again (cross-field rules see the change). Unchanged fields,
        and changed ones given as a frozen value of the same class as before, keep their objects:
        they were validated when made and cannot have changed since, so a large cluster is not
        dumped and rebuilt for a one-field edit (and equal parts stay identical, which makes
        comparisons cheap). Any other model value is dumped and validated as data.
        """
        data = {name: getattr(self, name) for name in type(self).model_fields}
        for key, value in changes.items():
            same_kind = isinstance(value, Frozen) and type(value) is type(data.get(key))
            data[key] = value.model_dump() if isinstance(value, BaseModel) and not same_kind else value
        return type(self).model_validate(data)
