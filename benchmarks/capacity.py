"""Speed of the fleet planner as the user reaches it. Prints medians; run
``PYTHONPATH=. python benchmarks/capacity.py`` from the checkout (so that it times this tree's code).

Target (issue 35): the capacity plan of a 1,440-point day (one rate per minute) on the 16-GPU
example (the bundled 2 × DGX H100 project, Llama-3.1-405B TP8×PP2) ≤ 2 s. Also timed: the same for
the hourly business-hours curve, its parts (the SLO-rate bisection, the power curve, the plan of the
slots), and ``layout-studio capacity`` in process.
"""

from __future__ import annotations

import statistics
import sys
import time
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from studio.cli import main
from studio.commands.options.project_args import load_base_project
from studio.engine.fleet.power import power_curve
from studio.engine.fleet.replica import Slo, max_rate_within_slo, replica_setup, replica_shape
from studio.engine.fleet.traffic import from_rates
from studio.io.fleet_presets import load_traffic, power_params
from studio.service.fleet import FleetOptions, capacity_plan

TTFT_MS, TPOT_MS = 2000.0, 50.0


def _median_s(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def per_minute_day(peak_per_s: float):
    """The business-hours shape interpolated to 1,440 per-minute rates, with ±10 % minute-to-minute noise."""
    hourly = load_traffic("business-hours-chat").rates_per_s
    minutes = np.arange(1440) / 60.0
    smooth = np.interp(minutes, np.arange(25), np.append(hourly, hourly[0]))
    noise = 1.0 + 0.1 * np.sin(minutes * 7.3) * np.cos(minutes * 3.1)
    rates = smooth * noise
    return from_rates("per-minute business day", rates * (peak_per_s / rates.max()))


def main_() -> None:
    project = load_base_project(None)
    opts = FleetOptions(TTFT_MS, TPOT_MS)
    day = per_minute_day(40.0)
    hourly = load_traffic("business-hours-chat").scaled_to_peak(40.0)
    print(f"16-GPU example: {project.name}, layout {project.layout.label}; SLO p99 TTFT ≤ {TTFT_MS:g} ms, "
          f"p99 TPOT ≤ {TPOT_MS:g} ms")
    t_day = _median_s(lambda: capacity_plan(project, day, opts), 5)
    t_hour = _median_s(lambda: capacity_plan(project, hourly, opts), 5)
    s = replica_setup(project)
    t_bisect = _median_s(lambda: max_rate_within_slo(s, project, Slo(TTFT_MS, TPOT_MS), requests=opts.requests), 5)
    cap = max_rate_within_slo(s, project, Slo(TTFT_MS, TPOT_MS), requests=opts.requests)
    shape = replica_shape(project)
    params, _ = power_params()
    t_power = _median_s(lambda: power_curve(s, shape, params, cap.rate_per_s), 5)
    argv = ["capacity", "--traffic", "business-hours-chat", "--peak", "40", "--ttft-p99-ms", f"{TTFT_MS:g}",
            "--tpot-p99-ms", f"{TPOT_MS:g}", "--json"]

    def cli() -> None:
        with redirect_stdout(StringIO()):
            main(argv)

    t_cli = _median_s(cli, 5)
    plan = capacity_plan(project, day, opts).plan
    print(f"capacity plan, 1,440-point day: median {t_day:.3f} s (target ≤ 2 s); "
          f"peak {int(plan.replicas.max())} replicas, {plan.kwh_per_day:,.0f} kWh/day")
    print(f"capacity plan, 24-point day:    median {t_hour:.3f} s")
    print(f"  SLO-rate bisection ({opts.requests} requests × 15 simulations): median {t_bisect * 1e3:.1f} ms")
    print(f"  power curve (17 rates): median {t_power * 1e3:.1f} ms")
    print(f"layout-studio capacity in process: median {t_cli:.3f} s")


if __name__ == "__main__":
    main_()
