"""Prefix caching in the plan: off (or nothing repeating) leaves every figure as it was; on, it
prefills less, holds more batch and reports its hit rate and tiers."""

from __future__ import annotations

import pytest

from benchmarks.validation.corpus import load_points, project_for
from studio.core.project import Project
from studio.core.settings.reuse import KVTiers, Reuse
from studio.engine import evaluate
from studio.io.presets import example_paths, load_example

CHAT = Reuse(system_prompt_tokens=1000, turns=8, history_tokens_per_turn=800, think_time_s=20)


def _figures(project: Project, layout=None) -> tuple:
    r = evaluate(project, layout)
    return (r.fits, r.batch, r.kv_capacity_tokens, r.ttft_ms, r.tpot_ms, r.request_latency_ms,
            r.output_tokens_per_s, r.usd_per_million_output_tokens, r.prefix_cache)


def _with(project: Project, reuse: Reuse, tiers: KVTiers) -> Project:
    isl = max(project.workload.isl, 8000)
    return project.replace(workload=project.workload.replace(isl=isl, reuse=reuse),
                           serving=project.serving.replace(kv_tiers=tiers))


def _no_reuse(project: Project) -> Project:
    return project.replace(workload=project.workload.replace(reuse=Reuse()),
                           serving=project.serving.replace(kv_tiers=KVTiers()))


def _cases() -> list[tuple[str, Project, object]]:
    # every example without its reuse (the multi-turn chat example has some): the figures as before
    cases = [(i, _no_reuse(load_example(n, i)), None) for i, n in sorted(example_paths().items())]
    points = load_points()
    cases += [(p.id, *project_for(p)) for p in points[:: max(1, len(points) // 12)]]
    return cases


@pytest.mark.parametrize("case", _cases(), ids=lambda c: c[0])
def test_reuse_off_changes_no_figure(case) -> None:
    _, project, layout = case
    plain = _figures(project, layout)
    assert plain[-1] is None
    on_nothing_repeats = project.replace(serving=project.serving.replace(kv_tiers=KVTiers(prefix_cache=True)))
    assert _figures(on_nothing_repeats, layout) == plain
    reuse_cache_off = project.replace(
        workload=project.workload.replace(reuse=Reuse(hit_rate=0.9)),
        serving=project.serving.replace(kv_tiers=KVTiers(prefix_cache=False)),
    )
    assert _figures(reuse_cache_off, layout) == plain


def test_reuse_prefills_less_and_holds_more_batch() -> None:
    project = load_example(*next(iter(sorted(example_paths().items())))[::-1])
    off = evaluate(_with(project, CHAT, KVTiers(prefix_cache=False)))
    hbm = evaluate(_with(project, CHAT, KVTiers()))
    host = evaluate(_with(project, CHAT, KVTiers(host_gib=1024)))
    assert hbm.prefix_cache is not None and host.prefix_cache is not None
    assert 0 < hbm.prefix_cache["hit_rate"] < host.prefix_cache["hit_rate"] <= 1
    assert host.prefix_cache["capacity_tokens_host"] > 0 and host.prefix_cache["hit_rate_host"] > 0
    assert hbm.batch >= off.batch
    assert host.ttft_ms < off.ttft_ms
    assert host.output_tokens_per_s > off.output_tokens_per_s
    assert evaluate(_with(project, CHAT, KVTiers())).to_json()["prefix_cache"]["hit_rate"] == hbm.prefix_cache["hit_rate"]


def test_old_files_load_without_reuse_and_v4_keeps_it() -> None:
    from studio.io.project_file import load_project
    from tests.robustness.golden_files import golden_files

    for path in golden_files(3):
        p = load_project(path)
        assert p.workload.reuse == Reuse() and p.serving.kv_tiers == KVTiers()
    (chat,) = [f for f in golden_files(4) if f.name.startswith("chat-reuse")]
    p = load_project(chat)
    assert p.workload.reuse.turns == 6 and p.serving.kv_tiers.host_gib == 1024.0
    pc = evaluate(p).prefix_cache
    assert pc is not None and pc["hit_rate_host"] >= 0 and pc["hit_rate"] > 0.25


def _single(isl: int, reuse: Reuse, tiers: KVTiers, runtime: str = "vllm") -> Project:
    from benchmarks.validation.corpus import _cluster
    from studio.core.layout import Layout
    from studio.core.workload import Load, ServingConfig, Workload
    from studio.io.presets import load_catalog

    wl = Workload(isl=isl, osl=1, batch=1, max_batch=1, load=Load(mode="concurrency", concurrency=1), reuse=reuse)
    sv = ServingConfig(runtime=runtime, kv_tiers=tiers)
    return Project(cluster=_cluster("h100-sxm", 1, 8), model=load_catalog().model("llama-3.1-8b").architecture,
                   workload=wl, serving=sv, layout=Layout(tp=1, pp=1, dp=1))


def test_a_chunked_prompts_last_chunk_costs_what_it_holds() -> None:
    off = KVTiers(prefix_cache=False)
    budget = 8192  # vLLM V1's token budget on an 80 GB GPU (presets/engines/vllm.json)
    one_chunk = evaluate(_single(budget, Reuse(), off)).ttft_ms
    a_token_more = evaluate(_single(budget + 16, Reuse(), off)).ttft_ms
    assert one_chunk < a_token_more < 1.2 * one_chunk  # not a second full chunk


def test_host_hits_cost_their_load_and_the_suffix_attends_to_the_prefix() -> None:
    hbm = evaluate(_single(50_000, Reuse(hit_rate=0.9), KVTiers())).ttft_ms
    host = evaluate(_single(50_000, Reuse(hit_rate=0.9, hit_tier="host"), KVTiers(host_gib=100))).ttft_ms
    off = evaluate(_single(50_000, Reuse(), KVTiers(prefix_cache=False))).ttft_ms
    fresh = evaluate(_single(5_000, Reuse(), KVTiers(prefix_cache=False))).ttft_ms  # the same 5,000 tokens, no prefix
    assert fresh < hbm < host < off
    # SGLang hides the host load behind the suffix's prefill layer by layer; vLLM loads before it
    sgl = evaluate(_single(50_000, Reuse(hit_rate=0.9, hit_tier="host"), KVTiers(host_gib=100), "sglang"))
    sgl_hbm = evaluate(_single(50_000, Reuse(hit_rate=0.9), KVTiers(), "sglang"))
    assert sgl.ttft_ms - sgl_hbm.ttft_ms < host - hbm


def test_measured_hits_need_the_tier_they_name() -> None:
    from studio.core.errors import StudioError
    from studio.service.kv_tiers import checked_tiers

    p = _single(4000, Reuse(hit_rate=0.5, hit_tier="host"), KVTiers())
    with pytest.raises(StudioError, match="reuse.hit_tier 'host'.*kv_tiers.host_gib is 0"):
        checked_tiers(p, p.serving.kv_tiers)
