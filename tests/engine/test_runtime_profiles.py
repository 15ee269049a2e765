"""Engine profiles (presets/engines/*.json, studio.engine.runtime): loading, versions, bad files,
graph padding, scheduler exposure, memory sizing, and the plan differing per engine."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from studio.core.errors import StudioError
from studio.core.layout import Layout
from studio.core.workload import Load, ServingConfig, Workload
from studio.engine import evaluate
from studio.engine.runtime import ENGINES, assumed_values, engine_profiles, engine_setup, resolve
from studio.engine.runtime.loader import choose_profile, profiles_from_text
from studio.engine.runtime.profile import GraphSizes, SchedulerCost
from tests.engine.fixtures import DGX_H100, H100, LLAMA_8B, LLAMA_405B, cluster, project

GIB = 2**30
VLLM_JSON = Path(__file__).resolve().parents[2] / "presets" / "engines" / "vllm.json"


def test_every_bundled_profile_loads_with_a_source_for_every_value():
    for engine in ENGINES:
        profiles = engine_profiles(engine)
        assert profiles
        for p in profiles:
            assert p.engine == engine and p.kernel_engine == engine and p.kernel_version
            for key in ("scheduler.overlap", "defaults.max_num_batched_tokens", "defaults.cuda_graphs.ranges",
                        "memory.mode", "memory.fraction"):
                assert len(p.source(key)) > 20, (p.id, key)


@pytest.mark.parametrize(("engine", "version", "profile"), [
    ("vllm", "0.5.3", "vllm-v0-sync"), ("vllm", "0.6.3.post1", "vllm-v0-async-output"),
    ("vllm", "0.10.1", "vllm-v1"), ("vllm", "0.33.0", "vllm-v1-async"), ("vllm", None, "vllm-v1-async"),
    ("trtllm", "1.0.0rc4", "trtllm-1.0"), ("trtllm", "1.2.0", "trtllm"), ("sglang", "0.5.2", "sglang-overlap"),
])
def test_a_version_picks_its_profile(engine, version, profile):
    r = resolve(engine, version)
    assert r.profile.id == profile and r.note is None


def test_an_unknown_version_falls_back_to_the_nearest_and_says_so():
    newer = resolve("vllm", "0.40.0")
    assert newer.profile.id == "vllm-v1-async" and "newer than every profile" in newer.note
    older = resolve("sglang", "0.3.6")
    assert older.profile.id == "sglang-overlap" and "older than every profile" in older.note
    # a gap between two ranges goes to the closer edge
    data = json.loads(VLLM_JSON.read_text(encoding="utf-8"))
    data["profiles"] = [data["profiles"][0], data["profiles"][3]]  # 0.4-<0.6 and 0.14-<0.34
    profiles = profiles_from_text("vllm", json.dumps(data), "gap.json")
    assert choose_profile(profiles, "0.7.0").profile.id == "vllm-v0-sync"
    assert choose_profile(profiles, "0.13.0").profile.id == "vllm-v1-async"
    assert "between the profiles" in choose_profile(profiles, "0.7.0").note


def _broken(mutate) -> str:
    data = json.loads(VLLM_JSON.read_text(encoding="utf-8"))
    mutate(data["profiles"][2])
    with pytest.raises(StudioError) as exc:
        profiles_from_text("vllm", json.dumps(data), "presets/engines/vllm.json")
    return str(exc.value)


def test_a_bad_profile_names_the_file_and_the_field():
    msg = _broken(lambda p: p["scheduler"]["cpu_per_seq_us"].pop("source"))
    assert msg.startswith("presets/engines/vllm.json:") and "profiles[2] (vllm-v1).scheduler.cpu_per_seq_us" in msg
    assert "has no 'source'" in msg
    msg = _broken(lambda p: p["memory"]["mode"].update(value="half"))
    assert "memory.mode.value" in msg and "'total' (vLLM), 'free' (TensorRT-LLM), 'static' (SGLang)" in msg
    msg = _broken(lambda p: p["scheduler"]["cpu_base_us"].update(value=-5))
    assert "scheduler.cpu_base_us.value" in msg and "allowed: a number in [0, 1e+06]" in msg
    msg = _broken(lambda p: p["versions"].update({"from": "0.4.5"}))
    assert "overlap" in msg and "vllm-v0-sync" in msg
    msg = _broken(lambda p: p["defaults"]["max_num_seqs"]["tiers"].pop())
    assert "max_num_seqs.tiers[1]" in msg and "catch-all" in msg
    with pytest.raises(StudioError, match="the engine version .x1. is not a version"):
        resolve("vllm", "x1")


def test_decode_batches_pad_to_the_next_captured_size_and_run_eagerly_beyond():
    v1 = engine_setup(project(cluster(DGX_H100, 1), LLAMA_8B, Layout(tp=1, dp=8)))
    sizes = v1.graph_sizes
    assert sizes[:5] == (1, 2, 4, 8, 16) and sizes[-1] == 512 and 264 not in sizes and 272 in sizes
    got = GraphSizes.padded(np.array([1.0, 3.0, 178.0, 257.0, 512.0, 600.0, 0.0]), sizes, True)
    assert got.tolist() == [1.0, 4.0, 184.0, 272.0, 512.0, 600.0, 0.0]
    assert GraphSizes.next_size(600, sizes) is None
    trt = engine_setup(project(cluster(DGX_H100, 1), LLAMA_8B, Layout(tp=1, dp=8),
                               serving=ServingConfig(runtime="trtllm")))
    assert trt.graph_sizes[-1] == 128 and 40 not in trt.graph_sizes
    assert not trt.step.padding  # TensorRT-LLM runs a 40-batch without padding


def test_scheduler_time_adds_when_synchronous_and_hides_when_overlapped():
    sync = SchedulerCost(4000, 35, 0, False, 0)
    over = SchedulerCost(160, 20.9, 0, True, 160)
    assert float(sync.exposed_us(256, 50_000)) == pytest.approx(4000 + 35 * 256)
    assert float(over.exposed_us(256, 50_000)) == pytest.approx(160)  # hidden behind a 50 ms step
    assert float(over.exposed_us(256, 2_000)) == pytest.approx(160 + 160 + 20.9 * 256 - 2_000)


def test_sglang_memory_fraction_follows_its_reserve_rule():
    # server_args.py on an 80 GB H100 at TP8: reserve 512 + 8192 × 1.5 + 512 × 2 + 8 / 8 × 1024 MiB
    p = project(cluster(DGX_H100, 1), LLAMA_405B, Layout(tp=8), serving=ServingConfig(runtime="sglang"))
    s = engine_setup(p)
    gpu_mib = H100.memory_bytes / 2**20
    assert s.token_budget == 8192 and s.graph_sizes[-1] == 512
    assert s.default_fraction == round((gpu_mib - (512 + 8192 * 1.5 + 512 * 2 + 1024)) / gpu_mib, 3)
    # TP 1 captures up to 256 and the 10 GiB floor applies above 60 GiB
    s1 = engine_setup(p, tp=1, pp=1)
    assert s1.graph_sizes[-1] == 256 and s1.default_fraction == round((gpu_mib - 13440) / gpu_mib, 3)


def _plan(runtime: str, version: str | None = None, **workload):
    p = project(cluster(DGX_H100, 2), LLAMA_405B, Layout(tp=8, pp=2, micro_batches=2),
                workload=Workload(isl=2048, osl=512, **workload),
                serving=ServingConfig(runtime=runtime, runtime_version=version))
    frac = engine_setup(p).default_fraction
    return p.replace(serving=p.serving.replace(gpu_memory_utilization=frac))


def test_one_layout_on_three_engines_differs_in_every_headline_figure():
    plans = {rt: evaluate(_plan(rt)) for rt in ENGINES}
    for figure in ("ttft_ms", "tpot_ms", "output_tokens_per_s", "kv_capacity_tokens"):
        values = [getattr(r, figure) for r in plans.values()]
        assert len(set(values)) == 3, (figure, values)
    # the physical reasons: SGLang's static fraction leaves the smallest KV pool, TensorRT-LLM's
    # fraction of what is free the largest
    kv = {rt: r.kv_capacity_tokens for rt, r in plans.items()}
    assert kv["sglang"] < kv["vllm"] < kv["trtllm"]
    eng = plans["vllm"].explanations["engine"]
    names = {t.name for t in eng.terms}
    assert {"token budget", "memory fraction", "graph padding", "scheduler exposed"} <= names
    assert any("vllm-v1-async" in n for n in eng.notes)


def test_a_synchronous_scheduler_costs_a_small_model_its_step():
    def tpot(version: str) -> tuple[float, float]:
        p = project(cluster(DGX_H100, 1), LLAMA_8B, Layout(tp=1, dp=8), workload=Workload(isl=1024, osl=256),
                    serving=ServingConfig(runtime="vllm", runtime_version=version))
        r = evaluate(p)
        return r.tpot_ms, next(t.value for t in r.explanations["engine"].terms if t.name == "scheduler exposed")

    old, old_sched = tpot("0.5.3")
    new, new_sched = tpot("0.33.0")
    assert old_sched == pytest.approx((4000 + 35 * 256) / 1e3, rel=0.02)  # issue #6854's bubble, all exposed
    assert new_sched < 0.5  # async scheduling leaves its ~160 µs residual
    assert old > new + 10


def test_assumed_values_are_the_plans():
    p = _plan("vllm")
    v = assumed_values(p)
    r = evaluate(p)
    assert v["profile"] == "vllm-v1-async" and v["engine"] == "vllm"
    assert v["max_num_batched_tokens"] == r.load.token_budget == 8192
    assert v["max_num_seqs"] == 1024 and v["memory_fraction"] == 0.92
    assert v["cuda_graph_sizes"][-1] == 512 and v["cuda_graph_padding"] is True


def test_vllm_v1_kv_capacity_matches_its_log_m12_m13():
    """reference/memory.md M12 + M13 (vLLM V1, Llama-3.1-8B BF16; tier C): 'Total non KV cache
    memory: 17.12GiB' and 'Available KV cache memory: 19.28 GiB' ⇒ 157,936 tokens. The log's GPU is
    unstated, so the device is sized from the log itself: 17.12 + 19.28 GiB requested at the
    profile's gpu_memory_utilization; the torch peak of M13 was measured at 8,192 batched tokens."""
    frac = 0.92
    spec = H100.replace(memory_gib=(17.12 + 19.28) / frac)
    p = project(cluster(DGX_H100.replace(gpus_per_node=1), 1, spec), LLAMA_8B, Layout(tp=1),
                workload=Workload(isl=1024, osl=1024),
                serving=ServingConfig(runtime="vllm", gpu_memory_utilization=frac, max_num_batched_tokens=8192))
    r = evaluate(p)
    assert r.kv_capacity_tokens == pytest.approx(157_936, rel=0.05)


