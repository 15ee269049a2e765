"""KV-cache capacity against the engines' own start-up logs (issue 29): every bundled case of
benchmarks/validation/kv-capacity-cases.json within 5 % of the log, or marked with the reason
it cannot be (docs/calibration.md, 'KV capacity against engine logs')."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from benchmarks.validation.kv_capacity import (
    TOLERANCE,
    capacity_tokens,
    error,
    load_bounds,
    load_cases,
    predict,
)
from studio.cli import main
from studio.core.errors import StudioError
from studio.engine.runtime import resolve
from studio.engine.runtime.loader import profiles_from_text
from studio.engine.runtime.profile import parse_version
from studio.engine.runtime.reserves import graphs_counted
from studio.io.presets import load_catalog

CASES = load_cases()
BOUNDS = load_bounds()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case_within_tolerance_of_the_engine_log(case) -> None:
    ours = predict(case)
    if case.unreached:
        assert len(case.unreached) > 40, "an unreached case says exactly why"
        return
    assert abs(error(case, ours)) <= TOLERANCE, (
        f"{case.id}: plan {ours:,.2f} against the log's {case.reported:,.2f} {case.metric} "
        f"({error(case, ours):+.1%}); source {case.record['source']}")


def test_every_case_cites_its_log_and_setup() -> None:
    for c in CASES:
        r = c.record
        assert r["source"] and r["log"] and r["settings"] and r["role"], c.id
        assert r["engine"] in ("vllm", "sglang", "trtllm") and r["version"], c.id
    assert {c.record["engine"] for c in CASES} >= {"vllm", "sglang"}


@pytest.mark.parametrize("bound", BOUNDS, ids=[b.id for b in BOUNDS])
def test_engine_starts_where_the_log_started_and_refuses_where_it_refused(bound) -> None:
    """memory.md M6: vLLM 0.5.4 starts only if its KV cache holds max_model_len tokens."""
    tokens = capacity_tokens(bound.record)
    assert (tokens >= bound.context) == bound.serves, (
        f"{bound.id}: plan holds {tokens:,} tokens at context {bound.context:,}; the log "
        f"{'served' if bound.serves else 'refused'} it ({bound.record['source']})")


def _plan(*extra: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["plan", "--model", "qwen3-235b-a22b", "--gpu", "h100-sxm", "--nodes", "1", "--gpus-per-node",
                     "4", "--tp", "4", "--weight-dtype", "fp8", *extra]) == 0
    return out.getvalue()


def test_explain_names_each_reserve_term_and_its_source() -> None:
    """Issue 29: ``plan --explain`` names the terms the engine keeps out of its KV cache and where
    each comes from."""
    out = _plan("--runtime", "vllm", "--runtime-version", "0.9.2", "--explain")
    act = out[out.index("memory.activations = "):out.index("memory.overhead = ")]
    assert "sampler:" in act and "PR #13594" in act and "forward:" in act
    over = out[out.index("memory.overhead = "):out.index("kv_cache.bytes_per_token_per_gpu")]
    assert "non_torch: 0.25 GiB" in over and "tp_communicators: 1.79 GiB" in over and "PR #10511" in over
    assert "79.22 GiB per GPU, the CUDA runtime's total" in over
    engine = out[out.index("\nengine = "):]
    assert "reserve: tp_communicators: 1.79 GiB" in engine and "total the fraction applies to: 79.22 GiB" in engine
    sglang = _plan("--runtime", "sglang", "--gpu-memory-utilization", "0.93", "--explain")
    assert "tp_communicators: 2.01 GiB" in sglang and "sglang PR #11716" in sglang


def test_cuda_graph_memory_counts_from_vllm_021_only() -> None:
    """vLLM estimates CUDA-graph memory before sizing the KV cache from 0.21 on; before, graphs
    come out of the margin the fraction leaves."""
    rule = resolve("vllm", "0.20.0").profile.memory.reserves
    assert rule is not None and resolve("vllm", "0.21.0").profile.memory.reserves == rule
    assert not graphs_counted(rule, False, parse_version("0.20.1"))
    assert graphs_counted(rule, False, parse_version("0.21.0")) and graphs_counted(rule, False, None)
    old = resolve("vllm", "0.9.2").profile.memory.reserves
    assert old is not None and not graphs_counted(old, False, None)
    before = _plan("--runtime", "vllm", "--runtime-version", "0.20.0", "--json")
    after = _plan("--runtime", "vllm", "--runtime-version", "0.21.0", "--json")
    gap = json.loads(before)["memory"]["per_gpu_gib"]["overhead"] - json.loads(after)["memory"]["per_gpu_gib"]["overhead"]
    assert gap == pytest.approx(-0.53)


def test_a_bad_reserve_entry_names_the_file_and_the_field() -> None:
    data = json.loads((Path(__file__).resolve().parents[2] / "presets/engines/vllm.json").read_text("utf-8"))
    data["profiles"][2]["memory"]["reserves"]["sampler_bytes_per_logit"]["value"] = -1
    with pytest.raises(StudioError) as exc:
        profiles_from_text("vllm", json.dumps(data), "presets/engines/vllm.json")
    assert "profiles[2] (vllm-v1).memory.reserves.sampler_bytes_per_logit.value" in str(exc.value)
    assert "allowed: a number in [0, 1000]" in str(exc.value)
    data["profiles"][2]["memory"]["reserves"]["sampler_bytes_per_logit"] = {"value": 41}
    with pytest.raises(StudioError) as exc:
        profiles_from_text("vllm", json.dumps(data), "presets/engines/vllm.json")
    assert "has no 'source'" in str(exc.value)


def test_the_3090_and_4090_presets_carry_the_driver_and_cuda_totals() -> None:
    """presets/gpus.json: memory_gib is the driver's MiB / 1024 (not the marketed 24 GB = 22.35 GiB),
    memory_visible_gib what CUDA reports; engines size against the latter."""
    gpus = load_catalog().gpus
    assert gpus["rtx-3090"].memory_gib == 24.0 and gpus["rtx-3090"].memory_visible_gib == 23.56
    assert gpus["rtx-4090"].memory_gib == pytest.approx(24564 / 1024, abs=0.005)
    for g in ("rtx-3090", "rtx-4090", "h100-sxm"):
        spec = gpus[g]
        assert spec.visible_bytes < spec.memory_bytes and "memory_visible_gib" in spec.sources


def test_model_runner_v2_profiles_a_lighter_sampler_for_dense_models_only() -> None:
    """vLLM 0.25.1 runs dense models on Model Runner V2, whose profile holds only the logits
    (PR #49233, PR #57926); MoE models and older versions keep the sampler run of their version
    (41 B per logit in 0.9.2's log, 16 B in 0.14.0's)."""
    from studio.engine.runtime.reserves import sampler_rate

    rule = resolve("vllm", "0.25.1").profile.memory.reserves
    assert rule is not None
    assert sampler_rate(rule, parse_version("0.25.1"), moe=False) == 2
    assert sampler_rate(rule, parse_version("0.25.0"), moe=False) == 16  # the 0.14 log's (llm-d guide)
    assert sampler_rate(rule, parse_version("0.25.1"), moe=True) == 16
    assert sampler_rate(rule, None, moe=False) == 2  # newest release
    old = resolve("vllm", "0.9.2").profile.memory.reserves
    assert old is not None and sampler_rate(old, parse_version("0.9.2"), moe=True) == 41
