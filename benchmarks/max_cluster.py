"""The documented maximum cluster (65,536 GPUs) on the command line, and hostile-input timings.

Runs ``layout-studio plan --gpu h100-sxm --gpus-per-node 1024 --nodes 64`` (65,536 GPUs) in a
fresh process ``--repeat`` times and prints the median wall time and the peak resident memory;
the target is ≤ 60 s and ≤ 4 GB (issue 16). Then the same for ``layout-studio sweep --gpu h100-sxm
--gpus-per-node 1024 --nodes 64 --model llama-3.1-405b`` (every layout of the maximum cluster,
same targets, issue 37; ``--skip-sweep`` leaves it out). Then times the parsers on 200,000-character lines that
make a backtracking parser take quadratic time (medians of ``--repeat`` runs).

``--report`` times ``layout-studio report`` (HTML) the same way on 8-GPU H100 nodes
(``--report-nodes``, default 64 and 512) and on the maximum cluster, each run stopped after
``--report-timeout`` seconds (a stopped run is reported as such, not as a time).

Run: ``python benchmarks/max_cluster.py [--repeat 3] [--nodes 64] [--skip-plan] [--skip-sweep] [--report]``
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def plan_once(nodes: int, command: str = "plan") -> tuple[float, float, float]:
    """(wall seconds, peak RSS in MiB, CPU seconds) of one ``plan`` (or ``sweep`` of
    Llama-3.1-405B) run in a child process. The CPU time is what the run costs on a machine of its
    own: on a shared one the wall time also counts the other processes' turns."""
    cmd = [sys.executable, "-m", "studio.cli", command, "--gpu", "h100-sxm", "--gpus-per-node", "1024",
           "--nodes", str(nodes)]
    if command == "sweep":
        cmd += ["--model", "llama-3.1-405b"]
    import tempfile

    with tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err,
                                env={**os.environ, "PYTHONPATH": str(ROOT)})
        # wait4: this child's own peak (RUSAGE_CHILDREN would give the largest of every run so far)
        _pid, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            raise SystemExit(f"{command} failed ({proc.returncode}): {err.read().strip()}")
    return wall, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime  # ru_maxrss is in KiB on Linux


def report_once(nodes: int, gpus_per_node: int, timeout: float) -> tuple[float, float] | None:
    """(seconds, peak RSS in MiB) of one ``report`` run in a child process; None when it was
    stopped after ``timeout`` seconds."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "studio.cli", "report", "--gpu", "h100-sxm", "--model", "llama-3.1-405b",
               "--nodes", str(nodes), "--gpus-per-node", str(gpus_per_node), "-o", str(Path(tmp) / "r.html")]
        env = {**os.environ, "PYTHONPATH": str(ROOT), "QT_QPA_PLATFORM": "offscreen"}
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        start = time.perf_counter()
        try:
            proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env, timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            raise SystemExit(f"report failed ({proc.returncode}): {proc.stderr.strip()}")
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        return wall, max(peak, before) / 1024


def report_figures(node_counts: list[int], repeat: int, timeout: float) -> None:
    """Median wall time and peak RSS of ``report`` on 8-GPU nodes and on the maximum cluster."""
    for nodes, per_node in [*((n, 8) for n in node_counts), (64, 1024)]:
        runs = []
        for _ in range(repeat):
            r = report_once(nodes, per_node, timeout)
            if r is None:
                break
            runs.append(r)
        what = f"report, {nodes:,} × {per_node:,} GPUs ({nodes * per_node:,})"
        if len(runs) < repeat:
            print(f"{what}: stopped after {timeout:.0f} s (target ≤ 60 s, ≤ 4,096 MiB)")
            continue
        print(f"{what}: median {statistics.median(r[0] for r in runs):.1f} s, "
              f"peak RSS {max(r[1] for r in runs):,.0f} MiB (target ≤ 60 s, ≤ 4,096 MiB)")


def median_ms(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--nodes", type=int, default=64, help="nodes of 1,024 H100s (64 = 65,536 GPUs)")
    ap.add_argument("--skip-plan", action="store_true", help="no plan run")
    ap.add_argument("--skip-sweep", action="store_true", help="no sweep run")
    ap.add_argument("--report", action="store_true", help="also time `layout-studio report`")
    ap.add_argument("--report-nodes", type=int, nargs="+", default=[64, 512],
                    help="8-GPU node counts for --report (the maximum cluster is always added)")
    ap.add_argument("--report-timeout", type=float, default=600.0, help="stop a report run after this many s")
    args = ap.parse_args()
    if args.report:
        report_figures(args.report_nodes, args.repeat, args.report_timeout)
    if not args.skip_plan:
        runs = [plan_once(args.nodes) for _ in range(args.repeat)]
        print(f"plan, {args.nodes * 1024:,} GPUs: median {statistics.median(r[0] for r in runs):.1f} s "
              f"({statistics.median(r[2] for r in runs):.1f} s CPU), peak RSS {max(r[1] for r in runs):,.0f} MiB (target ≤ 60 s, ≤ 4,096 MiB)")
    if not args.skip_sweep:
        runs = [plan_once(args.nodes, "sweep") for _ in range(args.repeat)]
        print(f"sweep, {args.nodes * 1024:,} GPUs, Llama-3.1-405B: median {statistics.median(r[0] for r in runs):.1f} s "
              f"({statistics.median(r[2] for r in runs):.1f} s CPU), peak RSS {max(r[1] for r in runs):,.0f} MiB (target ≤ 60 s, ≤ 4,096 MiB)")

    from studio.core.errors import StudioError
    from studio.io.importers.nccl_log import parse_nccl_log
    from studio.io.importers.topo import parse_topo
    from studio.io.safe_regex import SafePattern

    n = 200_000
    cases = {
        "topology GPU name, 200k spaces": (parse_topo, "\tGPU0\tGPU1\nGPU0\t X \tNV18\nGPU1\tNV18\t X \nGPU 0: a" + " " * n + "(UUID\n"),
        "nccl rank line, 200k spaces": (parse_nccl_log, "# Rank 0 Group 0 Pid 1 on h device 0 [0x1] a" + " " * n + "b\n"),
    }
    for label, (fn, text) in cases.items():
        def run(fn=fn, text=text):
            try:
                fn(text, "bench")
            except StudioError:
                pass
        print(f"{label}: median {median_ms(run, args.repeat):.1f} ms")
    pat = SafePattern("(.*)*X")
    print(f"re:(.*)*X on a 60-character module name: median "
          f"{median_ms(lambda: pat.search('a' * 60), args.repeat):.3f} ms")


if __name__ == "__main__":
    main()