def test_trtllm_bench_pads_its_graphs_up_to_the_batch_and_token_bound():
    # perf-overview v1.0 llm_options.yml: sizes 1..8192 with padding; the executor keeps the sizes up
    # to min(max_batch_size, max_num_tokens) and pads to that bound above them
    rule = resolve("trtllm", "1.0.0").profile.defaults.bench_graphs
    assert rule is not None and rule.padding
    assert rule.capped(348) == (1, 2, 4, 8, 16, 32, 64, 128, 256, 348)
    assert rule.capped(384) == (1, 2, 4, 8, 16, 32, 64, 128, 256, 384)
    assert rule.capped(8192)[-1] == 8192 and rule.capped(10_000)[-1] == 8192
    wl = Workload(isl=500, osl=2000, max_batch=384, load=Load(mode="offline", num_requests=3000))
    sv = ServingConfig(runtime="trtllm", runtime_version="1.0.0", weight_dtype="fp8", kv_dtype="fp8")
    off = engine_setup(project(cluster(DGX_H100, 1), LLAMA_8B, Layout(tp=1), wl, sv))
    assert off.step.padding and off.step.graph_sizes[-1] == 384 and 256 in off.step.graph_sizes
    assert GraphSizes.padded(np.array([348.0]), off.step.graph_sizes, off.step.padding).tolist() == [384.0]
    # the export keeps the library defaults; a served (non-offline) plan runs them too
    assert off.graph_sizes[-1] == 128
    served = engine_setup(project(cluster(DGX_H100, 1), LLAMA_8B, Layout(tp=1), wl.replace(load=Load()), sv))
    assert served.step.graph_sizes == served.graph_sizes and not served.step.padding


