"""Records: the engine's internal figures (layout costs, step times, collectives, shapes …) as
plain classes that cost nothing to define.

A :func:`dataclasses.dataclass` compiles its ``__init__``, ``__repr__``, ``__eq__`` (and for a frozen
one ``__hash__``, ``__setattr__``, ``__delattr__``) with ``exec`` when the module is imported: about
1 ms per class, ~15 ms of every command that loads the engine for a dozen internal records that
are built and read, never printed or compared. A :class:`Record` subclass declares its fields the
same way (annotations, defaults as values) and shares this module's generic methods instead:

* ``Rec(a, b=…)``: positional values in field order, then keywords; a field left out reads its
  default (the class attribute). Nothing is checked at run time — mypy checks every construction
  (``dataclass_transform``), as it does for a dataclass;
* ``class Rec(Record, frozen=True)``: fields cannot be assigned or deleted after construction
  (:class:`dataclasses.FrozenInstanceError`); equal when of the same class with equal fields, and
  hashable, as a frozen dataclass; a mutable record compares by identity;
* :meth:`Record.replace` (for :func:`dataclasses.replace`), :meth:`Record.values` (the fields as a
  dict) and a dataclass-like ``repr``.

The results the engine hands out (:mod:`studio.engine.results`) stay dataclasses: their callers use
:func:`dataclasses.replace`, :func:`dataclasses.fields` and :func:`dataclasses.asdict` on them.
"""

from __future__ import annotations

from dataclasses import FrozenInstanceError
from typing import Any, ClassVar

from typing_extensions import Self, dataclass_transform


@dataclass_transform()
class Record:
    """Base of a record: subclasses declare fields as annotations (see the module docstring)."""

    #: Field names in declaration order (a subclass's own after its bases').
    _fields: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, frozen: bool = False, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = tuple(name for name, kind in cls.__dict__.get("__annotations__", {}).items()
                    if not str(kind).startswith(("ClassVar", "typing.ClassVar")))
        cls._fields = tuple(dict.fromkeys(cls._fields + own))
        if frozen:
            cls.__setattr__ = _refuse_set  # type: ignore[method-assign, assignment]
            cls.__delattr__ = _refuse_delete  # type: ignore[method-assign, assignment]
            cls.__eq__ = _equal  # type: ignore[method-assign, assignment]
            cls.__hash__ = _hash  # type: ignore[method-assign, assignment]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        values = self.__dict__  # written directly: a frozen record refuses setattr
        if args:
            if len(args) > len(self._fields):
                raise TypeError(f"{type(self).__name__} takes {len(self._fields)} fields, got {len(args)}")
            values.update(zip(self._fields, args, strict=False))  # the first len(args) fields
        values.update(kwargs)

    def values(self) -> dict[str, Any]:
        """The fields and their values, in declaration order."""
        return {name: getattr(self, name) for name in self._fields}

    def replace(self, **changes: Any) -> Self:
        """A copy with ``changes`` applied (:func:`dataclasses.replace` for a record)."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.__dict__.update(changes)
        return new

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{type(self).__qualname__}({inner})"


def _astuple(rec: Record) -> tuple[Any, ...]:
    return tuple(getattr(rec, name) for name in rec._fields)


def _equal(self: Record, other: object) -> bool:
    if other.__class__ is not self.__class__:
        return NotImplemented
    return _astuple(self) == _astuple(other)


def _hash(self: Record) -> int:
    return hash(_astuple(self))


def _refuse_set(self: Record, name: str, value: Any) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _refuse_delete(self: Record, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")
