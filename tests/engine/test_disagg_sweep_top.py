"""The disaggregated sweep asked for its ``top`` rows only (what ``sweep --disagg`` shows) solves
rows best bound first and stops once no row left can rank among them: the rows it returns are the
exhaustive sweep's first rows, figure for figure, and it counts the same candidates."""

from __future__ import annotations

import pytest

from studio.core.workload import Workload
from studio.engine.disagg import sweep as dsw
from studio.engine.disagg.sweep import OBJECTIVES, sweep_disaggregated
from studio.io.presets import example_paths, load_example
from tests.engine.fixtures import H200, HGX_H200, LLAMA_8B, cluster, project

#: Two bundled examples: 2 × 8 H100 (405B), and one 8 × H100 box with a host KV tier and a shared
#: system prompt (prefix-cached prefill workers).
EXAMPLES = ("dgx-h100-2node-llama-405b", "dgx-h100-llama-70b-multiturn-chat")


@pytest.fixture(scope="module", params=EXAMPLES)
def example(request):
    return load_example(example_paths()[request.param], request.param)


def _same(p, objective: str, tops=(1, 10), **targets) -> None:
    full = sweep_disaggregated(p, objective=objective, **targets)
    for top in tops:
        part = sweep_disaggregated(p, objective=objective, top=top, **targets)
        assert part.rows == full.rows[:top]  # every field, floats bit for bit
        assert part.best == full.best
        assert part.n_rows == full.n_rows == len(full.rows)
        assert (part.combinations, part.skipped) == (full.combinations, full.skipped)


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_the_top_rows_are_the_exhaustive_sweeps_first_rows(example, objective):
    _same(example, objective)


def test_without_rows_meeting_the_targets_the_top_rows_still_agree(example):
    _same(example, "throughput", tops=(10,), tpot_ms=1.0)  # no TPOT of 1 ms: every row is solved


def test_an_open_loop_at_a_rate_agrees_and_fewer_rows_are_solved(monkeypatch):
    wl = Workload(isl=2048, osl=256, max_batch=128, ttft_ms=1000, tpot_ms=30)
    wl = wl.replace(load=wl.load.model_copy(update={"mode": "rate", "rate_per_s": 20.0}))
    p = project(cluster(HGX_H200, 1, H200), LLAMA_8B, workload=wl)
    _same(p, "throughput")
    solved = []
    rows = dsw._rows

    def counted(project, pending, *args, **kwargs):
        solved.append(len(pending))
        return rows(project, pending, *args, **kwargs)

    monkeypatch.setattr(dsw, "_rows", counted)
    part = sweep_disaggregated(p, top=10)
    assert part.best is not None and sum(solved) < part.n_rows / 2