def test_host_times_scale_on_a_grace_host_only():
    p = resolve("trtllm", "1.0.0").profile
    assert p.scheduler.cpu_per_seq_us == pytest.approx(9.06)
    grace, x86 = p.scheduler_on("gb200", 186.0, 1), p.scheduler_on("b200", 179.0, 1)
    assert x86 == p.scheduler
    assert grace.cpu_per_seq_us == pytest.approx(9.06 * 2.75)
    assert grace.exposed_when_overlapped_us == pytest.approx(580 * 2.75)
    # overlapped: hidden behind a long GPU step, what outlasts a short one is added
    assert float(x86.exposed_us(2048, 40_000)) == pytest.approx(580)
    assert float(grace.exposed_us(2048, 40_000)) == pytest.approx(580 * 2.75 + 9.06 * 2.75 * 2048 - 40_000)
    assert "TransformerEngine issue #2053" in p.source("scheduler.host_slowdown")


def test_an_engine_without_cuda_graphs_pays_each_all_reduce_as_an_eager_call():
    """TensorRT-LLM 0.12-0.17 ran its TensorRT engines without CUDA graphs (the 0.14 Triton backend
    never set ``cudaGraphMode``), so a decode all-reduce costs at least the eager call the vLLM table
    measured; 1.x replays a graph and pays the kernel alone. Same kernel tables, same GPUs."""
    def ar(version: str) -> tuple[float, tuple[str, ...]]:
        p = project(cluster(DGX_H100, 1), LLAMA_8B, Layout(tp=4, dp=2), workload=Workload(isl=1024, osl=256, batch=8),
                    serving=ServingConfig(runtime="trtllm", runtime_version=version))
        e = evaluate(p).explanations["comm.allreduce_decode"]
        return e.value, e.notes

    eager, notes = ar("0.14.0")
    graph, graph_notes = ar("1.3.0")
    assert resolve("trtllm", "0.14.0").profile.defaults.graphs.ranges == ()
    assert eager > 2 * graph  # the eager call's launch floor, not the 64 KiB one-shot kernel
    assert any("launched eagerly" in n for n in notes)
    assert not any("launched eagerly" in n for n in graph_notes)
