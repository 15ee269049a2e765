"""No folder of ``studio`` holds more than :data:`MOST_MODULES` modules at one level.

A flat folder of thirty modules hides which of them belong together; past about fifteen a reader
can no longer see the parts of a package from its listing, so such a folder is split into
sub-packages named after its parts (see docs/architecture.md).
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STUDIO = ROOT / "studio"

#: The most modules (``*.py`` files other than ``__init__.py``) one package may hold at one level.
MOST_MODULES = 15


def crowded_folders(studio: Path = STUDIO, most: int = MOST_MODULES) -> dict[str, int]:
    """Folder (relative to the folder holding ``studio``) → its module count, for every package
    under ``studio`` that holds more than ``most`` modules at one level."""
    crowded = {}
    for init in sorted(studio.rglob("__init__.py")):
        folder = init.parent
        count = sum(1 for p in folder.glob("*.py") if p.name != "__init__.py")
        if count > most:
            crowded[folder.relative_to(studio.parent).as_posix()] = count
    return crowded


def test_no_folder_of_studio_is_crowded():
    assert crowded_folders() == {}


def test_the_count_can_fail(tmp_path):
    """The check sees a crowded package at any depth, and counts neither ``__init__`` nor the
    modules of its sub-packages."""
    deep = tmp_path / "studio" / "engine" / "step"
    deep.mkdir(parents=True)
    for folder in (tmp_path / "studio", tmp_path / "studio" / "engine", deep):
        (folder / "__init__.py").write_text("", encoding="utf-8")
    for i in range(MOST_MODULES + 1):
        (deep / f"m{i}.py").write_text("", encoding="utf-8")
    for i in range(MOST_MODULES):
        (tmp_path / "studio" / "engine" / f"n{i}.py").write_text("", encoding="utf-8")
    assert crowded_folders(tmp_path / "studio") == {"studio/engine/step": MOST_MODULES + 1}
