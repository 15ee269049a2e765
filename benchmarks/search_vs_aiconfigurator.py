"""The whole search, aggregated and aggregated + disaggregated, as whole processes next to
aiconfigurator's ``cli default`` on the same question (issue 31).

The question: Llama-3.1-70B on 16× H200 (2 nodes of 8), ISL 2048 / OSL 256, TTFT ≤ 1 s, TPOT ≤ 50 ms.
Each sample is a fresh interpreter running ``layout-studio sweep ... --json`` (aggregated) or
``... --disagg --json`` (aggregated + disaggregated); the commands run round-robin, ``--repeat``
rounds, and the median CPU seconds (user + system of the child, steadier than wall time on a shared
machine) are printed with the best aggregated and disaggregated layouts and their output tokens/s
per GPU. Byte-code caching is on (a warm-up run writes the ``.pyc`` files), as for an installed
package, even where the environment sets ``PYTHONDONTWRITEBYTECODE``; the validated-preset cache
(:mod:`studio.io.preset_cache`) lives in a temporary folder of its own that the warm-up run fills, as
a user's first run fills theirs (in the shared user folder, a test run or another checkout evicts
its entries between samples). Targets: agg + disagg ≥ 30× faster than aiconfigurator, aggregated alone ≥ 35×.

aiconfigurator: ``--aiconfigurator CMD`` (default: ``aiconfigurator`` on the PATH; ``pip install
aiconfigurator==0.12.0`` in a virtual environment of its own) is timed the same way, after a warm-up
run of its own, with ``cli default --model-path meta-llama/Meta-Llama-3.1-70B --total-gpus 16 --system
h200_sxm --isl 2048 --osl 256 --ttft 1000 --tpot 50``, and its best aggregated and disaggregated rows
are printed beside ours. Without it the ratios are taken against the 15.9 s the issue measured for
aiconfigurator 0.12 on this question, and the script says so.

Then the 1,024-GPU cluster (128 × 8 H100, Llama-3.1-405B) agg + disagg sweep, median wall and CPU
seconds (target < 5 s; ``--skip-large`` leaves it out).

Run: ``python benchmarks/search_vs_aiconfigurator.py [--repeat 3] [--aiconfigurator CMD] [--skip-large]``
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

QUESTION = ["--model", "llama-3.1-70b", "--gpu", "h200-sxm", "--nodes", "2", "--isl", "2048",
            "--osl", "256", "--ttft-ms", "1000", "--tpot-ms", "50"]
LARGE = ["--model", "llama-3.1-405b", "--gpu", "h100-sxm", "--nodes", "128"]
#: aiconfigurator 0.12.0's ``cli default`` (PyPI ``aiconfigurator``), whose model is the Hugging Face path
#: of a config bundled in ``aiconfigurator-core`` (no download).
AIC_ARGS = ["cli", "default", "--model-path", "meta-llama/Meta-Llama-3.1-70B", "--total-gpus", "16",
            "--system", "h200_sxm", "--isl", "2048", "--osl", "256", "--ttft", "1000", "--tpot", "50"]
#: aiconfigurator 0.12 ``cli default`` on the question, CPU seconds, as issue 31 measured it.
AIC_REFERENCE_S = 15.9


def run_once(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float, str]:
    """(CPU seconds, wall seconds, stdout) of one child process; exits on failure."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=err, env=env)
        _pid, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        code = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if code != 0:
            raise RuntimeError(f"{shlex.join(cmd)} failed ({code}): {err.read().strip()[-400:]}")
        return usage.ru_utime + usage.ru_stime, wall, out.read()


def studio(args: list[str]) -> list[str]:
    return [sys.executable, "-m", "studio.cli", "sweep", *args, "--json"]


def best_aggregated(doc: dict) -> str:
    best = doc["layouts"][doc["recommended"]] if doc.get("recommended") is not None else None
    if best is None:
        return "none meets the targets"
    lay = best["layout"]
    tput = best["throughput"]["output_tokens_per_s_per_gpu"]
    return (f"TP{lay['tp']}×PP{lay['pp']}×EP{lay['ep']}×DP{lay['dp']} batch {best['batch']}: "
            f"{tput:,.1f} tok/s/GPU")


def best_disaggregated(doc: dict) -> str:
    dis = doc.get("disaggregated") or {}
    cands = dis.get("candidates") or []
    best = next((c for c in cands if c.get("meets_targets")), None)
    if best is None:
        return "none meets the targets"
    return (f"{best['pools']} batch {best['batch']} ({best['gpus']} GPUs): "
            f"{best['tokens_per_s_per_gpu']:,.1f} tok/s/GPU")


