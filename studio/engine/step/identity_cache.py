"""A small least-recently-used cache keyed by object identity, for values derived from frozen
domain objects (a model's layer table, a cluster's link skeleton) that the live recompute asks for
on every edit with the very same object."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

K = TypeVar("K")
V = TypeVar("V")


def cached_by_identity(cache: OrderedDict[int, tuple[Any, Any]], obj: K, size: int,
                       build: Callable[[K], V]) -> V:
    """``build(obj)``, kept in ``cache`` under ``id(obj)`` (at most ``size`` entries, oldest out).

    Each entry holds ``obj`` itself, so its id cannot be reused by another object while cached;
    a hit is checked with ``is``.
    """
    hit = cache.get(id(obj))
    if hit is not None and hit[0] is obj:
        cache.move_to_end(id(obj))
        return hit[1]
    value = build(obj)
    cache[id(obj)] = (obj, value)
    while len(cache) > size:
        cache.popitem(last=False)
    return value
