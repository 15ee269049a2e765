"""``studio.core`` exports its names lazily; each must resolve to the defining module's object."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import studio.core

ROOT = Path(__file__).resolve().parents[2]


def test_all_matches_the_lazy_table():
    assert sorted(studio.core.__all__) == sorted(studio.core._EXPORTS)


@pytest.mark.parametrize("name", studio.core.__all__)
def test_each_name_is_the_submodules_object(name):
    module = importlib.import_module(studio.core._EXPORTS[name])
    assert getattr(studio.core, name) is getattr(module, name)


def test_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="Nope"):
        studio.core.Nope  # noqa: B018


def test_importing_errors_builds_no_model_module():
    code = "import sys, studio.core.errors; print(sorted(m for m in sys.modules if m.startswith('studio.core.')))"
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "['studio.core.errors']"
