"""Measured kernel tables: loading, interpolation over shape, provenance, and the PCIe all-reduce."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from studio.core.errors import StudioError
from studio.core.layout import Layout
from studio.core.workload import Workload
from studio.engine import evaluate
from studio.engine.fabric.comm import allreduce
from studio.engine.fabric.topology import topology_of
from studio.engine.step import kernels as K
from studio.engine.step.constants import default_constants
from studio.engine.step.ops import target_of
from tests.engine.fixtures import H100, H200, L40S, L40S_BOX, LLAMA_8B, cluster, project


def test_manifest_cites_package_version_and_a_source_file_for_every_table():
    m = K.manifest()
    assert m["package"] == "aiconfigurator-core" and m["package_version"] == "0.12.0"
    for t in m["tables"].values():
        assert t["sources"] and all(s.startswith("aiconfigurator_core/systems/data/") for s in t["sources"].values())
        arrays = K._arrays(t["file"])
        assert all(a.dtype == np.float64 for a in arrays.values())  # read as float64, stored float32
    # every GPU preset maps to a measured silicon of the manifest
    assert set(m["gpus"]) >= {"h200-sxm", "mi300x", "rtx-pro-6000", "l40s"}


def test_gemm_is_interpolated_in_log_space_and_memory_bound_at_small_m():
    sil = K.silicon_for(H200)
    cv = K.gemm_curve(sil, K.Target.of(H200), "bf16", 4096, 4096)
    t = cv(np.array([1.0, 2.0, 8.0, 4096.0, 65536.0]))
    # a 4096×4096 BF16 weight (32 MiB) at m = 1..8 costs its bytes once: ~7 µs at 4.8 TB/s plus launch
    assert 0.007 < t[0] < 0.03 and t[2] < 1.2 * t[0]
    assert t[3] > 5 * t[0]  # at m = 4096 the FLOPs bind
    assert t[4] == pytest.approx(t[3] * 16, rel=0.3)  # beyond the table: grows with m
    assert cv.provenance == "measured: h200 GEMM, TensorRT-LLM 1.3.0rc20"
    # a shape between measured ones lies between their times
    lo, hi = (K.gemm_curve(sil, K.Target.of(H200), "bf16", n, 4096)(256.0) for n in (4096, 5120))
    mid = K.gemm_curve(sil, K.Target.of(H200), "bf16", 4600, 4096)(256.0)
    assert min(lo, hi) <= mid <= max(lo, hi)


def test_a_gpu_without_tables_is_an_estimate_from_the_nearest_silicon():
    from studio.io.presets import load_catalog

    mi = load_catalog().gpu("mi300x")
    sil = K.silicon_for(mi)
    assert not sil.measured and sil.silicon == "h200_sxm"
    cv = K.gemm_curve(sil, target_of(mi, sil, default_constants()), "bf16", 8192, 8192)
    assert cv.provenance.startswith("estimate: no table for mi300x")
    ref = K.gemm_curve(sil, K.Target.of(H200), "bf16", 8192, 8192)
    # compute-bound: MI300X's BF16 peak × its MAMF (51 %) against H200's (80 %) ⇒ slower than H200
    assert cv(8192.0) > ref(8192.0)
    # memory-bound: 5.3 TB/s × 77 % against 4.8 × 86.5 % ⇒ about as fast
    assert cv(1.0) == pytest.approx(ref(1.0), rel=0.15)


def test_engine_and_version_select_the_tables():
    assert K.silicon_for(H200, "vllm").version == "0.24.0"
    assert K.silicon_for(H200, "sglang", "0.5.14").label == "h200, SGLang 0.5.14"
    with pytest.raises(StudioError, match="no kernel tables for engine 'tgi'; shipped: trtllm"):
        K.silicon_for(H200, "tgi")


def test_a_version_without_tables_takes_the_nearest_shipped_and_says_so():
    from studio.io.presets import load_catalog

    a100 = load_catalog().gpu("a100-sxm-80g")
    newer = K.silicon_for(H200, "vllm", "0.33.0")  # H200 ships vLLM 0.24.0 only
    assert newer.version == "0.24.0" and newer.substitute == "nearest to 0.33.0"
    assert "vLLM 0.24.0 (nearest to 0.33.0)" in newer.provenance("GEMM")
    assert K.silicon_for(H200, "trtllm", "1.3.0rc20").substitute == ""  # shipped: no note
    assert K.silicon_for(a100, "trtllm", "1.0.0").version == "1.0.0"  # A100 ships the older release
    assert K.silicon_for(a100, "trtllm", "1.3.0rc20").version == "1.0.0"
    # the minor version decides before the patch: sglang 0.5.23 is nearer 0.5.14 than 0.4.x would be
    assert K.nearest_version([{"version": "0.4.9"}, {"version": "0.5.14"}], "0.5.23")["version"] == "0.5.14"


@pytest.mark.parametrize("runtime", ["vllm", "trtllm", "sglang"])
def test_each_engine_profile_runs_on_its_own_kernel_tables(runtime):
    from studio.core.workload import ServingConfig

    p = project(cluster(spec=H200), LLAMA_8B, Layout(tp=1, dp=8), workload=Workload(batch=4),
                serving=ServingConfig(runtime=runtime))
    r = evaluate(p)
    name = K.ENGINE_NAMES[runtime]
    terms = r.explanations["latency.tpot"].terms
    ops = [t for t in terms if t.name.startswith("stage 0 ") and t.name != "stage 0 decode" and "fixed" not in t.name]
    assert ops and all("h200 " in t.note and f", {name} " in t.note for t in ops)
    assert any(n.startswith(f"kernel tables used: h200, {name}") for n in r.explanations["engine"].notes)


def test_moe_touches_more_experts_with_tokens_and_ep_loads_one_rank_more():
    sil = K.silicon_for(H200)
    tgt = K.Target.of(H200)
    ep1 = K.moe_curve(sil, tgt, "bf16", 4096, 14336, 2, 8, 1)
    t = ep1(np.array([1.0, 2.0, 4.0, 16.0]))
    assert np.all(np.diff(t) > 0)
    assert t[3] / t[0] < 5.0  # 8 of 8 experts at 16 tokens, 2 at one: ~4× the bytes
    tp2 = K.moe_curve(sil, tgt, "bf16", 4096, 7168, 2, 8, 1)  # experts split in half over TP2
    ep2 = K.moe_curve(sil, tgt, "bf16", 4096, 14336, 2, 8, 2)  # four whole experts per GPU
    assert ep2(1.0) > 1.2 * tp2(1.0)


def test_measured_allreduce_on_nvswitch_and_ring_over_pcie_without_custom_allreduce():
    c = default_constants()
    box = cluster(spec=H100)
    topo = topology_of(box)
    col = allreduce(topo, [g.id for g in box.gpus], c)
    assert col.measured is not None and "custom all-reduce (8 GPUs)" in col.measured.provenance
    pcie = cluster(L40S_BOX, 1, L40S)
    pt = topology_of(pcie)
    gpus = [g.id for g in pcie.gpus]
    two, eight = allreduce(pt, gpus[:2], c), allreduce(pt, gpus, c)
    for x in (two, eight):
        assert x.measured is not None and "no custom all-reduce over PCIe" in x.measured.provenance
    # 8 GPUs cross the host bridges / socket link the pair behind one switch does not: slower per byte
    big = 64e6
    assert eight.time_us(big) > 2 * two.time_us(big)


def test_plan_explain_names_the_source_of_every_kernel():
    r = evaluate(project(cluster(), LLAMA_8B, Layout(tp=1, dp=8), workload=Workload(batch=4)))
    terms = r.explanations["latency.tpot"].terms
    ops = [t for t in terms if t.name.startswith("stage 0 ") and t.name != "stage 0 decode" and "fixed" not in t.name]
    assert ops and all(t.note.startswith(("measured: h100", "attention output GEMM: measured")) for t in ops)
    fixed = [t for t in terms if "fixed" in t.name]
    # vLLM's profile cites its scheduler time: the step adds only the GPU work outside the layers,
    # derived, not fitted
    c = default_constants()
    assert fixed and all(t.value == pytest.approx(c.decode_step_overhead_us / 1e3) for t in fixed)
    assert all("not fitted" in t.note and "scheduler" in t.note for t in fixed)


def test_a_constant_still_fitted_says_so_in_explain():
    from studio.core.workload import ServingConfig

    def fixed_terms(version: str | None):
        r = evaluate(project(cluster(), LLAMA_8B, Layout(tp=1, dp=8), workload=Workload(batch=4),
                             serving=ServingConfig(runtime="trtllm", runtime_version=version)))
        return [t for t in r.explanations["latency.tpot"].terms if "fixed" in t.name]

    c = default_constants()
    # TensorRT-LLM 0.14's C++ batch manager cites no per-iteration host time and does not overlap it:
    # the fitted remainder stands in, and says it is fitted
    old = fixed_terms("0.14")
    assert old and all(t.value == pytest.approx(c.decode_step_overhead_sync_us / 1e3) for t in old)
    assert all("still fitted" in t.note and "decode_step_overhead_sync_us" in t.note for t in old)
    # the overlapping PyTorch executor pays the GPU-side remainder, derived, not fitted
    new = fixed_terms(None)
    assert new and all(t.value == pytest.approx(c.decode_step_overhead_us / 1e3) for t in new)
    assert all("not fitted" in t.note for t in new)
    assert not any("per layer" in t.name for t in old + new)  # no per-layer constant: those kernels are timed


def test_retired_constants_get_a_clear_message():
    with pytest.raises(StudioError, match="'roofline_blend' was retired"):
        default_constants().with_overrides({"roofline_blend": 0.5})


@pytest.mark.slow  # a fresh interpreter
def test_the_engine_never_imports_pandas_pyarrow_or_aiconfigurator():
    code = ("import sys, json; from studio.engine import evaluate; from tests.engine.fixtures import *; "
            "evaluate(project(cluster(), MIXTRAL, Layout(tp=8))); "
            "print(json.dumps([m for m in ('pandas', 'pyarrow', 'aiconfigurator_core') if m in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_a_measured_moe_shape_is_used_as_measured():
    # Mixtral-8x7B's fused MoE (4096, 14336, top-2 of 8, EP1) is in TensorRT-LLM's H200 table:
    # one token costs what the table measured (0.1908 ms per layer), and the provenance says so
    sil = K.silicon_for(H200)
    cv = K.moe_curve(sil, K.Target.of(H200), "bf16", 4096, 14336, 2, 8, 1)
    assert "this shape measured" in cv.provenance
    assert float(cv(1.0)) == pytest.approx(0.1908, rel=0.02)
    # a shape nobody measured falls back to the roofline-efficiency model, and says nothing more
    other = K.moe_curve(sil, K.Target.of(H200), "bf16", 4096, 14000, 2, 8, 1)
    assert "this shape measured" not in other.provenance


def test_a_layers_elementwise_kernels_cost_the_measured_floor_and_their_bytes():
    from studio.engine.step.ops import elementwise_curve
    from studio.engine.step.shapes import layer_table, stage_shapes

    sil = K.silicon_for(H200)
    sh = stage_shapes(LLAMA_8B, layer_table(LLAMA_8B), LLAMA_8B.precision, "bf16", 1, 1, [LLAMA_8B.num_layers],
                      has_fp8=True, has_fp4=False)[0]
    cv = elementwise_curve(LLAMA_8B, sh, sil, K.Target.of(H200), 1)
    floor = float(np.min(sil.arrays()["gemm_bf16"][0]))
    one = float(cv(1.0))
    # four kernels per dense layer (two add + RMSNorm, RoPE / KV write, SiLU-and-multiply) at the
    # smallest measured kernel: latency-bound at one token
    assert one == pytest.approx(4 * LLAMA_8B.num_layers * floor, rel=0.02)
    assert 2.0e-3 < floor < 3.0e-3  # 2.4-2.5 µs on Hopper
    # bandwidth-bound at many tokens: grows with them
    assert float(cv(8192.0)) > 3 * one
    assert "smallest measured kernel" in cv.provenance and cv.provenance.startswith("measured: h200")


def test_collective_tables_are_read_in_bytes_not_elements():
    # aiconfigurator-core keys its comm tables by elements (half / bfloat16: 2 bytes); the B200 table
    # measures 1 GiB of bfloat16 (536,870,912 elements) on 4 GPUs with TensorRT-LLM's custom
    # all-reduce in ~2.6 ms, i.e. ~620 GB/s of bus bandwidth, not half that
    from studio.io.presets import load_catalog

    sil = K.silicon_for(load_catalog().gpu("b200"), "trtllm")
    tab = K.collective_table(sil, "ar_custom", 4)
    assert tab is not None and K.COLLECTIVE_ELEMENT_BYTES == 2.0
    assert tab.sizes[-1] == pytest.approx(2 * 536_870_912)
    t_ms = float(tab(2**30)) / 1e3
    assert 2.3 < t_ms < 2.9
    busbw = 2 * 3 / 4 * 2**30 / (t_ms * 1e-3) / 1e9
    assert busbw > 550
