"""The memory a plan shows with prefix caching: the shared system prompt's KV blocks are held once,
as the batch was sized, so a layout that fits shows every GPU within its usable memory."""

from __future__ import annotations

import pytest

from studio.core.settings.reuse import KVTiers
from studio.engine import evaluate
from studio.io.presets import example_paths
from studio.io.project_file import load_project


@pytest.fixture(scope="module")
def chat():
    return load_project(str(example_paths()["dgx-h100-llama-70b-multiturn-chat"]))


def test_shared_prompt_kv_is_counted_once(chat):
    plan = evaluate(chat)
    assert plan.fits and plan.prefix_cache is not None
    wl, sys_t = chat.workload, chat.workload.reuse.system_prompt_tokens
    for m in plan.memory:
        assert m.total <= m.usable * (1 + 1e-9), (m.gpu_id, m.total, m.usable)
    m = plan.memory[0]
    per_token = m.kv_cache / (plan.batch * (wl.isl + wl.osl) - (plan.batch - 1) * sys_t)
    off = evaluate(chat.replace(serving=chat.serving.replace(kv_tiers=KVTiers(prefix_cache=False))))
    assert per_token == pytest.approx(off.memory[0].kv_cache / (off.batch * (wl.isl + wl.osl)))
    assert "held once" in plan.explanations["memory.kv_cache"].formula


def test_sweep_shows_the_same_peak_memory(chat):
    from studio.engine import sweep

    result = sweep(chat, objective="throughput")
    best = result.recommended
    assert best is not None
    plan = result.plan(best)
    assert float(result.columns["mem_peak_gib"][best]) == pytest.approx(plan.peak_memory.total / 2**30, rel=1e-6)
    assert float(result.columns["mem_peak_gib"][best]) * 2**30 <= plan.peak_memory.usable * (1 + 1e-9)
