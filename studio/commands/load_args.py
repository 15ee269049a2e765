"""Turn the load flags of :func:`studio.commands.common.add_load_args` into the workload's
:class:`~studio.core.workload.Load`.

Precedence follows the other flags: the PROJECT file's load, with each flag given overriding its
value. ``--rate``, ``--concurrency`` and ``--offline`` choose the mode; the other flags keep it.
"""

from __future__ import annotations

import argparse

from pydantic import ValidationError

from studio.core.errors import StudioError
from studio.core.workload import MAX_REQUESTS, LengthDistribution, Load, Workload

#: Load field -> the flag that sets it (for messages).
FLAGS = {
    "rate_per_s": "--rate",
    "concurrency": "--concurrency",
    "num_requests": "--num-requests",
    "seed": "--seed",
    "arrival": "--arrival",
    "isl_dist": "--isl-spread/--isl-histogram",
    "osl_dist": "--osl-spread/--osl-histogram",
}


def _lengths(args: argparse.Namespace, which: str, current: LengthDistribution) -> LengthDistribution:
    spread = getattr(args, f"{which}_spread", None)
    path = getattr(args, f"{which}_histogram", None)
    if path is not None:
        from studio.io.lengths import load_histogram

        try:
            return load_histogram(path)
        except StudioError as exc:
            raise StudioError(f"--{which}-histogram {exc}") from None
    if spread is not None:
        if spread >= 1.0:
            raise StudioError(f"--{which}-spread must be in [0, 1) (a relative half-width), got {spread:g}")
        return LengthDistribution(kind="uniform", spread=spread) if spread > 0 else LengthDistribution()
    return current


def load_from_args(args: argparse.Namespace, base: Load) -> Load:
    """``base`` with every load flag in ``args`` applied.

    Raises
    ------
    StudioError
        A value out of range or a flag that does not fit the mode, naming the flag.
    """
    changes: dict = {}
    if getattr(args, "rate", None) is not None:
        changes.update(mode="rate", rate_per_s=args.rate)
    elif getattr(args, "concurrency", None) is not None:
        changes.update(mode="concurrency", concurrency=args.concurrency)
    elif getattr(args, "offline", None):
        changes["mode"] = "offline"
    arrival = getattr(args, "arrival", None)
    if arrival is not None:
        if changes.get("mode", base.mode) != "rate":
            raise StudioError("--arrival applies to a request rate; add --rate R (requests per second)")
        changes["arrival"] = arrival
    n = getattr(args, "num_requests", None)
    if n is not None:
        if n > MAX_REQUESTS:
            raise StudioError(f"--num-requests must be 1..{MAX_REQUESTS:,}, got {n:,}")
        changes["num_requests"] = n
    seed = getattr(args, "seed", None)
    if seed is not None:
        if not 0 <= seed <= 2**31 - 1:
            raise StudioError(f"--seed must be 0..2147483647, got {seed}")
        changes["seed"] = seed
    for which in ("isl", "osl"):
        dist = _lengths(args, which, getattr(base, f"{which}_dist"))
        if dist is not getattr(base, f"{which}_dist"):
            changes[f"{which}_dist"] = dist
    if not changes:
        return base
    try:
        return base.replace(**changes)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = str(err["loc"][0]) if err.get("loc") else ""
        msg = str(err.get("msg", "")).removeprefix("Value error, ")
        raise StudioError(f"{FLAGS.get(field, 'load')}: {msg}") from None


def apply_load_args(args: argparse.Namespace, workload: Workload) -> Workload:
    """``workload`` with its load replaced by :func:`load_from_args` (the same object if no flag)."""
    load = load_from_args(args, workload.load)
    return workload if load is workload.load else workload.replace(load=load)
