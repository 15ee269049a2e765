"""Start-up cost: each CLI command's whole-process CPU time next to the import floor, and the time
to a usable window.

CLI section. Each sample is a fresh interpreter; the commands run round-robin (one of each per
round) so that a busy, shared machine slows them alike. CPU time is user + system of the child
(``getrusage``), which is steadier than wall time when other processes compete for the cores. The
floor is ``python -c "import numpy, pydantic"`` measured in the same rounds; the targets are ratios
to it: ``--version`` ≤ 1.3×, the 70B-on-16×H200 ``sweep`` ≤ 1.5×. The headless commands run numpy's
OpenBLAS in one thread (``studio.cli.one_blas_thread``), which the floor does not, so a second
floor with ``OPENBLAS_NUM_THREADS=1`` is measured too and "x 1-thr" is each command's ratio to it:
what the command costs over importing its two libraries alone, like for like. Byte-code caching is on (one
warm-up round writes the ``.pyc`` files), as for an installed package, even where the environment
sets ``PYTHONDONTWRITEBYTECODE``.

Window section. Build the main window on the bundled example, show it, compute the plan and fill
every panel (offscreen), timed from interpreter start; target: usable ≤ 1.5 s.

Installed section (``--only installed``). Builds the wheel, installs it with pip into a temporary
folder and times the console script pip wrote (``layout-studio --version``, ``presets gpus``)
against ``python -m studio.cli`` of the same installed copy, round-robin: the installed command
must cost within 10 % of the module's (issue 33: it used to skip the fast path).

``--compare DIR`` runs every CLI command a second time per round with the code of another checkout
(``DIR``: e.g. ``git worktree add /tmp/before HEAD~3``), interleaved with this one, and prints both
side by side: the before/after of a change measured under the same load.

Usage: ``python benchmarks/startup.py [--runs 9] [--only cli|window|installed] [--compare DIR]``
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: The floor every ratio is taken against: the two libraries every command needs.
FLOOR = ("import numpy, pydantic (floor)", ["-c", "import numpy, pydantic"], None)

#: The same imports with numpy's OpenBLAS in one thread, as the headless commands run it
#: (``studio.cli.one_blas_thread``): the floor without OpenBLAS's idle worker threads, whose
#: spinning is most of the gap between the floor's CPU and wall time on a multi-core machine. The
#: ratio against it ("x 1-thr") is what the command costs over importing its libraries alone.
FLOOR_ONE_THREAD = ("import numpy, pydantic, 1 BLAS thread", ["-c", "import numpy, pydantic"], None)

#: Environment added to a command's own (the one-thread floor's).
EXTRA_ENV = {FLOOR_ONE_THREAD[0]: {"OPENBLAS_NUM_THREADS": "1"}}

#: (label, interpreter arguments, target as a multiple of the floor or None).
COMMANDS: tuple[tuple[str, list[str], float | None], ...] = (
    FLOOR,
    FLOOR_ONE_THREAD,
    ("--version", ["-m", "studio.cli", "--version"], 1.3),
    ("presets gpus", ["-m", "studio.cli", "presets", "gpus"], None),
    ("plan (bundled example)", ["-m", "studio.cli", "plan"], None),
    (
        "sweep 70B on 16x H200 --json",
        [
            "-m", "studio.cli", "sweep", "--model", "llama-3.1-70b", "--gpu", "h200-sxm",
            "--nodes", "2", "--ttft-ms", "1000", "--tpot-ms", "50", "--json",
        ],
        1.5,
    ),
)

WINDOW_CHILD = r"""
import time
t0 = time.perf_counter()
import json, sys
from studio.gui.window.app import application, build_window
app = application()
win = build_window(threaded=True)
win.show()
app.processEvents()
t_shown = time.perf_counter() - t0
done = []
win.doc.resultReady.connect(lambda *_: done.append(time.perf_counter() - t0))
win.doc.errorChanged.connect(lambda m: m and done.append(time.perf_counter() - t0))
while not done and time.perf_counter() - t0 < 30:
    app.processEvents()
    time.sleep(0.001)
