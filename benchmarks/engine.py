"""Engine speed and calibration. Prints medians; run ``python benchmarks/engine.py [--calibration]``.

Targets (issue 2 §6): one evaluation ≤ 1 ms; a 16-GPU sweep over all layouts and batch sizes
≤ 100 ms; ≥ 100,000 layouts/s in the vectorised step model. Large clusters: a cold 512-GPU sweep
< 1.5 s with no gap > 100 ms between progress calls or in a 5 ms ticker thread (the GUI event loop's
view of the GIL); ``evaluate`` on 512 GPUs ≤ 100 ms warm, also after an edit that makes a new
Cluster object with the same links.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from pathlib import Path

import numpy as np

# this checkout's code, not an installed copy (`pip install .` leaves one in site-packages)
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from studio.core.building.builders import build_cluster
from studio.core.edits import move_nodes
from studio.core.layout import Layout
from studio.core.project import Project
from studio.core.workload import ServingConfig, Workload
from studio.engine import default_constants, evaluate, sweep
from studio.engine.fabric.topology import topology_of
from studio.engine.plan.costs import project_costs
from studio.engine.serving.serve_times import serve_times
from studio.io.presets import load_catalog


def _project(nodes: int, model: str, template: str = "dgx-h100", gpu: str = "h100-sxm", **kw) -> Project:
    cat = load_catalog()
    cl = build_cluster(cat.node(template), nodes, cat.gpu(gpu), cat.links)
    return Project(cluster=cl, model=cat.model(model).architecture, **kw)


def _median(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def speed() -> None:
    p = _project(2, "llama-3.1-405b", layout=Layout(tp=8, pp=2, micro_batches=4))
    evaluate(p)
    t_eval = _median(lambda: evaluate(p), 200)
    print(f"evaluate (405B, 2x DGX H100, TP8xPP2): median {t_eval * 1e3:.3f} ms")
    s = sweep(p)
    t_sweep = _median(lambda: sweep(p), 10)
    print(f"sweep 16 GPUs: {s.candidates} candidates, median {t_sweep * 1e3:.1f} ms "
          f"({s.candidates / t_sweep:,.0f} layouts/s end to end)")
    c = default_constants()
    topo = topology_of(p.cluster)
    lc = project_costs(p, Layout(tp=8, pp=2), tuple(topo.gpu_ids), topo, c)
    n = 200_000
    rng = np.random.default_rng(0)
    batch = rng.integers(1, 1024, n).astype(float)
    micro = rng.choice([1.0, 2.0, 4.0, 8.0], n)
    t_vec = _median(lambda: serve_times(lc, batch, micro, 1024, 256, c), 5)
    print(f"vectorised step model: {n:,} (batch, M) rows in {t_vec * 1e3:.1f} ms = {n / t_vec:,.0f} layouts/s")
    big_sweep()
    for nodes in (64, 128):
        big_evaluate(nodes)


class _Ticker:
    """A thread that wakes every 5 ms and records the largest gap: how long the GIL was held away
    from a thread that wanted it (what a GUI event loop next to a worker thread would feel)."""

    def __init__(self) -> None:
        self.gaps: list[float] = []
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        last = time.perf_counter()
        while not self._stop.is_set():
            time.sleep(0.005)
            now = time.perf_counter()
            self.gaps.append(now - last)
            last = now

    def __enter__(self) -> _Ticker:
        self._t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._t.join()


def big_sweep() -> None:
    big = _project(64, "llama-3.1-405b")  # a fresh Cluster object: nothing cached for it yet
    ticks: list[float] = []

    def progress(frac: float) -> bool:
        ticks.append(time.perf_counter())
        return True

    with _Ticker() as tk:
        t0 = time.perf_counter()
        sb = sweep(big, progress=progress)
        cold = time.perf_counter() - t0
    gaps = np.diff([t0, *ticks]) * 1e3
    t_big = _median(lambda: sweep(big), 3)
    # what the Explorer re-sweeps after a workload edit: the same cluster, other prompt lengths
    edited = [big.replace(workload=big.workload.replace(isl=k * big.workload.isl)) for k in (2, 3, 4, 5, 6)]
    t_edit = statistics.median(_median(lambda q=q: sweep(q), 1) for q in edited)
    print(f"sweep 512 GPUs (64 DGX H100): {sb.candidates} candidates, cold {cold:.2f} s, warm median {t_big:.2f} s, "
          f"after a workload edit median {t_edit:.2f} s; {len(ticks)} progress calls, longest gap "
          f"{gaps.max():.0f} ms; ticker thread longest wait {max(tk.gaps) * 1e3:.0f} ms")


def big_evaluate(nodes: int) -> None:
    p = _project(nodes, "llama-3.1-405b")
    gpus = nodes * 8
    lay = Layout(tp=8, pp=2, dp=gpus // 16, micro_batches=2)
    t0 = time.perf_counter()
    evaluate(p, lay)
    cold = time.perf_counter() - t0
    warm = _median(lambda: evaluate(p, lay), 5)
    edits = []
    for k in range(5):  # each edit makes a new Cluster object with the same links
        cl = move_nodes(p.cluster, {p.cluster.nodes[0].id: (10.0 * (k + 1), 0.0)})
        q = p.model_copy(update={"cluster": cl})
        t = time.perf_counter()
        evaluate(q, lay)
        edits.append(time.perf_counter() - t)
    print(f"evaluate {gpus} GPUs ({lay.label}): cold {cold * 1e3:.0f} ms, warm median {warm * 1e3:.1f} ms, "
          f"after a node move median {statistics.median(edits) * 1e3:.1f} ms")


# TensorRT-LLM v0.17 perf-overview (reference/serving-calibration.md §1): H200 FP8 weights+KV, TP only,
# offline max throughput (output tok/s); MLPerf v4.1 Llama-2-70B is not included (different model).
POINTS = [
    ("llama-3.1-8b", 1, 128, 2048, 25398.86), ("llama-3.1-8b", 1, 2048, 128, 3794.14),
    ("llama-3.1-8b", 1, 1000, 1000, 17537.96),
    ("llama-3.1-70b", 1, 128, 2048, 4165.68), ("llama-3.1-70b", 2, 500, 2000, 6848.02),
    ("llama-3.1-70b", 4, 1000, 1000, 8911.29), ("llama-3.1-70b", 8, 128, 2048, 21195.88),
    ("llama-3.1-70b", 8, 2048, 128, 1983.03), ("llama-3.1-70b", 8, 5000, 500, 2717.83),
    ("llama-3.1-405b", 8, 1000, 1000, 3399.69), ("llama-3.1-405b", 8, 128, 2048, 5938.09),
    ("mixtral-8x7b", 8, 128, 2048, 68608.45), ("mixtral-8x7b", 2, 1000, 1000, 19151.19),
    # further Mixtral rows of the same table, to check the MoE decode model beyond the two fitted rows
    ("mixtral-8x7b", 1, 1000, 1000, 10371.36), ("mixtral-8x7b", 2, 128, 2048, 29584.05),
    ("mixtral-8x7b", 4, 1000, 1000, 33580.90), ("mixtral-8x7b", 8, 1000, 1000, 44705.48),
    ("mixtral-8x7b", 4, 2048, 128, 5467.62), ("mixtral-8x7b", 8, 2048, 128, 7554.38),
]


def calibration() -> None:
    print("| point | measured tok/s | predicted tok/s | error |")
    print("|---|---|---|---|")
    errs = []
    for model, tp, isl, osl, measured in POINTS:
        p = _project(1, model, template="hgx-h200", gpu="h200-sxm",
                     workload=Workload(isl=isl, osl=osl, max_batch=2048),
                     serving=ServingConfig(weight_dtype="fp8", kv_dtype="fp8", gpu_memory_utilization=0.95))
        r = evaluate(p, Layout(tp=tp, dp=8 // tp))
        pred = r.output_tokens_per_s / (8 // tp)
        err = (pred - measured) / measured
        errs.append(abs(err))
        print(f"| {model} TP{tp} {isl}/{osl} H200 FP8 (TRT-LLM v0.17) | {measured:,.0f} | {pred:,.0f} | {err:+.0%} |")
    print(f"\nmedian |error| {statistics.median(errs):.0%}, max {max(errs):.0%}")
    cat = load_catalog()
    m = cat.model("llama-3.1-405b").architecture
    from studio.core.architecture import ModulePrecision

    prec = ModulePrecision(attention="bf16", mlp="fp8", experts="fp8", embeddings="bf16", lm_head="bf16")
    p = _project(1, "llama-3.1-405b", serving=ServingConfig(precision=prec))
    w = evaluate(p, Layout(tp=8)).memory[0].weights / 2**30
    print(f"\nM1 405B FP8 (BF16 attention) TP8 weights per rank: measured 57.75 GiB, predicted {w:.2f} GiB "
          f"({(w - 57.75) / 57.75:+.1%}); model {m.name}")
    p = _project(1, "llama-3.1-70b", workload=Workload(batch=1))
    r = evaluate(p, Layout(tp=8))
    print(f"decode all-reduce TP8 H100 NVLink, batch 1 ({8192 * 2} B): predicted {r.allreduce_us_per_layer_decode:.1f} µs; "
          "sglang custom AR 5.7-7.8 µs at 4-32 KiB; card ~5 µs")
    c = default_constants()
    topo = topology_of(p.cluster)
    from studio.engine.fabric.comm import allreduce

    col = allreduce(topo, topo.gpu_ids[:8], c)
    for size, meas in ((32768, 17.9), (1 << 20, 25.3), (16 << 20, 121), (256 << 20, 1062), (1 << 30, 4050)):
        algo = col.pick(float(size))
        t = float(col.time_us(float(size)))
        print(f"all-reduce 8x H100/H200 NVSwitch {size:>11,} B: measured (NCCL 2.30, H200) {meas} µs, "
              f"predicted {t:.1f} µs via {algo.name if algo else '-'} ({(t - meas) / meas:+.0%})")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--calibration", action="store_true", help="print the calibration table instead")
    calibration() if ap.parse_args().calibration else speed()
