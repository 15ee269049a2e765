"""The pieces of prompt reuse in a disaggregated plan (:mod:`studio.engine.disagg.reuse`)."""

from __future__ import annotations

import pytest

from studio.core.serving_mode import parse_pools
from studio.core.settings.reuse import KVTiers, Reuse
from studio.engine.disagg.evaluate import cost_pools
from studio.engine.disagg.reuse import decode_sequences, transfer_tokens
from studio.io.presets import example_paths, load_example

EXAMPLE = "dgx-h100-llama-70b-multiturn-chat"


@pytest.fixture(scope="module")
def chat():
    return load_example(example_paths()[EXAMPLE], EXAMPLE)


def _runtime(project, runtime: str):
    return project.replace(serving=project.serving.replace(runtime=runtime))


def test_only_vllms_connector_skips_the_blocks_a_decode_worker_caches(chat):
    assert transfer_tokens(chat) == 16000 - 4000  # 4,000 = 250 whole 16-token blocks
    odd = chat.replace(workload=chat.workload.replace(
        reuse=chat.workload.reuse.replace(system_prompt_tokens=4010)))
    assert transfer_tokens(odd) == 16000 - 4000  # the partial block is sent
    assert transfer_tokens(_runtime(chat, "trtllm")) == 16000
    assert transfer_tokens(_runtime(chat, "sglang")) == 16000
    off = chat.replace(serving=chat.serving.replace(kv_tiers=KVTiers(prefix_cache=False)))
    assert transfer_tokens(off) == 16000


def test_reuse_off_leaves_both_workers_as_they_were(chat):
    off = chat.replace(serving=chat.serving.replace(kv_tiers=KVTiers(prefix_cache=False)))
    bare = chat.replace(workload=chat.workload.replace(reuse=Reuse()),
                        serving=chat.serving.replace(kv_tiers=KVTiers()))
    spec = "1P:tp1pp2,1D:tp4"
    a, b = cost_pools(off, parse_pools(spec)), cost_pools(bare, parse_pools(spec))
    assert a.prefill.prefix is None and b.prefill.prefix is None
    assert a.prefill.curve.mu == b.prefill.curve.mu and a.prefill.curve.isl == 16000
    assert a.decode.max_seqs == b.decode.max_seqs
    assert decode_sequences(off, 10**6, 16500, 7) == 7


def test_the_prefill_pool_prefills_its_missed_tokens(chat):
    spec = parse_pools("1P:tp1pp2,1D:tp4")
    on = cost_pools(chat, spec)
    hbm = cost_pools(chat.replace(serving=chat.serving.replace(kv_tiers=KVTiers())), spec)
    pr = on.prefill.prefix
    assert pr is not None and hbm.prefill.prefix is not None
    assert on.prefill.curve.isl == round(pr.estimate.computed_tokens) < 16000
    # a host tier keeps more of each conversation than the HBM the running prompt leaves
    assert pr.estimate.hit_rate > hbm.prefill.prefix.estimate.hit_rate
    assert pr.estimate.hit_by_tier[1] > 0 == hbm.prefill.prefix.estimate.hit_by_tier[1]
    assert on.prefill.curve.mu > hbm.prefill.curve.mu
    # vLLM loads host hits before the prefill: the load rides on the iteration
    assert pr.tier_load_ms > 0


def test_the_summary_every_reader_shares_says_the_hits_only_with_reuse(chat):
    from studio.engine.disagg.evaluate import evaluate_disaggregated
    from studio.engine.disagg.summary import summary_lines

    spec = parse_pools("1P:tp1pp2,1D:tp4")
    on = evaluate_disaggregated(chat, spec)
    off = evaluate_disaggregated(chat.replace(serving=chat.serving.replace(kv_tiers=KVTiers(prefix_cache=False))), spec)
    pc = on.prefix_cache
    assert pc is not None and off.prefix_cache is None
    line = [s for s in summary_lines(on) if s.startswith("Prefix cache ")]
    assert len(line) == 1 and f"{pc['hit_rate']:.0%} of each prompt" in line[0] and "saved per request" in line[0]
    assert not any(s.startswith("Prefix cache") for s in summary_lines(off))
    assert "prefix_cache.hit_rate" in on.explanations and "prefix_cache.hit_rate" not in off.explanations
