"""Prompt-reuse and KV-tier flags: ``--system-prompt-tokens``, ``--turns``, ``--history-tokens``,
``--think-time-s``, ``--prefix-cache on|off``, ``--prefix-routing on|off``, ``--kv-host-gib``, ``--kv-disk-gib``
(``workload.reuse`` and ``serving.kv_tiers`` of the project; docs/cli.md "Prefix caching")."""

from __future__ import annotations

import argparse

from studio.commands.options.arg_types import non_negative_float
from studio.commands.options.feature_args import non_negative_int
from studio.core.errors import StudioError
from studio.core.settings.reuse import KVTiers, Reuse

_REUSE_FLAGS = (("system_prompt_tokens", "system_prompt_tokens"), ("turns", "turns"),
                ("history_tokens", "history_tokens_per_turn"), ("think_time_s", "think_time_s"))
_TIER_FLAGS = (("kv_host_gib", "host_gib"), ("kv_disk_gib", "disk_gib"))


def add_reuse_args(parser: argparse.ArgumentParser) -> None:
    """Add the prompt-reuse and KV-tier flags (applied by :func:`apply_reuse_args` and
    :func:`apply_tier_args`)."""
    g = parser.add_argument_group("prompt reuse and KV tiers (prefix caching)")
    g.add_argument("--system-prompt-tokens", type=non_negative_int, metavar="N",
                   help="tokens of a system prompt every request shares (part of --isl)")
    g.add_argument("--turns", type=non_negative_int, metavar="N", help="turns per conversation (1 = single-shot)")
    g.add_argument("--history-tokens", type=non_negative_int, metavar="N",
                   help="tokens a conversation's history grows by per turn (message + answer)")
    g.add_argument("--think-time-s", type=non_negative_float, metavar="S", help="mean seconds between a user's turns")
    g.add_argument("--prefix-cache", choices=("on", "off"), help="automatic prefix caching (default: the engine's)")
    g.add_argument("--prefix-routing", choices=("on", "off"),
                   help="a router sends requests sharing a document to the replica holding it (default off)")
    g.add_argument("--kv-host-gib", type=non_negative_float, metavar="G", help="KV cache in host DRAM per node, GiB")
    g.add_argument("--kv-disk-gib", type=non_negative_float, metavar="G", help="KV cache on local NVMe per node, GiB")


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _replace(obj, changes: dict[str, object], flags: dict[str, str]):
    from pydantic import ValidationError

    from studio.io.project_file import validation_message

    try:
        return obj.replace(**changes)
    except ValidationError as exc:
        shown = {k: ("on" if v else "off") if isinstance(v, bool) else v for k, v in changes.items()}
        named = " ".join(f"{flags[k]} {shown[k]}" for k in changes)
        raise StudioError(f"{named}: {validation_message(exc)}") from None


def apply_reuse_args(args: argparse.Namespace, reuse: Reuse) -> Reuse:
    """``reuse`` with the reuse flags given (the same object when none is)."""
    changes = {field: getattr(args, flag) for flag, field in _REUSE_FLAGS if getattr(args, flag, None) is not None}
    if not changes:
        return reuse
    if changes.get("turns") == 0:
        raise StudioError("--turns: a conversation has at least 1 turn, got 0")
    return _replace(reuse, changes, {field: _flag(flag) for flag, field in _REUSE_FLAGS})


def apply_tier_args(args: argparse.Namespace, tiers: KVTiers) -> KVTiers:
    """``tiers`` with ``--prefix-cache`` / ``--prefix-routing`` / ``--kv-host-gib`` / ``--kv-disk-gib`` (the same object when
    none is given)."""
    changes: dict[str, object] = {
        field: getattr(args, flag) for flag, field in _TIER_FLAGS if getattr(args, flag, None) is not None
    }
    pc = getattr(args, "prefix_cache", None)
    if pc is not None:
        changes["prefix_cache"] = pc == "on"
    routing = getattr(args, "prefix_routing", None)
    if routing is not None:
        changes["prefix_routing"] = routing == "on"
    if not changes:
        return tiers
    flags = {field: _flag(flag) for flag, field in _TIER_FLAGS} | {"prefix_cache": "--prefix-cache",
                                                                      "prefix_routing": "--prefix-routing"}
    return _replace(tiers, changes, flags)