win.metrics.repaint()
win.timeline.repaint()
t_usable = time.perf_counter() - t0
print(json.dumps({"shown": t_shown, "usable": t_usable, "error": win.doc.error}))
"""


def child_env(root: Path = ROOT) -> dict[str, str]:
    """The checkout's code first on the path, byte-code caching on, Qt offscreen, no saved settings."""
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", LAYOUT_STUDIO_NO_SETTINGS="1", PYTHONPATH=str(root))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def cpu_of(args: list[str], env: dict[str, str], cwd: Path = ROOT) -> tuple[float, float]:
    """Run ``python *args`` once; return (CPU seconds of the child, wall seconds)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, cwd=cwd)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"`python {' '.join(args)}` exited {proc.returncode}: {proc.stderr.strip()[-400:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def cli_section(runs: int, compare: Path | None = None) -> None:
    """Every command (and the floor) once per round, ``runs`` rounds; with ``compare``, each command
    also runs with that checkout's code in the same round, right after this one's."""
    roots = {"": ROOT} if compare is None else {"": ROOT, "before": compare.resolve()}
    envs = {tag: child_env(root) for tag, root in roots.items()}
    floors = (FLOOR[0], FLOOR_ONE_THREAD[0])
    jobs = [(label, tag, args) for label, args, _ in COMMANDS for tag in roots if tag == "" or label not in floors]

    def env_of(label: str, tag: str) -> dict[str, str]:
        return {**envs[tag], **EXTRA_ENV.get(label, {})}

    for label, tag, args in jobs:  # warm-up: write the .pyc files, fill the OS file cache
        cpu_of(args, env_of(label, tag), roots[tag])
    cpu: dict[tuple[str, str], list[float]] = {(label, tag): [] for label, tag, _ in jobs}
    wall: dict[tuple[str, str], list[float]] = {(label, tag): [] for label, tag, _ in jobs}
    for _ in range(runs):
        for label, tag, args in jobs:
            c, w = cpu_of(args, env_of(label, tag), roots[tag])
            cpu[label, tag].append(c)
            wall[label, tag].append(w)
    floor = statistics.median(cpu[FLOOR[0], ""])
    floor_one = statistics.median(cpu[FLOOR_ONE_THREAD[0], ""])
    load = os.getloadavg()[0]
    print(f"CLI start-up: whole-process CPU time, median of {runs} fresh processes each (load average {load:.1f})")
    if compare is not None:
        print(f"  'before' rows: the code of {roots['before']}, run in the same rounds")
    print(f"  {'command':38s} {'CPU ms':>7s} {'x floor':>8s} {'x 1-thr':>8s} {'wall ms':>8s}  target")
    for label, tag, _ in jobs:
        target = next(t for lbl, _, t in COMMANDS if lbl == label)
        med = statistics.median(cpu[label, tag])
        ratio = med / floor
        verdict = "" if target is None else f"<= {target:.1f}x floor: {'OK' if ratio <= target else 'OVER'}"
        name = f"{label} ({tag})" if tag else label
        print(f"  {name:38s} {med * 1000:7.0f} {ratio:7.2f}x {med / floor_one:7.2f}x "
              f"{statistics.median(wall[label, tag]) * 1000:8.0f}  {verdict}")


def window_once(env: dict[str, str]) -> tuple[float, float, float]:
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", WINDOW_CHILD], capture_output=True, text=True, env=env, cwd=ROOT, check=True)
    wall = time.perf_counter() - start
    data = json.loads(out.stdout.strip().splitlines()[-1])
    if data["error"]:
        raise SystemExit(f"the example did not compute: {data['error']}")
    return data["shown"], data["usable"], wall


def window_section(runs: int) -> None:
    env = child_env()
    window_once(env)  # warm-up, as above
    samples = [window_once(env) for _ in range(runs)]
    shown = [r[0] for r in samples]
    usable = [r[1] for r in samples]
    wall = [r[2] for r in samples]
    print(f"window start-up, {runs} fresh processes, offscreen, bundled example (16 GPUs, Llama-3.1-405B)")
    print(f"  window shown        median {statistics.median(shown) * 1000:7.0f} ms  runs {[round(x * 1000) for x in shown]}")
    print(f"  usable (plan shown) median {statistics.median(usable) * 1000:7.0f} ms  runs {[round(x * 1000) for x in usable]}")
    print(f"  whole process       median {statistics.median(wall) * 1000:7.0f} ms  (interpreter start to exit)")
    print(f"  target: usable <= 1500 ms -> {'OK' if statistics.median(usable) <= 1.5 else 'OVER'}")


def install_wheel(folder: Path) -> Path:
    """Build this checkout's wheel with its PEP 517 backend and pip-install it into ``folder/site``."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        from pip._vendor import tomli as tomllib
    backend = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["build-system"]["build-backend"]
    build = f"import {backend} as b, sys; print(b.build_wheel(sys.argv[1]))"
    done = subprocess.run([sys.executable, "-c", build, str(folder)], cwd=ROOT, check=True,
                          capture_output=True, text=True)
    wheel = folder / done.stdout.strip().splitlines()[-1]
    site = folder / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--disable-pip-version-check",
                    "--target", str(site), str(wheel)], check=True, capture_output=True)
    return site


def installed_section(runs: int) -> None:
    """The installed console script against ``python -m studio.cli`` of the same installed copy."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        site = install_wheel(Path(tmp))
        env = dict(os.environ, PYTHONPATH=str(site), PYTHONNOUSERSITE="1", LAYOUT_STUDIO_NO_SETTINGS="1")
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        script = str(site / "bin" / "layout-studio")
        jobs = [(f"{how} {' '.join(argv)}", [script, *argv] if how == "installed" else ["-m", "studio.cli", *argv])
                for argv in (["--version"], ["presets", "gpus"]) for how in ("installed", "python -m")]
        for _, args in jobs:  # warm-up: the .pyc files, the OS file cache
            cpu_of(args, env, Path(tmp))
        cpu: dict[str, list[float]] = {label: [] for label, _ in jobs}
        for _ in range(runs):
            for label, args in jobs:
                cpu[label].append(cpu_of(args, env, Path(tmp))[0])
    print(f"installed wheel: whole-process CPU time, median of {runs} fresh processes each "
          f"(load average {os.getloadavg()[0]:.1f})")
    for i in range(0, len(jobs), 2):
        (script_label, _), (module_label, _) = jobs[i], jobs[i + 1]
        a, b = statistics.median(cpu[script_label]), statistics.median(cpu[module_label])
        verdict = "OK" if a <= 1.1 * b else "OVER"
        print(f"  {script_label:34s} {a * 1000:6.0f} ms   {module_label:34s} {b * 1000:6.0f} ms   "
              f"{a / b:5.2f}x (target <= 1.10x: {verdict})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=9, help="fresh processes per command (default 9)")
    ap.add_argument("--only", choices=("cli", "window", "installed"), help="run one section only")
    ap.add_argument("--compare", type=Path, metavar="DIR",
                    help="also run the CLI commands with the code of the checkout DIR, interleaved")
    args = ap.parse_args()
    if args.only in (None, "cli"):
        cli_section(args.runs, args.compare)
    if args.only in (None, "window"):
        window_section(args.runs)
    if args.only in (None, "installed"):
        installed_section(args.runs)


if __name__ == "__main__":
    main()
