"""Golden files: the bundled example projects exported for every engine and format.

The goldens hold commands and configs, not figures. Each example is exported with a plan whose
figures are fixed by the test (``conftest.plan``, 80 GiB per GPU), and the header lines that carry
a plan's figures (memory, KV cache, latency, throughput, cost, assumptions, warnings) are masked
before the comparison (:func:`masked`): a change to the cost engine, a GPU preset or the header's
number formatting regenerates no golden. :func:`test_header_carries_the_plan_figures` checks
those lines against the plan instead. (That the engine's own plans export cleanly is checked in
``test_runtime_rules``.) Regenerate after an intended export change with
``UPDATE_GOLDEN=1 pytest tests/export`` and review the diff."""

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

#: Header lines (``studio.io.export.header``) that carry the plan's figures, and the header lists
#: whose items are the plan's assumptions and warnings.
FIGURE_LINES = (
    "Fits:", "Per-GPU memory", "Engine memory:", "KV cache:", "TTFT ", "Throughput:", "Cost:",
    "Calibration:",
)
FIGURE_LISTS = ("Assumptions:", "Warnings:")


def masked(text: str) -> str:
    """``text`` with the figure-bearing lines of its leading comment block reduced to their label
    (``# TTFT (plan figures)``) and the items of its figure lists dropped; everything else as is."""
    out: list[str] = []
    in_header, in_list = True, False
    for line in text.splitlines(keepends=True):
        in_header = in_header and line.startswith("#")
        body = line[2:] if in_header and line.startswith("# ") else None
        if body is not None and in_list and body.startswith("  - "):
            continue
        in_list = body is not None and body.startswith(FIGURE_LISTS)
        label = next((p for p in FIGURE_LINES + FIGURE_LISTS if body is not None and body.startswith(p)), None)
        out.append(f"# {label.rstrip(': ')} (plan figures)\n" if label else line)
    return "".join(out)


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
            (folder / name).write_text(masked(text), encoding="utf-8")
    assert sorted(p.name for p in folder.iterdir()) == sorted(bundle.files), "run with UPDATE_GOLDEN=1"
    for name, text in bundle.files.items():
        assert masked(text) == (folder / name).read_text(encoding="utf-8"), (
            f"{folder / name} differs; review and regenerate with UPDATE_GOLDEN=1"
        )
        if name.endswith(".sh"):
            assert subprocess.run(["bash", "-n"], input=text, text=True).returncode == 0
        else:
            assert all(isinstance(d, dict) for d in yaml.safe_load_all(text))


def test_header_carries_the_plan_figures(plans):
    """What the goldens mask: the header states the plan's own figures, assumptions and warnings."""
    project, plan = plans["dgx-h100-2node-llama-405b"]
    text = export_plan(project, plan, engine="vllm", fmt="command").files["vllm-commands.sh"]
    m = plan.peak_memory
    for expected in (
        "# Fits: yes",
        f"# Per-GPU memory (busiest GPU {m.gpu_id}): weights {m.weights / GIB:.1f} GiB, "
        f"KV cache {m.kv_cache / GIB:.1f} GiB",
        f"# KV cache: {plan.kv_capacity_tokens:,} tokens per replica",
        f"# TTFT {plan.ttft_ms:,.1f} ms; TPOT {plan.tpot_ms:,.2f} ms",
        f"# Throughput: {plan.output_tokens_per_s:,.1f} output tokens/s",
        *(f"#   - {a}" for a in plan.assumptions),
        *(f"#   - [{w.severity}] {w.code}: {w.message}" for w in plan.warnings),
    ):
        assert expected in text, expected
    assert plan.assumptions and plan.warnings  # the lists the goldens drop are not empty here
    kept = masked(text)
    assert "# TTFT (plan figures)" in kept and f"{plan.ttft_ms:,.1f}" not in kept
    assert all(a not in kept for a in plan.assumptions)
    assert "--tensor-parallel-size 8" in kept and "# What vLLM" in kept  # commands and notes stay


def test_masking_keeps_everything_below_the_header():
    text = "#!/bin/sh\n# TTFT 1 ms\n# Warnings:\n#   - w\n# Usage: x\necho TTFT 1\n# TTFT 2 ms\n"
    assert masked(text) == (
        "#!/bin/sh\n# TTFT (plan figures)\n# Warnings (plan figures)\n# Usage: x\necho TTFT 1\n# TTFT 2 ms\n"
    )
