"""The bundled examples by id: the example projects (``presets/examples/*.json``) and the sample
input files (``presets/examples/samples/*.txt``: ``nvidia-smi topo -m`` outputs and nccl-tests
logs), so that a user of the installed wheel can name one wherever a command takes a PROJECT file
(``layout-studio sweep l40s-8x-llama-70b-fp8``) or an input file
(``layout-studio import-topo topo-h100-8gpu-nvswitch ...``).

A file that exists always wins over an example of the same name. Each sample starts with comment
lines (ignored by both readers): ``# Layout Studio sample: <what it is>``, its source, and
``# Try: <a command line>``.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from studio.core.errors import StudioError
from studio.io.presets import example_paths, presets_root

if TYPE_CHECKING:
    if sys.version_info >= (3, 11):
        from importlib.resources.abc import Traversable
    else:
        from importlib.abc import Traversable

#: The folder of the sample input files, under ``presets/examples/``.
SAMPLES = "samples"

#: What a sample is, by the start of its id.
SAMPLE_KINDS = {"topo-": "nvidia-smi topo -m", "nccl-": "nccl-tests log"}

_TITLE = "# Layout Studio sample:"
_TRY = "# Try:"


@dataclass(frozen=True)
class Example:
    """One bundled example: ``id`` to name it by, ``kind`` ("project" or a sample kind of
    :data:`SAMPLE_KINDS`), a one-line ``title`` and a command line to ``try``."""

    id: str
    kind: str
    title: str
    try_command: str


def sample_paths() -> dict[str, Traversable]:
    """The bundled sample input files by id (file stem)."""
    root = presets_root() / "examples" / SAMPLES
    if not root.is_dir():
        return {}
    return {p.name[:-4]: p for p in root.iterdir() if p.name.endswith(".txt")}


def _sample_kind(sample_id: str) -> str:
    return next((kind for prefix, kind in SAMPLE_KINDS.items() if sample_id.startswith(prefix)), "sample")


def _sample_example(sample_id: str, node: Traversable) -> Example:
    title = try_command = ""
    for line in node.read_text(encoding="utf-8").splitlines()[:12]:
        if line.startswith(_TITLE):
            title = line[len(_TITLE):].strip()
        elif line.startswith(_TRY):
            try_command = line[len(_TRY):].strip()
    return Example(sample_id, _sample_kind(sample_id), title, try_command)


def _project_example(example_id: str, node: Traversable) -> Example:
    raw = json.loads(node.read_text(encoding="utf-8"))  # the name only: no validation needed
    return Example(example_id, "project", str(raw.get("name") or example_id), f"layout-studio sweep {example_id}")


def list_examples() -> list[Example]:
    """Every bundled example: the projects first, then the samples, each sorted by id."""
    projects = sorted(example_paths().items())
    samples = sorted(sample_paths().items())
    return [_project_example(i, n) for i, n in projects] + [_sample_example(i, n) for i, n in samples]


def example_text(example_id: str) -> str:
    """The text of the bundled example ``example_id`` (a project's JSON or a sample's lines).

    Raises
    ------
    StudioError
        No example has that id (the message lists them).
    """
    node = example_paths().get(example_id) or sample_paths().get(example_id)
    if node is None:
        raise StudioError(f"no bundled example '{example_id}'; {_known()}")
    return node.read_text(encoding="utf-8")


def _known() -> str:
    ids = sorted(example_paths()) + sorted(sample_paths())
    return "bundled examples: " + ", ".join(ids) + " (`layout-studio examples` lists them)"


def project_example(text: str) -> Traversable | None:
    """The bundled example project named ``text``, when no file of that name exists."""
    if Path(text).exists():
        return None
    return example_paths().get(text)


def input_file(text: str, what: str, prefix: str = "") -> str:
    """The path to read for an input-file argument: ``text`` itself when such a file exists (or
    it is ``-``, standard input), else the bundled sample of that id.

    ``prefix`` (a key of :data:`SAMPLE_KINDS`) picks the samples the message offers.

    Raises
    ------
    StudioError
        Neither a file nor a sample of that name (the message names the argument and the samples).
    """
    if text == "-" or Path(text).exists():
        return text
    node = sample_paths().get(text)
    if node is not None:
        return str(node)
    samples = ", ".join(sorted(i for i in sample_paths() if i.startswith(prefix)))
    raise StudioError(
        f"no such {what} '{text}' (nor a bundled sample of that name: {samples}; `layout-studio examples` lists them)"
    )


def missing_project_message(text: str) -> str:
    """The message for a PROJECT argument that is neither a file nor an example id."""
    return f"no such project file '{text}' (nor a bundled example: {', '.join(sorted(example_paths()))})"
