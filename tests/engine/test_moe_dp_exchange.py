"""How MoE layers exchange tokens between attention-DP ranks, per engine version (issue 28):
TensorRT-LLM 1.0's CUTLASS MoE all-gathers every rank's quantized tokens and reduce-scatters the
outputs unless an all-to-all backend applies (multi-node NVLink, EP wider than top-k); newer
profiles and the other engines keep the all-to-all."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from studio.core.errors import StudioError
from studio.core.layout import Layout
from studio.core.workload import ServingConfig, Workload
from studio.engine import evaluate
from studio.engine.runtime import resolve
from studio.engine.runtime.loader import profiles_from_text
from studio.engine.runtime.profile import MoeExchange
from studio.engine.step.costing import gather_bytes_per_token
from tests.engine.fixtures import MIXTRAL, cluster, project

TRTLLM_JSON = Path(__file__).resolve().parents[2] / "presets" / "engines" / "trtllm.json"


def test_the_profiles_say_which_versions_gather():
    assert resolve("trtllm", "1.0.0").profile.moe.kind == "allgather"
    assert resolve("trtllm", "0.20.0").profile.moe.kind == "allgather"
    assert resolve("trtllm", "1.2.0").profile.moe.kind == "alltoall"
    assert resolve("vllm", None).profile.moe.kind == "alltoall"
    assert "fused_moe_cutlass.py" in resolve("trtllm", "1.0.0").profile.source("moe.dp_exchange")


def test_multi_node_nvlink_keeps_the_all_to_all_only_above_top_k():
    rule = MoeExchange(kind="allgather", alltoall_gpu_prefixes=("gb200",))
    assert rule.gathers("h100-sxm", ep=8, top_k=2)
    assert not rule.gathers("gb200", ep=8, top_k=2)  # MNNVL all-to-all
    assert rule.gathers("gb200", ep=8, top_k=8)  # moe_ep_size <= top_k: no all-to-all
    assert not MoeExchange().gathers("h100-sxm", ep=8, top_k=2)


def test_gathered_bytes_follow_the_quantized_format():
    h, k, n = 4096, 2, 4
    # NVFP4: half a byte per value + one e4m3 scale per 16 values; routing int32 + fp32 per expert
    fp4 = gather_bytes_per_token(h, k, n, "fp4", 2.0)
    assert fp4 == pytest.approx(n * (h * (0.5 + 1 / 16) + 8 * k + 2 * h) / 2)
    fp8 = gather_bytes_per_token(h, k, n, "fp8", 2.0)
    bf16 = gather_bytes_per_token(h, k, n, "bf16", 2.0)
    assert fp4 < fp8 < bf16
    # twice the ranks, twice the gathered and scattered message
    assert gather_bytes_per_token(h, k, 2 * n, "fp8", 2.0) == pytest.approx(2 * fp8)


def _adp_plan(version: str):
    p = project(cluster(), MIXTRAL, Layout(tp=1, dp=8, ep=8),
                Workload(isl=1000, osl=1000, max_batch=64),
                ServingConfig(runtime="trtllm", runtime_version=version, weight_dtype="fp8", kv_dtype="fp8"))
    return evaluate(p)


def test_trtllm_1_0_exchanges_by_all_gather_and_says_so():
    old, new = _adp_plan("1.0.0"), _adp_plan("1.2.0")
    a2a_old = [c for c in old.comm if c.kind == "alltoall" and c.phase == "decode"]
    a2a_new = [c for c in new.comm if c.kind == "alltoall" and c.phase == "decode"]
    assert a2a_old and a2a_old[0].algorithm == "all-gather + reduce-scatter"
    assert a2a_new and a2a_new[0].algorithm == "all-to-all"
    # every rank receives all the others' tokens instead of the share routed to it: more bytes
    assert a2a_old[0].message_bytes > a2a_new[0].message_bytes
    assert old.alltoall_us_per_layer_decode > new.alltoall_us_per_layer_decode
    why = old.explanations["comm.moe_exchange"]
    assert "all-gather" in why.formula and any("trtllm-1.0" in n for n in why.notes)
    assert any("fused_moe_cutlass.py" in n for n in why.notes)
    assert "all-to-all" in new.explanations["comm.moe_exchange"].formula


def test_without_ep_across_replicas_nothing_is_exchanged():
    p = project(cluster(), MIXTRAL, Layout(tp=2, dp=4, ep=2),
                serving=ServingConfig(runtime="trtllm", runtime_version="1.0.0"))
    why = evaluate(p).explanations["comm.moe_exchange"]
    assert why.value == 0.0 and "no expert-parallel group wider than TP" in why.notes[0]


def test_a_bad_exchange_kind_names_the_field():
    data = json.loads(TRTLLM_JSON.read_text(encoding="utf-8"))
    prof = next(p for p in data["profiles"] if p["id"] == "trtllm-1.0")
    prof["moe"]["dp_exchange"]["value"] = "broadcast"
    with pytest.raises(StudioError, match=r"moe\.dp_exchange\.value.*allowed: 'alltoall' or 'allgather'"):
        profiles_from_text("trtllm", json.dumps(data), "trtllm.json")


def test_trtllm_1_0_times_fp4_experts_on_blackwell_with_its_default_cutlass_backend():
    from studio.engine.step.kernels import Target, moe_curve, silicon_for
    from studio.io.presets import load_catalog

    assert resolve("trtllm", "1.0.0").profile.moe.backend == "cutlass"
    assert resolve("trtllm", "1.2.0").profile.moe.backend == ""
    assert "default='CUTLASS'" in resolve("trtllm", "1.0.0").profile.source("moe.backend")
    b200 = load_catalog().gpu("b200")
    sil = silicon_for(b200, "trtllm", "1.0.0")
    args = (sil, Target.of(b200), "fp4", 2048.0, 768.0, 8, 128, 1)
    fast, cutlass = moe_curve(*args), moe_curve(*args, backend="cutlass")
    # the package times CUTLASS apart from the faster TRTLLM-gen kernels: slower at every token count
    toks = np.array([1.0, 16.0, 256.0, 4096.0])
    assert np.all(cutlass(toks) > fast(toks) * 1.5)
    assert "CUTLASS backend" in cutlass.provenance and "CUTLASS" not in fast.provenance
    # a GPU whose tables time one backend only keeps its table
    h100 = load_catalog().gpu("h100-sxm")
    s2 = silicon_for(h100, "trtllm", "1.0.0")
    a2 = (s2, Target.of(h100), "fp8", 2048.0, 768.0, 8, 128, 1)
    assert np.allclose(moe_curve(*a2)(toks), moe_curve(*a2, backend="cutlass")(toks))


def test_a_named_moe_backend_replaces_the_profile_default():
    from studio.core.engine_features import EngineFeatures
    from studio.engine.runtime import engine_setup

    def backend(version: str, named: str | None, runtime: str = "trtllm") -> str:
        sv = ServingConfig(runtime=runtime, runtime_version=version, features=EngineFeatures(all2all_backend=named))
        return engine_setup(project(cluster(), MIXTRAL, Layout(tp=8), serving=sv)).moe_backend

    assert backend("1.0.0", None) == "cutlass"
    assert backend("1.0.0", "TRTLLM") == ""  # TRTLLM-gen kernels: the fastest measured table
    assert backend("1.2.0", "CUTLASS") == "cutlass"
    assert backend("0.10.0", "naive", runtime="vllm") == ""
