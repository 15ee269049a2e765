"""Helpers for the CLI tests: run ``studio.cli.main`` in process and capture its output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from studio.cli import main

GOLDEN = Path(__file__).parent / "golden"


class Result:
    """Exit code and captured streams of one CLI run."""

    def __init__(self, code: int, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err

    def json(self):
        return json.loads(self.out)


@pytest.fixture
def cli(capsys):
    """``cli("plan", "--json")`` runs the command line and returns a :class:`Result`."""

    def run(*argv: str) -> Result:
        code = main(list(argv))
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


def golden_lines(name: str) -> list[str]:
    """Non-empty, non-comment lines of a golden file."""
    text = (GOLDEN / name).read_text(encoding="utf-8")
    return [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]


def dot_paths(obj, prefix: str = "") -> set[str]:
    """Every key of a nested JSON object as a dot path (lists: ``name[]`` then the item keys)."""
    out: set[str] = set()
    if isinstance(obj, dict):
        for k, v in obj.items():
            path = f"{prefix}.{k}" if prefix else k
            out.add(path)
            out |= dot_paths(v, path)
    elif isinstance(obj, list) and obj and isinstance(obj[0], dict):
        out.add(prefix + "[]")
        for item in obj:
            out |= dot_paths(item, prefix + "[]")
    return out
