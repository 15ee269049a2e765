"""Base class for every frozen domain value."""

from __future__ import annotations

import typing

from pydantic import BaseModel, ConfigDict

#: Models whose schema is being built now (guards the parts-first walk against cycles).
_BUILDING: set[type] = set()


def _frozen_parts(tp: object, out: list[type[Frozen]]) -> list[type[Frozen]]:
    """The :class:`Frozen` classes named in the annotation ``tp`` (``X``, ``X | None``,
    ``tuple[X, ...]``, ``dict[str, X]``, ...), appended to ``out``; unresolved names are skipped."""
    if typing.get_origin(tp) is None and isinstance(tp, type):
        if issubclass(tp, Frozen):
            out.append(tp)
        return out
    for arg in typing.get_args(tp):
        _frozen_parts(arg, out)
    return out


class Frozen(BaseModel):
    """Immutable pydantic model that rejects unknown fields.

    Use :meth:`replace` to derive an edited copy (validated again).

    Schemas are built on first use (``defer_build``), not when the class is defined: a process
    that touches a few models (``layout-studio --version``, ``presets``) does not pay for all of
    them. Validation and serialisation are the same either way. A model builds its parts' schemas
    first (:meth:`model_rebuild`), so that a project and the cluster inside it share one schema of
    the cluster instead of each generating its own.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True, defer_build=True)

    @classmethod
    def model_rebuild(
        cls,
        *,
        force: bool = False,
        raise_errors: bool = True,
        _parent_namespace_depth: int = 2,
        _types_namespace: typing.Any = None,
    ) -> bool | None:
        """:meth:`pydantic.BaseModel.model_rebuild`, after building every :class:`Frozen` part
        named in the fields that is not built yet.

        Pydantic reuses a part's finished schema when it builds the whole, but generates an unbuilt
        part's schema inline and throws it away, so building the whole first and a part later
        (the bundled project, then a model preset on its own) would build the part twice.
        """
        if (force or not cls.__pydantic_complete__) and cls not in _BUILDING:
            _BUILDING.add(cls)
            try:
                parts: list[type[Frozen]] = []
                for info in cls.__pydantic_fields__.values():
                    _frozen_parts(info.annotation, parts)
                for part in dict.fromkeys(parts):
                    if part is not cls and not part.__pydantic_complete__ and part not in _BUILDING:
                        part.model_rebuild(raise_errors=False)
            finally:
                _BUILDING.discard(cls)
        return super().model_rebuild(
            force=force,
            raise_errors=raise_errors,
            _parent_namespace_depth=_parent_namespace_depth + 1,
            _types_namespace=_types_namespace,
        )

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
