"""The one parallelism rule set: which TP / PP / EP / DP a model and GPU count allow, and why not."""

from __future__ import annotations

import pytest

from studio.core import parallelism as par
from studio.core.layout import Layout
from studio.io.presets import load_catalog

CAT = load_catalog()
LLAMA_405B = CAT.model("llama-3.1-405b").architecture  # 128 heads, 8 KV heads, 126 layers
LLAMA_70B = CAT.model("llama-3.1-70b").architecture  # 64 heads, 8 KV heads, 80 layers
DEEPSEEK = CAT.model("deepseek-v3").architecture  # MLA, 256 routed experts, 61 layers
MIXTRAL = CAT.model("mixtral-8x7b").architecture  # 8 experts, 32 layers


def test_tp_divides_gpus_and_heads():
    assert par.tp_options(LLAMA_405B, 16) == [1, 2, 4, 8, 16]
    assert par.tp_options(LLAMA_405B, 24) == [1, 2, 4, 8]  # 3, 6, 12, 24 do not divide 128 heads
    assert par.tp_options(LLAMA_405B, 15) == [1]
    assert "does not divide the 128 attention heads" in par.tp_reason(LLAMA_405B, 3, 24)
    assert "does not divide the 24 GPUs" in par.tp_reason(LLAMA_405B, 16, 24)


def test_kv_heads_limit_tp_unless_the_model_uses_mla():
    gqa = LLAMA_70B.model_copy(update={"num_attention_heads": 24, "num_kv_heads": 8})
    assert "neither a divisor nor a multiple of the 8 KV heads" in par.heads_reason(gqa, 3)
    assert par.heads_reason(gqa, 24) is None  # a multiple: each KV head replicated 3 times
    assert par.tp_options(gqa, 24) == [1, 2, 4, 8, 24]
    mla = DEEPSEEK.model_copy(update={"num_attention_heads": 24, "num_kv_heads": 8})
    assert par.heads_reason(mla, 3) is None  # the latent KV cache is shared by every head
    assert par.tp_options(mla, 24) == [1, 2, 3, 4, 6, 8, 12, 24]


def test_pp_divides_what_tp_leaves_and_stays_within_layers():
    assert par.pp_options(LLAMA_405B, 8, 24) == [1, 3]
    assert par.pp_options(MIXTRAL, 1, 64) == [1, 2, 4, 8, 16, 32]  # 64 > 32 layers
    assert "exceeds the model's 32 layers" in par.pp_reason(MIXTRAL, 64, 1, 64)
    assert "does not divide the 24 GPUs" in par.pp_reason(LLAMA_405B, 2, 8, 24)


def test_ep_divides_experts_and_follows_the_layout_rule():
    assert par.ep_options(LLAMA_70B, 8, 2) == [1]
    assert par.ep_options(MIXTRAL, 2, 4) == [1, 2, 4, 8]
    assert par.ep_options(MIXTRAL, 4, 1) == [1, 2, 4]
    assert "does not divide the 8 routed experts" in par.ep_reason(MIXTRAL, 3, 3, 1)
    assert "has no experts" in par.ep_reason(LLAMA_70B, 2, 2, 1)
    assert "neither a divisor nor a multiple of TP=3" in par.ep_reason(MIXTRAL, 2, 3, 2)


def test_every_candidate_is_a_valid_layout_and_every_valid_layout_is_a_candidate():
    for model, gpus in ((LLAMA_405B, 24), (MIXTRAL, 16), (DEEPSEEK, 72)):
        cands = par.candidates(model, gpus)
        assert len(set(cands)) == len(cands)
        for tp, pp, dp, ep in cands:
            assert par.layout_reason(model, Layout(tp=tp, pp=pp, dp=dp, ep=ep), gpus) is None
        brute = {
            (tp, pp, dp, ep)
            for tp in range(1, gpus + 1) for pp in range(1, gpus + 1) for dp in range(1, gpus + 1)
            if tp * pp * dp == gpus
            for ep in range(1, gpus + 1)
            if (tp * dp) % ep == 0 and (ep % tp == 0 or tp % ep == 0)
            and par.layout_reason(model, Layout(tp=tp, pp=pp, dp=dp, ep=ep), gpus) is None
        }
        assert brute == set(cands)


def test_layout_reason_names_the_gpu_mismatch():
    why = par.layout_reason(LLAMA_405B, Layout(tp=8, pp=2), 24)
    assert why == "TP8×PP2 uses 16 GPUs; the cluster has 24 (TP×PP×DP must equal the GPU count)"


@pytest.mark.parametrize(
    ("key", "value", "expect"),
    [
        ("tp", 16, (16, 1, 1)),  # PP 2 does not fit in 16 GPUs / TP16: the nearest allowed is 1
        ("tp", 4, (4, 2, 2)),  # PP kept, DP fills the rest
        ("pp", 1, (8, 1, 2)),
    ],
)
def test_with_field_keeps_the_layout_on_the_gpus(key, value, expect):
    old = Layout(tp=8, pp=2, dp=1, micro_batches=2, layers_per_stage=(63, 63))
    new = par.with_field(LLAMA_405B, old, 16, key, value)
    assert (new.tp, new.pp, new.dp) == expect
    assert new.world_size == 16
    assert new.layers_per_stage == (None if new.pp != 2 else (63, 63))


def test_with_field_moves_ep_to_the_nearest_allowed_value():
    old = Layout(tp=2, pp=1, dp=4, ep=8)
    assert par.with_field(MIXTRAL, old, 8, "tp", 4).ep == 8  # still divides TP×DP = 8
    new = par.with_field(MIXTRAL, old, 8, "tp", 8)
    assert new.ep == 8 and new.dp == 1
    new = par.with_field(MIXTRAL, Layout(tp=1, pp=1, dp=8, ep=8), 8, "pp", 2)
    assert (new.pp, new.dp, new.ep) == (2, 4, 4)
