"""The question of issue 31 (Llama-3.1-70B on 16× H200, ISL 2048 / OSL 256, TTFT ≤ 1 s, TPOT ≤ 50 ms):
the speed work keeps the best aggregated and disaggregated configurations the search chooses, read
from ``sweep --disagg --json`` as benchmarks/search_vs_aiconfigurator.py prints them.

If a change of the step model legitimately moves them, update the two lines and say the physical
reason in the commit."""

from __future__ import annotations

import importlib.util
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "search_vs_aiconfigurator.py"


def _bench():
    spec = importlib.util.spec_from_file_location("search_vs_aiconfigurator", BENCH)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_questions_best_aggregated_and_disaggregated_configurations_stay(cli):
    bench = _bench()
    r = cli("sweep", *bench.QUESTION, "--disagg", "--json")
    assert r.code == 0, r.err
    doc = r.json()
    assert bench.best_aggregated(doc) == "TP2×PP8×EP1×DP1 batch 256: 374.3 tok/s/GPU"
    assert bench.best_disaggregated(doc) == "3P(TP1×PP4)+1D(TP4) batch 256 (16 GPUs): 466.1 tok/s/GPU"
