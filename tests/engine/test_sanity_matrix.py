"""Every bundled GPU × every bundled model, over several layouts and workloads, gives a sane plan
(``tools/sanity_matrix.py --quick``): finite non-negative figures, memory terms adding up, TTFT
within the request latency, a fitting plan holding at least one sequence, throughput identities."""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

import pytest

from studio.io.presets import load_catalog

_PATH = Path(__file__).resolve().parents[2] / "tools" / "sanity_matrix.py"
_SPEC = importlib.util.spec_from_file_location("sanity_matrix", _PATH)
sanity = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(sanity)

CAT = load_catalog()


def test_quick_matrix_covers_every_gpu_model_and_variant() -> None:
    cmds = list(sanity.matrix(CAT, quick=True))
    assert {c[2] for c in cmds} == set(CAT.gpus)
    assert {c[4] for c in cmds} == set(CAT.models)
    for var in sanity.VARIANTS[1:]:
        assert any(tuple(c[-len(var):]) == var for c in cmds), var


@pytest.mark.parametrize("gpu_id", sorted(CAT.gpus))
def test_every_plan_of_the_gpu_is_sane(gpu_id: str) -> None:
    failures = [
        f"layout-studio {' '.join(cmd)}: {v}"
        for cmd in sanity.matrix(CAT, quick=True) if cmd[2] == gpu_id
        for v in sanity.run(cmd)
    ]
    assert not failures, "\n".join(failures)


def test_the_checks_catch_broken_plans() -> None:
    from studio.cli import build_parser
    from studio.commands.options.project_args import project_from_args
    from studio.engine import evaluate

    project = project_from_args(build_parser().parse_args(["plan"]))
    good = evaluate(project)
    assert good.fits and sanity.violations(project, good) == []
    broken = {
        "TTFT": dataclasses.replace(good, ttft_ms=good.request_latency_ms * 2),
        "must be finite": dataclasses.replace(good, tpot_ms=float("nan")),
        "per GPU": dataclasses.replace(good, output_tokens_per_s_per_gpu=good.output_tokens_per_s),
        "one sequence": dataclasses.replace(good, kv_capacity_tokens=10),
        "0 output tokens": dataclasses.replace(good, output_tokens_per_s=0.0, output_tokens_per_s_per_gpu=0.0),
        "usable": dataclasses.replace(good, memory=tuple(
            dataclasses.replace(m, kv_cache=m.capacity) for m in good.memory)),
    }
    for needle, plan in broken.items():
        found = sanity.violations(project, plan)
        assert any(needle in v for v in found), (needle, found)
