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

The results the engine hands out (:mod:`studio.engine.plan.results`) stay dataclasses — their callers use
:func:`dataclasses.replace`, :func:`dataclasses.fields` and :func:`dataclasses.asdict` on them — made
with :func:`frozen_result`: a frozen dataclass whose ``__init__``, ``__repr__``, ``__eq__`` and
``__hash__`` are this module's generic ones instead of compiled per class.
"""

from __future__ import annotations

import dataclasses
from dataclasses import MISSING, FrozenInstanceError
from typing import Any, ClassVar, TypeVar

from typing_extensions import Self, dataclass_transform

T = TypeVar("T")


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


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field,))
def frozen_result(cls: type[T]) -> type[T]:
    """``@dataclass(frozen=True)`` without the per-class ``exec``: the class is a dataclass
    (:func:`dataclasses.fields`, :func:`~dataclasses.replace` and :func:`~dataclasses.asdict` work;
    ``field(default_factory=…, repr=False, compare=False)`` as usual) whose construction, ``repr``,
    equality, hashing and refusal to be assigned behave as a frozen dataclass's, by the generic
    methods below. Instances keep their fields in ``__dict__`` (no ``__slots__``)."""
    dataclasses.dataclass(init=False, repr=False, eq=False)(cls)
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]  # a dataclass now
    c: Any = cls
    c._names = tuple(f.name for f in fields)
    c._name_set = frozenset(c._names)
    c._defaults = {f.name: f.default for f in fields if f.default is not MISSING}
    c._factories = {f.name: f.default_factory for f in fields if f.default_factory is not MISSING}
    c._shown = tuple(f.name for f in fields if f.repr)
    c._compared = tuple(f.name for f in fields if f.compare)
    setattr(c, "__match_args__", c._names)  # noqa: B010  # mypy refuses the plain assignment
    c.__init__ = _result_init
    c.__repr__ = _result_repr
    c.__eq__ = _result_eq
    c.__hash__ = _result_hash
    c.__setattr__ = _result_refuse_set
    c.__delattr__ = _result_refuse_delete
    return cls


def _result_init(self: Any, *args: Any, **kwargs: Any) -> None:
    if not args and kwargs.keys() == self._name_set:  # every field by keyword: the usual call
        self.__dict__.update(kwargs)
        return
    names = self._names
    if len(args) > len(names):
        raise TypeError(f"{type(self).__name__}() takes {len(names)} fields but {len(args)} were given")
    values = dict(zip(names, args, strict=False))
    for name, value in kwargs.items():
        if name not in names:
            raise TypeError(f"{type(self).__name__}() got an unexpected keyword argument {name!r}")
        if name in values:
            raise TypeError(f"{type(self).__name__}() got multiple values for argument {name!r}")
        values[name] = value
    store = object.__setattr__
    for name in names:
        if name in values:
            store(self, name, values[name])
        elif name in self._defaults:
            store(self, name, self._defaults[name])
        elif name in self._factories:
            store(self, name, self._factories[name]())
        else:
            raise TypeError(f"{type(self).__name__}() missing required argument: {name!r}")


_REPR_RUNNING: set[int] = set()


def _result_repr(self: Any) -> str:
    key = id(self)
    if key in _REPR_RUNNING:  # a result that holds itself, as dataclasses' recursive_repr
        return "..."
    _REPR_RUNNING.add(key)
    try:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._shown)
    finally:
        _REPR_RUNNING.discard(key)
    return f"{type(self).__qualname__}({inner})"


def _result_eq(self: Any, other: Any) -> bool:
    if other.__class__ is not self.__class__:
        return NotImplemented
    names = self._compared
    return tuple(getattr(self, n) for n in names) == tuple(getattr(other, n) for n in names)


def _result_hash(self: Any) -> int:
    return hash(tuple(getattr(self, n) for n in self._compared))


def _result_refuse_set(self: Any, name: str, value: Any) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _result_refuse_delete(self: Any, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")
