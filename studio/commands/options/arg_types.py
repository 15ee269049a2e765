"""Argument types of the command line: the parsers argparse calls on one flag's text, each
refusing a bad value with a message that names what is expected."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def bounded_int(low: int, high: int) -> Callable[[str], int]:
    """argparse type factory: a whole number in ``[low, high]``; the message names both limits."""

    def parse(text: str) -> int:
        try:
            value: int | None = int(text)
        except ValueError:
            value = None
        if value is None or not low <= value <= high:
            raise argparse.ArgumentTypeError(f"expected a whole number from {low:,} to {high:,}, got {text[:40]!r}")
        return value

    parse.__name__ = "whole number"
    return parse


def positive_int(text: str) -> int:
    """argparse type: an integer ≥ 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number ≥ 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number ≥ 1, got {value}")
    return value


def _finite_float(text: str, bound: str) -> float:
    """``text`` as a finite number meeting ``bound`` (``"> 0"`` or ``"≥ 0"``), else an argparse error
    that names the bound."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number {bound}, got {text!r}") from None
    meets = value > 0 if bound == "> 0" else value >= 0
    if not (meets and value < float("inf")):
        raise argparse.ArgumentTypeError(f"expected a finite number {bound}, got {text}")
    return value


def positive_float(text: str) -> float:
    """argparse type: a finite number > 0."""
    return _finite_float(text, "> 0")


def non_negative_float(text: str) -> float:
    """argparse type: a finite number ≥ 0."""
    return _finite_float(text, "≥ 0")


def batch_value(text: str) -> int | str:
    """argparse type: ``auto`` or an integer ≥ 1."""
    if text.strip().lower() == "auto":
        return "auto"
    try:
        return positive_int(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"expected 'auto' or a whole number ≥ 1, got {text!r}") from None


def int_list(text: str) -> tuple[int, ...]:
    """argparse type: comma-separated integers ≥ 1, e.g. ``63,63``."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts:
        raise argparse.ArgumentTypeError("expected comma-separated layer counts, e.g. 63,63")
    try:
        return tuple(positive_int(p) for p in parts)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated whole numbers ≥ 1 (e.g. 63,63), got {text!r}"
        ) from None
