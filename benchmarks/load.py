"""Speed of the serving model under load as the user reaches it. Prints medians; run
``PYTHONPATH=. python benchmarks/load.py`` from the checkout (so that it times this tree's code).

Targets (issue 10 §1): the closed form adds ≤ 1 ms to an evaluation; a 2,000-request simulation
≤ 200 ms. Also timed: the Load view's curve (16 rates, closed form only and with a 600-request
simulation at each rate for p99), and ``layout-studio simulate`` in process.
"""

from __future__ import annotations

import statistics
import sys
import time
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path

# this checkout's code, not an installed copy (`pip install .` leaves one in site-packages)
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from studio.cli import main
from studio.core.building.builders import build_cluster
from studio.core.layout import Layout
from studio.core.project import Project
from studio.core.workload import Load, ServingConfig, Workload
from studio.engine import evaluate
from studio.engine.serving.under_load import load_curve, simulate_plan
from studio.io.presets import load_catalog


def _median_ms(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def _project() -> Project:
    cat = load_catalog()
    cl = build_cluster(cat.node("dgx-h100"), 1, cat.gpu("h100-sxm"), cat.links)
    return Project(cluster=cl, model=cat.model("llama-3.1-70b").architecture, layout=Layout(tp=4, dp=2),
                   workload=Workload(isl=1024, osl=128), serving=ServingConfig(weight_dtype="fp8", kv_dtype="fp8"))


def main_bench() -> None:
    """Print the medians (ms)."""
    p = _project()
    sat = evaluate(p).load.saturation_rate_per_s
    at_rate = p.replace(workload=p.workload.replace(load=Load(mode="rate", rate_per_s=0.6 * sat)))
    evaluate(at_rate)
    base = _median_ms(lambda: evaluate(p.replace(name=p.name + " ")), 30)
    rate = _median_ms(lambda: evaluate(at_rate.replace(name=at_rate.name + " ")), 30)
    print(f"evaluate, closed loop at the batch      {base:8.2f} ms")
    print(f"evaluate, open loop at 60 % saturation  {rate:8.2f} ms  (load adds {rate - base:+.2f} ms; target ≤ 1 ms)")
    for n in (1000, 2000):
        load = Load(mode="rate", rate_per_s=0.6 * sat, num_requests=n)
        ms = _median_ms(lambda load=load: simulate_plan(p, load=load), 7)
        print(f"simulate_plan, {n:,} requests at 60 %     {ms:8.1f} ms" + ("  (target ≤ 200 ms)" if n == 2000 else ""))
    print(f"load_curve, 16 rates, closed form       {_median_ms(lambda: load_curve(p), 7):8.1f} ms")
    print(f"load_curve, 16 rates + p99 (600 req)    {_median_ms(lambda: load_curve(p, percentiles=True), 5):8.1f} ms")
    argv = ["simulate", "--gpu", "h100-sxm", "--nodes", "1", "--model", "llama-3.1-70b", "--tp", "4", "--dp", "2",
            "--rate", f"{0.6 * sat:.3g}", "--num-requests", "2000", "--json"]

    def cli() -> None:
        with redirect_stdout(StringIO()):
            assert main(argv) == 0

    print(f"layout-studio simulate (in process)     {_median_ms(cli, 5):8.1f} ms")


if __name__ == "__main__":
    main_bench()