def aic_best(text: str) -> dict[str, str]:
    """aiconfigurator's rank-1 row of its ``agg`` and ``disagg`` tables: backend, tokens/s/GPU, parallel."""
    out: dict[str, str] = {}
    mode = None
    for line in text.splitlines():
        if "Top Configurations" in line:
            mode = line.split()[0]
            continue
        cells = [c.strip() for c in line.split("|")]
        if mode and len(cells) > 4 and cells[1] == "1":
            out[mode] = f"{cells[2]}: {cells[3]} tok/s/GPU, row: " + " ".join(c for c in cells[4:] if c)
            mode = None
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--aiconfigurator", default=shutil.which("aiconfigurator"),
                    help="aiconfigurator command (default: the one on the PATH)")
    ap.add_argument("--skip-large", action="store_true")
    a = ap.parse_args()
    # the preset cache in a folder of its own, written by the warm-up run as by a user's first run:
    # the test suite or another checkout sharing the user's cache folder evicts its entries
    cache = tempfile.mkdtemp(prefix="layout-studio-bench-cache-")
    atexit.register(shutil.rmtree, cache, True)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LAYOUT_STUDIO_CACHE_DIR": cache}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # byte-code cached, as for an installed package
    env.pop("LAYOUT_STUDIO_NO_CACHE", None)
    jobs: dict[str, tuple[list[str], dict[str, str] | None]] = {
        "aggregated": (studio(QUESTION), env),
        "agg + disagg": (studio([*QUESTION, "--disagg"]), env),
    }
    aic = shlex.split(a.aiconfigurator) if a.aiconfigurator else None
    if aic:
        jobs["aiconfigurator cli default"] = ([*aic, *AIC_ARGS], None)
    cpu: dict[str, list[float]] = {k: [] for k in jobs}
    docs: dict[str, str] = {}
    run_once(studio(QUESTION), env)  # warm-up: byte-code caches written, as for an installed package
    if aic:
        try:
            run_once([*aic, *AIC_ARGS])
        except RuntimeError as exc:
            print(f"aiconfigurator cli default: {exc}; dropped")
            del jobs["aiconfigurator cli default"]
    for _ in range(a.repeat):
        for name, (cmd, e) in list(jobs.items()):
            try:
                c, _w, out = run_once(cmd, e)
            except RuntimeError as exc:
                print(f"{name}: {exc}; dropped")
                del jobs[name]
                cpu.pop(name)
                continue
            cpu[name].append(c)
            docs[name] = out
    med = {k: statistics.median(v) for k, v in cpu.items() if v}
    ref = med.get("aiconfigurator cli default")
    if ref is None:
        print(f"aiconfigurator not run here: ratios against the {AIC_REFERENCE_S} s issue 31 measured "
              "for aiconfigurator 0.12 `cli default` on this question")
        ref = AIC_REFERENCE_S
    print(f"The question: Llama-3.1-70B on 16× H200, ISL 2048 / OSL 256, TTFT ≤ 1 s, TPOT ≤ 50 ms "
          f"(CPU seconds, median of {a.repeat})")
    targets = {"aggregated": 35.0, "agg + disagg": 30.0}
    for name, s in med.items():
        line = f"  {name:<28} {s:6.2f} s"
        if name in targets:
            ratio = ref / s
            line += f"   {ratio:5.1f}× faster (target ≥ {targets[name]:.0f}×: " \
                    f"{'met' if ratio >= targets[name] else 'NOT met'})"
        print(line)
    if "agg + disagg" in docs:
        doc = json.loads(docs["agg + disagg"])
        print(f"  best aggregated:     {best_aggregated(doc)}")
        print(f"  best disaggregated:  {best_disaggregated(doc)}")
    if "aiconfigurator cli default" in docs:
        for mode, row in aic_best(docs["aiconfigurator cli default"]).items():
            print(f"  aiconfigurator best {mode:<7} {row}")
    if a.skip_large:
        return
    walls, cpus = [], []
    for _ in range(a.repeat):
        c, w, _ = run_once(studio([*LARGE, "--disagg"]), env)
        walls.append(w)
        cpus.append(c)
    print(f"1,024 GPUs (128 × 8 H100, Llama-3.1-405B) agg + disagg sweep: median wall "
          f"{statistics.median(walls):.2f} s, CPU {statistics.median(cpus):.2f} s (target < 5 s)")


if __name__ == "__main__":
    main()
