"""Golden files: the bundled example projects, evaluated by the engine, exported for every engine
and format. Regenerate after an intended change with ``UPDATE_GOLDEN=1 pytest tests/export``
and review the diff."""

from __future__ import annotations

import os
import subprocess

import pytest
import yaml

from studio.io.export import FORMATS, export_plan
from studio.io.presets import example_paths
from studio.io.project_file import load_project

from .conftest import GOLDEN

EXAMPLES = ["dgx-h100-2node-llama-405b", "h100-pcie-bridge-llama-70b", "l40s-8x-llama-70b-fp8"]
CASES = [(x, e, f) for x in EXAMPLES for e in ("vllm", "trtllm", "sglang") for f in FORMATS
         if not (e == "trtllm" and f == "k8s")]


@pytest.fixture(scope="module")
def plans():
    from studio.engine import evaluate

    out = {}
    for name in EXAMPLES:
        project = load_project(str(example_paths()[name]))
        out[name] = (project, evaluate(project))
    return out


@pytest.mark.parametrize("example,engine,fmt", CASES)
def test_golden(plans, example, engine, fmt):
    project, plan = plans[example]
    bundle = export_plan(project, plan, engine=engine, fmt=fmt)
    folder = GOLDEN / example / f"{engine}-{fmt}"
    if os.environ.get("UPDATE_GOLDEN"):
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.iterdir():
            old.unlink()
        for name, text in bundle.files.items():
            (folder / name).write_text(text, encoding="utf-8")
    assert sorted(p.name for p in folder.iterdir()) == sorted(bundle.files), "run with UPDATE_GOLDEN=1"
    for name, text in bundle.files.items():
        assert text == (folder / name).read_text(encoding="utf-8"), (
            f"{folder / name} differs; review and regenerate with UPDATE_GOLDEN=1"
        )
        if name.endswith(".sh"):
            assert subprocess.run(["bash", "-n"], input=text, text=True).returncode == 0
        else:
            assert all(isinstance(d, dict) for d in yaml.safe_load_all(text))
