"""The files installed with the studio: presets, icons and style sheets.

An installed wheel carries them under ``studio/_data/``; a checkout has them at the repository
root. :func:`data_root` finds a folder in either place and :func:`packaged_text` reads one file,
so every loader (the catalog, the engine constants, the speculative-decoding defaults) looks in
the same places and says the same thing when a file is missing.
"""

from __future__ import annotations

import sys
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from studio.core.errors import StudioError

if TYPE_CHECKING:
    if sys.version_info >= (3, 11):
        from importlib.resources.abc import Traversable
    else:
        from importlib.abc import Traversable

#: The repository root of a checkout (``studio/core/packaged.py`` → two folders up).
_CHECKOUT = Path(__file__).resolve().parents[2]


def data_root(name: str) -> Traversable:
    """The bundled folder ``name`` (``presets``, ``resources``).

    Raises
    ------
    StudioError
        If neither the installed package nor the checkout has it.
    """
    packaged = resources.files("studio").joinpath("_data").joinpath(name)
    if packaged.is_dir():
        return packaged
    checkout = _CHECKOUT / name
    if checkout.is_dir():
        return checkout
    raise StudioError(f"the bundled '{name}' folder is missing from this installation; reinstall layout-studio")


def packaged_text(path: str) -> str:
    """The text (UTF-8) of the bundled file ``path``, e.g. ``presets/engine.json``.

    Raises
    ------
    StudioError
        If the file is missing from the installation, naming it.
    """
    parts = path.split("/")
    packaged = resources.files("studio").joinpath("_data")
    for part in parts:
        packaged = packaged.joinpath(part)
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    checkout = _CHECKOUT.joinpath(*parts)
    if checkout.is_file():
        return checkout.read_text(encoding="utf-8")
    raise StudioError(f"{path} is missing from this installation; reinstall layout-studio")
