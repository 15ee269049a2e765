"""Paths of the golden project files the robustness tests read (nothing from shared/ at run time)."""

from __future__ import annotations

from pathlib import Path

GOLDEN = Path(__file__).parent / "golden"


def golden_files(version: int = 1) -> list[Path]:
    """Every golden project file of schema ``version``, sorted by name."""
    return sorted((GOLDEN / f"v{version}").glob("*.json"))


def example_files() -> list[Path]:
    """Bundled example projects (``presets/examples``); empty until they exist."""
    root = Path(__file__).resolve().parents[2] / "presets" / "examples"
    return sorted(root.glob("*.json")) if root.is_dir() else []
