"""Golden files: the bundled example projects exported for every engine and format.

The goldens hold commands and configs, not engine figures: each example is exported with a plan
whose figures are fixed by the test (``conftest.plan``, 80 GiB per GPU), so a change to the cost
engine or to a GPU preset's memory never regenerates them. (That the engine's own plans export cleanly is checked in ``test_runtime_rules``.)
Regenerate after an intended export change with ``UPDATE_GOLDEN=1 pytest tests/export`` and review
the diff."""

from __future__ import annotations

import os
import subprocess

import pytest
import yaml

from studio.io.export import FORMATS, export_plan
from studio.io.presets import example_paths
from studio.io.project_file import load_project

from .conftest import GIB, GOLDEN, plan

#: Device memory of the golden plans: fixed here, so a GPU preset's figure (GB or GiB) does not
#: regenerate the goldens either.
GOLDEN_CAPACITY = 80 * GIB

EXAMPLES = ["dgx-h100-2node-llama-405b", "h100-pcie-bridge-llama-70b", "l40s-8x-llama-70b-fp8"]
CASES = [(x, e, f) for x in EXAMPLES for e in ("vllm", "trtllm", "sglang") for f in FORMATS
         if not (e == "trtllm" and f == "k8s")]


@pytest.fixture(scope="module")
def plans():
    out = {}
    for name in EXAMPLES:
        project = load_project(str(example_paths()[name]))
        batch = project.workload.batch if isinstance(project.workload.batch, int) else 64
        out[name] = (project, plan(project, batch=batch, capacity=GOLDEN_CAPACITY))
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
