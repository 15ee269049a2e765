"""Check the step model against aiconfigurator's own estimates on a grid of shapes.

    python benchmarks/kernel_check.py                # the grid, medians, worst cells
    python benchmarks/kernel_check.py --quick        # a smaller grid (one batch per decade)

Needs the ``kernels`` dev extra (``pip install ".[kernels]"``: aiconfigurator-core, pandas,
pyarrow); without it the script says so and exits 0. aiconfigurator is NVIDIA's estimator built on
the same measured kernel tables (its TensorRT-LLM database); its figures are a check, never a target
the engine is fitted to. For every cell — model (dense and MoE), weights (BF16, FP8), GPU with
tables, TP, batch 1…256 — it compares

* the decode step of a fixed batch (every sequence decodes one token at context isl + osl/2):
  ``AicEngine.decode_step_latency(batch, isl, osl)`` against our stage time (kernels + collectives +
  the per-iteration remainder; "kernels only" leaves it out);
* the prefill of a fixed batch of prompts: ``AicEngine.predict_prefill_latency(batch, isl)`` against
  our prefill stage time,

and prints the median |difference| overall, for MoE and for dense, and the worst cells with the
largest kernel of each side (what makes them differ).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

#: our model preset -> the HuggingFace config aiconfigurator ships (model_configs/)
MODELS = {
    "llama-3.1-8b": ("meta-llama--Meta-Llama-3.1-8B", False),
    "llama-3.1-70b": ("meta-llama--Meta-Llama-3.1-70B", False),
    "mixtral-8x7b": ("mistralai--Mixtral-8x7B-v0.1", True),
    "qwen3-30b-a3b": ("Qwen--Qwen3-30B-A3B", True),
    "qwen3-235b-a22b": ("Qwen--Qwen3-235B-A22B", True),
}
#: our GPU preset -> aiconfigurator system
GPUS = {"h100-sxm": "h100_sxm", "h200-sxm": "h200_sxm", "b200": "b200_sxm", "l40s": "l40s",
        "rtx-pro-6000": "rtx_pro_6000_server"}
#: smallest TP that holds the model's weights comfortably, per (model, GPU memory class)
TP = {"llama-3.1-8b": 1, "llama-3.1-70b": 4, "mixtral-8x7b": 2, "qwen3-30b-a3b": 1, "qwen3-235b-a22b": 8}
ISL, OSL = 1024, 1024


def _have_extra() -> bool:
    try:
        import aiconfigurator_core  # noqa: F401
        import pandas  # noqa: F401
    except ImportError:
        return False
    return True


def _aic(model_cfg: str, system: str, tp: int, dtype: str, moe: bool):
    from importlib import resources

    from aiconfigurator_core import AicEngine
    from aiconfigurator_core.sdk.engine import compile_engine

    src = resources.files("aiconfigurator_core") / "model_configs" / f"{model_cfg}_config.json"
    d = tempfile.mkdtemp()
    try:
        shutil.copy(str(src), os.path.join(d, "config.json"))
        quant = "fp8" if dtype == "fp8" else "bfloat16"
        kw = {"gemm_quant_mode": quant, "kvcache_quant_mode": "fp8" if dtype == "fp8" else "bfloat16",
              "fmha_quant_mode": "bfloat16"}
        if moe:
            kw.update(moe_quant_mode=quant, moe_tp_size=tp, moe_ep_size=1)
        spec = compile_engine(d, system, "trtllm", tp_size=tp, **kw)
        return AicEngine.from_spec(bytes(spec))
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _ours(model_id: str, gpu: str, tp: int, dtype: str):
    """(decode ms, prefill ms, kernels-only decode ms) as functions of the batch."""
    import numpy as np

    from benchmarks.validation.corpus import _cluster
    from studio.core.layout import Layout
    from studio.core.project import Project
    from studio.core.workload import Load, ServingConfig, Workload
    from studio.engine.fabric.topology import topology_of
    from studio.engine.plan.costs import cached_layer_table
    from studio.engine.plan.validate import check_layout
    from studio.engine.step.constants import default_constants
    from studio.engine.step.costing import layout_costs
    from studio.engine.step.step_times import step_times
    from studio.io.presets import load_catalog

    cat = load_catalog()
    cluster = _cluster(gpu, tp, 8)
    model = cat.model(model_id).architecture
    sv = ServingConfig(weight_dtype=dtype, kv_dtype="fp8" if dtype == "fp8" else "bf16", runtime="trtllm")
    wl = Workload(isl=ISL, osl=OSL, max_batch=256, load=Load(mode="offline", num_requests=256))
    lay = Layout(tp=tp, pp=1)
    proj = Project(cluster=cluster, model=model, workload=wl, serving=sv, layout=lay)
    c = default_constants()
    placement = check_layout(lay, cluster, model)
    topo = topology_of(cluster)
    lc = layout_costs(model, cached_layer_table(model), sv.effective_precision(model.precision), sv.kv_dtype, lay,
                      placement, topo, c, 0.9, 256)
    fixed = (c.decode_step_overhead_us + lc.shapes[0].layers * c.layer_overhead_us) / 1e3  # the fitted part
    del proj

    def at(b: list[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        st = step_times(lc, np.asarray(b, dtype=float), ISL, OSL, c)
        dec = st.decode_stage.sum(axis=0)
        return dec, st.prefill_stage.sum(axis=0), dec - fixed

    return at, lc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="batches 1, 16, 256 only")
    args = ap.parse_args(argv)
    if not _have_extra():
        print('kernel_check needs the kernels dev extra (pip install ".[kernels]"); skipped')
        return 0
    import logging

    logging.disable(logging.WARNING)
    batches = [1, 16, 256] if args.quick else [1, 2, 4, 8, 16, 32, 64, 128, 256]
    rows: list[tuple[str, str, str, str, int, float, float, float, bool]] = []
    engines: dict[tuple[str, str, str], tuple] = {}
    for model_id, (cfg, moe) in MODELS.items():
        for gpu, system in GPUS.items():
            for dtype in ("bf16", "fp8"):
                if gpu == "l40s" and model_id in ("llama-3.1-70b", "qwen3-235b-a22b"):
                    continue  # does not fit 48 GB at the TP the grid uses
                tp = TP[model_id]
                try:
                    eng = _aic(cfg, system, tp, dtype, moe)
                    ours, _lc = _ours(model_id, gpu, tp, dtype)
                except Exception as exc:  # noqa: BLE001 - a cell either side cannot build is reported, not fatal
                    print(f"skip {model_id} {gpu} {dtype} TP{tp}: {type(exc).__name__}: {str(exc)[:100]}")
                    continue
                dec, pre, kern = ours(batches)
                engines[(model_id, gpu, dtype)] = (eng, _lc)
                for i, b in enumerate(batches):
                    a_dec = float(eng.decode_step_latency(b, ISL, OSL))
                    rows.append((model_id, gpu, dtype, "decode", b, float(dec[i]), a_dec, float(kern[i]), moe))
                    if b <= 16:  # prefill of b prompts of ISL tokens (up to 16k tokens, one pass)
                        a_pre = float(eng.predict_prefill_latency(b, ISL))
                        rows.append((model_id, gpu, dtype, "prefill", b, float(pre[i]), a_pre, float(pre[i]), moe))

    def med(sel: list[tuple], k: int = 5) -> float:
        return statistics.median(abs(r[k] / r[6] - 1) for r in sel) if sel else float("nan")

    print(f"\n{len(rows)} cells (ISL {ISL}, OSL {OSL}; TensorRT-LLM tables; ours with the per-iteration remainder, "
          "and kernels only)")
    for name, sel in (("all", rows), ("MoE", [r for r in rows if r[8]]), ("dense", [r for r in rows if not r[8]]),
                      ("decode", [r for r in rows if r[3] == "decode"]), ("prefill", [r for r in rows if r[3] == "prefill"]),
                      ("BF16", [r for r in rows if r[2] == "bf16"]), ("FP8", [r for r in rows if r[2] == "fp8"])):
        print(f"  {name:8s} {len(sel):5d} cells   median |diff| {med(sel):6.1%}   kernels only {med(sel, 7):6.1%}")
    for g in GPUS:
        sel = [r for r in rows if r[1] == g]
        print(f"  {g:12s} {len(sel):4d} cells   median |diff| {med(sel):6.1%}")
    print("\nworst cells (ours / aiconfigurator):")
    for r in sorted(rows, key=lambda r: -abs(r[5] / r[6] - 1))[:12]:
        print(f"  {r[0]:16s} {r[1]:12s} {r[2]:4s} {r[3]:7s} b={r[4]:<4d} ours {r[5]:8.2f} ms  aic {r[6]:8.2f} ms  "
              f"{r[5] / r[6] - 1:+6.0%}  (kernels only {r[7] / r[6] - 1:+.0%})")
        if r[3] == "decode":
            print(f"      why: {_why(*engines[(r[0], r[1], r[2])], r[4])}")
    print("\naiconfigurator routes MoE tokens with a power law by default (ModelConfig.workload_distribution),\n"
          "so at small batch it touches fewer distinct experts than our balanced routing; its step has no\n"
          "per-iteration fixed cost (ours: decode_step_overhead_us, 50 us, derived from the measured kernel floor;\n"
          "the norms, activations and RoPE / KV writes are kernels on both sides: its ElementWise ops, ours\n"
          "timed at the measured smallest kernel and streaming bandwidth).")
    return 0


def _why(eng, lc, batch: int) -> str:
    """The op with the largest difference between the two decode steps (both per layer stack)."""
    from studio.engine.step.ops import breakdown

    theirs = {n: t for n, t, *_ in eng.decode_step_per_op(batch, ISL, OSL)}
    route = max(1, lc.layout.ep // lc.layout.tp) if lc.num_experts else 1
    ours = {n: t for n, t, _ in breakdown(lc.ops[0], lc.shapes[0], batch, ISL + OSL / 2, 0, ISL, route, lc.window)}
    pairs = {
        "MoE": (ours.get("MoE experts (fused grouped GEMMs)", 0.0), theirs.get("generation_moe", 0.0)),
        "attention": (ours.get("decode attention (paged KV read)", 0.0), theirs.get("generation_attention", 0.0)),
        "GEMMs": (ours.get("dense GEMMs (QKV, output, MLP, shared experts, router)", 0.0),
                  sum(v for k, v in theirs.items() if "gemm" in k and "logits" not in k)),
        "norms/elementwise": (ours.get("elementwise kernels (norms, RoPE/KV write, activation, routing)", 0.0),
                              sum(v for k, v in theirs.items() if "norm" in k or "act" in k)),
    }
    name, (a, b) = max(pairs.items(), key=lambda kv: abs(kv[1][0] - kv[1][1]))
    return f"{name}: ours {a:.2f} ms, aiconfigurator {b:.2f} ms"


if __name__ == "__main__":
    raise SystemExit(main())
