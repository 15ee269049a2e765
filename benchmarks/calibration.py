"""Fit the engine's efficiency constants on public serving measurements and report held-out error.

    python benchmarks/calibration.py                 # report the bundled constants on the corpus
    python benchmarks/calibration.py --fit           # fit on all points, print the constants
    python benchmarks/calibration.py --fit --from-prior --write   # as the held-out fits, store them
    python benchmarks/calibration.py --protocol      # 5-fold CV + leave-one-source-out (slow: ~10 fits)
    python benchmarks/calibration.py --protocol --markdown docs/calibration-results.md

The corpus is ``benchmarks/validation/calibration-points.json`` (sources listed in
docs/calibration.md). The loss is the mean absolute log error, so a prediction 2× high and one 2×
low weigh the same; a point off by more than 2× counts as a miss of log 2, so no point dominates. The optimiser is a bounded coordinate search
(no SciPy needed): each constant is scaled up and down by shrinking factors while the loss falls.

Held-out error: every point is predicted by constants fitted WITHOUT it — five folds stratified by
GPU (the "check on the rest" figure) and leave-one-source-out (a whole publication/version held
out, the harder "new source" figure). Targets (issue 10): median |error| ≤ 12 %, no GPU or metric
group above 20 %, ≥ 95 % of points within 2×.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

# this checkout's code (and its benchmarks package), not an installed copy: `pip install .` leaves
# one in site-packages, which `import studio` would otherwise find first
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.validation.corpus import Point, load_points, predict
from studio.core.errors import StudioError
from studio.engine.step.constants import Constants, default_constants

#: Fitted constants: name -> (lower bound, upper bound, additive step or None for multiplicative).
#: Not fitted (see NOT_FITTED): the kernel scales and ``moe_imbalance_factor``.
PARAMS: dict[str, tuple[float, float, float | None]] = {
    "decode_step_overhead_sync_us": (10.0, 10000.0, None),
    "request_overhead_ms": (0.1, 50.0, None),
}
#: Not fitted: the step model times its kernels from measured tables (presets/kernels), so the
#: scales on them stay at 1 and routing stays balanced. Only the fixed costs the tables do not
#: measure (per iteration, per layer, the front end's per request) are fitted. Before the kernel
#: tables (issue 28) the fit also moved prefill_efficiency, gemm_half_tokens, expert_gemm_half_tokens,
#: roofline_blend, moe_layer_overhead_us, moe_overhead_half_tokens, moe_permute_passes,
#: attention_efficiency, matmul_efficiency_fp4 and two GDDR hbm_efficiency entries.
NOT_FITTED: dict[str, float] = {"prefill_efficiency": 1.0, "decode_efficiency": 1.0, "moe_imbalance_factor": 1.0,
                                 "layer_overhead_us": 0.0, "decode_step_overhead_us": 50.0}
NOT_FITTED_MEANING = {"prefill_efficiency": "GEMMs, MoE and prefill attention as the kernel tables measured them",
                      "decode_efficiency": "weight streaming and decode attention as the kernel tables measured them",
                      "moe_imbalance_factor": "routed experts evenly loaded",
                      "layer_overhead_us": "no per-layer constant: a layer's norms, RoPE / KV writes, activations and "
                                           "routing are memory-bound kernels timed from the measured tables",
                      "decode_step_overhead_us": "the GPU work of an iteration outside its layers under an overlapping "
                                                 "scheduler: ~20 kernels (embedding gather, final norm, logits cast, "
                                                 "sampling, token copy) at the 2.5 us smallest kernel the Hopper tables "
                                                 "measured; the host work hides behind the GPU step. Fitted it ran to "
                                                 "its 5 ms bound, absorbing TensorRT-LLM 1.0's large-batch and "
                                                 "pipeline over-prediction (docs/calibration.md)"}
#: Where every held-out fit starts: round, unfitted values (the engine's first guesses before any
#: fit), so no held-out point influences its own prediction through the starting point.
PRIOR: dict[str, float] = {"decode_step_overhead_sync_us": 300.0, "request_overhead_ms": 2.0}
#: Step factors of the held-out fits. They start from PRIOR, so they need the longer schedule: from
#: PRIOR on every point, (1.5, 1.2) stops at loss 0.174 (median 13.7 %), this one reaches 0.157
#: (11.0 %), the loss of the bundled constants — a held-out figure then measures the points left out,
#: not an unfinished search.
HELD_OUT_FACTORS = (2.0, 1.5, 1.2, 1.1, 1.05)
FAIL = math.log(10.0)  # loss of a point the engine cannot cost (does not fit, error)


def _get(c: Constants, name: str) -> float:
    key, _, gpu = name.partition(":")
    v = getattr(c, key)
    return float(v.get(gpu, v["default"])) if isinstance(v, dict) else float(v)


def _with(c: Constants, values: dict[str, float]) -> Constants:
    return c.with_overrides(values)


def log_error(p: Point, c: Constants) -> float:
    """|log(predicted / measured)| of one point (``FAIL`` when it cannot be costed)."""
    try:
        v = predict(p, c)
    except StudioError:  # a point the engine refuses (does not fit) counts as a miss
        return FAIL
    if not (v > 0 and math.isfinite(v)):
        return FAIL
    return abs(math.log(v / p.measured))


#: A point off by more than 2× counts as one miss, not by how far it is off: the few points the model
#: cannot explain (a run far slower than its hardware, e.g. the AMD reference's H100 405B) then stop
#: dragging the constants every other point depends on. Fitting with this cap (from PRIOR, on every
#: point) reached loss 0.150 even by the uncapped measure, where the uncapped fit stopped at 0.157.
LOSS_CAP = math.log(2.0)


def _capped(e: float) -> float:
    return min(e, LOSS_CAP)


def loss(points: list[Point], c: Constants) -> float:
    """The fit's loss: mean |log error|, each point's capped at :data:`LOSS_CAP`."""
    return sum(_capped(log_error(p, c)) for p in points) / max(1, len(points))


def _acts_on(name: str, p: Point) -> bool:
    """Whether constant ``name`` can change ``p``'s prediction (a superset is always safe).

    Most constants act on every point; the GPU-specific ones only on that GPU's points (FP4 matmul
    only with FP4 weights), the MoE ones only on MoE models, the front end's request overhead only
    on served (not offline) runs. The fit re-costs only these points when it moves one constant.
    """
    from benchmarks.validation.corpus import project_for

    key, _, gpu = name.partition(":")
    if key == "matmul_efficiency_fp4":
        own = {g for g in PARAMS_GPUS.get(key, ()) if g != "default"}
        on_gpu = p.gpu == gpu if gpu != "default" else p.gpu not in own
        return on_gpu and p.precision == "fp4"
    if gpu:
        own = {g for g in PARAMS_GPUS.get(key, ()) if g != "default"}
        return p.gpu == gpu if gpu != "default" else p.gpu not in own
    if key in MOE_PARAMS:
        return project_for(p)[0].model.moe is not None
    if key == "request_overhead_ms":
        return project_for(p)[0].workload.load.mode != "offline"
    return True


#: The constants that act on MoE models only, and the GPUs each per-GPU constant is fitted for.
MOE_PARAMS: frozenset[str] = frozenset()
PARAMS_GPUS: dict[str, tuple[str, ...]] = {}
for _name in PARAMS:
    _key, _, _gpu = _name.partition(":")
    if _gpu:
        PARAMS_GPUS[_key] = (*PARAMS_GPUS.get(_key, ()), _gpu)


class _Errors:
    """Per-point log errors at the fit's current constants; a trial move of one constant re-costs
    only the points it acts on (:func:`_acts_on`), so the loss is the same as :func:`loss`'s."""

    def __init__(self, points: list[Point], base: Constants, values: dict[str, float]) -> None:
        self.points, self.base = points, base
        self.errs = [log_error(p, _with(base, values)) for p in points]
        self.deps = {name: [i for i, p in enumerate(points) if _acts_on(name, p)] for name in PARAMS}

    @property
    def loss(self) -> float:
        return sum(map(_capped, self.errs)) / max(1, len(self.errs))

    def trial(self, values: dict[str, float], name: str) -> tuple[float, dict[int, float]]:
        """Loss with ``values`` (differing from the current ones in ``name`` only) and the changed errors."""
        c = _with(self.base, values)
        changed = {i: log_error(self.points[i], c) for i in self.deps[name]}
        total = sum(map(_capped, self.errs)) + sum(_capped(e) - _capped(self.errs[i]) for i, e in changed.items())
        return total / max(1, len(self.errs)), changed

    def accept(self, changed: dict[int, float]) -> None:
        for i, e in changed.items():
            self.errs[i] = e


def fit(points: list[Point], base: Constants | None = None, verbose: bool = False,
        factors: tuple[float, ...] = (1.5, 1.2, 1.07)) -> dict[str, float]:
    """Constants (the names of :data:`PARAMS`) that minimise :func:`loss` on ``points``.

    A bounded coordinate search: each pass tries every constant up and down by ``factor`` (or an
    additive step), keeps stepping in a direction while the loss falls, and shrinks the factor when a
    whole pass brings nothing.
    """
    base = base or default_constants()
    values = {k: _get(base, k) for k in PARAMS}
    errors = _Errors(points, base, values)
    best = errors.loss

    def moved(name: str, v0: float, direction: int, factor: float) -> float:
        lo, hi, step = PARAMS[name]
        v1 = v0 * factor ** direction if step is None else v0 + direction * step * (factor - 1) / 0.5
        return min(hi, max(lo, v1))

    for factor in factors:
        improved = True
        while improved:
            improved = False
            for name in PARAMS:
                for direction in (1, -1):
                    v1 = moved(name, values[name], direction, factor)
                    if v1 == values[name]:
                        continue
                    l1, changed = errors.trial(dict(values, **{name: v1}), name)
                    if l1 >= best - 1e-5:
                        continue
                    while l1 < best - 1e-5:  # keep going while it pays
                        best, values, improved = l1, dict(values, **{name: v1}), True
                        errors.accept(changed)
                        if verbose:
                            print(f"  loss {best:.4f}  {name} = {v1:.4g}", flush=True)
                        v1 = moved(name, v1, direction, factor)
                        if v1 == values[name]:
                            break
                        l1, changed = errors.trial(dict(values, **{name: v1}), name)
                    break
    return values


def _summary(rows: list[tuple[Point, float]]) -> dict[str, float]:
    errs = [abs(v / p.measured - 1) if v > 0 else 1.0 for p, v in rows]
    within = [0.5 <= v / p.measured <= 2.0 for p, v in rows]
    return {"n": len(rows), "median": statistics.median(errs) if errs else math.nan,
            "within_2x": sum(within) / len(within) if within else math.nan}


def _safe_predict(p: Point, c: Constants) -> float:
    try:
        return predict(p, c)
    except StudioError:
        return 0.0


def report(rows: list[tuple[Point, float]], title: str) -> list[str]:
    """Markdown lines: overall, per GPU, per precision, per metric, per source, worst points."""
    out = [f"### {title}", ""]
    s = _summary(rows)
    out.append(f"All {s['n']} points: median |error| **{s['median']:.1%}**, within 2×: **{s['within_2x']:.1%}**.")
    out.append("")
    for label, key in (("engine", lambda p: p.engine), ("GPU", lambda p: p.gpu), ("weight precision", lambda p: p.precision),
                       ("metric", lambda p: p.metric), ("source", lambda p: p.group)):
        groups: dict[str, list[tuple[Point, float]]] = defaultdict(list)
        for p, v in rows:
            groups[key(p)].append((p, v))
        out.append(f"| {label} | points | median abs. error | within 2× | median signed error |")
        out.append("|---|---|---|---|---|")
        for g, rs in sorted(groups.items()):
            gs = _summary(rs)
            signed = statistics.median([(v / p.measured - 1) for p, v in rs])
            out.append(f"| {g} | {gs['n']} | {gs['median']:.1%} | {gs['within_2x']:.0%} | {signed:+.1%} |")
        out.append("")
    worst = sorted(rows, key=lambda r: -abs(math.log(max(r[1], 1e-9) / r[0].measured)))[:12]
    out.append("| worst points | measured | predicted | error |")
    out.append("|---|---|---|---|")
    for p, v in worst:
        out.append(f"| {p.id} | {p.measured:,.1f} | {v:,.1f} | {v / p.measured - 1:+.0%} |")
    out.append("")
    return out


def folds_by_gpu(points: list[Point], k: int = 5) -> list[list[int]]:
    """``k`` folds; each GPU × metric group dealt round-robin so every fold sees every group."""
    order = sorted(range(len(points)), key=lambda i: (points[i].gpu, points[i].metric, points[i].id))
    folds: list[list[int]] = [[] for _ in range(k)]
    for n, i in enumerate(order):
        folds[n % k].append(i)
    return folds


def _fit_fold(args: tuple[list[int], list[int]]) -> list[tuple[str, float]]:
    """Fit on ``train`` (indices), predict ``test``; module-level so a process pool can run it."""
    train_idx, test_idx = args
    points = load_points()
    prior = _with(default_constants(), {**PRIOR, **NOT_FITTED})
    c = _with(prior, fit([points[i] for i in train_idx], prior, factors=HELD_OUT_FACTORS))
    return [(points[i].id, _safe_predict(points[i], c)) for i in test_idx]


def held_out(points: list[Point], folds: list[list[int]], label: str, jobs: int = 1) -> list[tuple[Point, float]]:
    """Every point predicted by constants fitted on the other folds (``jobs`` folds at once)."""
    tasks = []
    for test in folds:
        held = set(test)
        tasks.append(([i for i in range(len(points)) if i not in held], list(test)))
    print(f"{label}: {len(folds)} fits ({jobs} at a time)", file=sys.stderr, flush=True)
    if jobs > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=jobs) as pool:
            results = list(pool.map(_fit_fold, tasks))
    else:
        results = [_fit_fold(t) for t in tasks]
    by_id = {p.id: p for p in points}
    return [(by_id[pid], v) for fold in results for pid, v in fold]


def memory_checks() -> list[str]:
    """Weights per rank and KV bytes against framework logs (reference/memory.md)."""
    from studio.core.architecture import ModulePrecision
    from studio.core.building.builders import build_cluster
    from studio.core.layout import Layout
    from studio.core.project import Project
    from studio.core.workload import ServingConfig, Workload
    from studio.engine import evaluate
    from studio.io.presets import load_catalog

    cat = load_catalog()
    out = ["### Memory against engine logs", "",
           "| check | log | engine | error |", "|---|---|---|---|"]

    def proj(model: str, gpus: int, **serving: object) -> Project:
        t = cat.node("dgx-h100").replace(gpus_per_node=gpus)
        cl = build_cluster(t, 1, cat.gpu("h100-sxm"), cat.links)
        return Project(cluster=cl, model=cat.model(model).architecture, workload=Workload(isl=1024, osl=1024),
                       serving=ServingConfig(**serving), layout=Layout(tp=gpus))

    prec = ModulePrecision(attention="bf16", mlp="fp8", experts="fp8", embeddings="bf16", lm_head="bf16")
    w = evaluate(proj("llama-3.1-405b", 8, precision=prec)).memory[0].weights / 2**30
    out.append(f"| M1: Llama-3.1-405B FP8 (BF16 attention), TP8, weights per rank (vLLM) | 57.75 GiB | {w:.2f} GiB | {w / 57.75 - 1:+.1%} |")
    w = evaluate(proj("llama-3.1-8b", 1)).memory[0].weights / 2**30
    out.append(f"| M12/M13: Llama-3.1-8B BF16, weights (vLLM V1) | 14.99 GiB | {w:.2f} GiB | {w / 14.99 - 1:+.1%} |")
    r = evaluate(proj("llama-3.1-8b", 1))
    kv = r.kv_bytes_per_token_model
    out.append(f"| M12: Llama-3.1-8B BF16 KV bytes per token (19.28 GiB / 157,936 tokens) | 131,072 B | {kv:,.0f} B | {kv / 131072 - 1:+.1%} |")
    h100 = cat.gpu("h100-sxm").memory_bytes / 2**20
    out.append(f"| H100 SXM device memory (nvidia-smi) | 81,559 MiB | {h100:,.0f} MiB | {h100 / 81559 - 1:+.2%} |")
    out.append("")
    return out


ENGINE_JSON = Path(__file__).resolve().parents[1] / "presets" / "engine.json"


def write_presets(values: dict[str, float], n_points: int, how: str = "--fit --write") -> None:
    """Store fitted values in ``presets/engine.json``; each entry's source says how it was fitted.

    A per-GPU entry keeps its measured source and gains one ``GPU: fitted: …`` note per fitted GPU
    (an earlier fit's note for that GPU is replaced, not repeated).
    """
    data = json.loads(ENGINE_JSON.read_text(encoding="utf-8"))
    table = data["constants"]
    note = (f"fitted: python benchmarks/calibration.py {how} on the validation corpus "
            f"({n_points} public serving measurements, sources in docs/calibration.md); held-out error in "
            "docs/calibration-results.md")
    for name, value in values.items():
        key, _, gpu = name.partition(":")
        entry = table[key]
        if gpu:
            entry["value"][gpu] = round(value, 4)
            src = entry["source"]
            first = re.search(r"(?:; )?[\w.-]+: fitted:", src)
            measured = "" if src.startswith("placeholder") else (src[:first.start()] if first else src)
            gpus = sorted(set(re.findall(r"([\w.-]+): fitted:", src)) | {gpu})
            entry["source"] = "; ".join(([measured] if measured else []) + [f"{g}: {note}" for g in gpus])
        else:
            entry["value"] = round(value, 4)
            entry["source"] = note
    for name, value in NOT_FITTED.items():
        table[name]["value"] = value
        table[name]["source"] = (f"not fitted: held at {value:g} ({NOT_FITTED_MEANING[name]}) by every fit of "
                                 "benchmarks/calibration.py (NOT_FITTED); why in docs/calibration.md")
    ENGINE_JSON.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fit", action="store_true", help="fit on every point and print the constants")
    ap.add_argument("--protocol", action="store_true", help="held-out error: 5-fold CV and leave-one-source-out")
    ap.add_argument("--markdown", type=Path, help="write the report to this file as well")
    ap.add_argument("--json", type=Path, help="write the fitted constants (all points) to this file")
    ap.add_argument("--from-prior", action="store_true",
                    help="with --fit: start from the round prior values on the held-out fits' schedule "
                         "(what the bundled constants are fitted with) instead of polishing the bundled ones")
    ap.add_argument("--write", action="store_true",
                    help="with --fit: store the fitted values in presets/engine.json (each marked 'fitted')")
    ap.add_argument("--part", choices=("all", "cv", "loso"), default="all",
                    help="with --protocol: run only the 5-fold or only the leave-one-source-out part")
    ap.add_argument("--jobs", type=int, default=1, help="folds fitted in parallel processes (default 1)")
    args = ap.parse_args()
    points = load_points()
    base = default_constants()
    lines: list[str] = []
    if args.fit or args.json:
        if args.from_prior:  # exactly as every held-out fit: from PRIOR, on the long schedule
            prior = _with(base, {**PRIOR, **NOT_FITTED})
            values = fit(points, prior, verbose=True, factors=HELD_OUT_FACTORS)
        else:  # polish the bundled constants
            values = fit(points, _with(base, NOT_FITTED), verbose=True)
        print(json.dumps(values, indent=2))
        if args.json:
            args.json.write_text(json.dumps(values, indent=2) + "\n", encoding="utf-8")
        if args.write:
            write_presets(values, len(points), "--fit --from-prior --write" if args.from_prior else "--fit --write")
    def flush() -> None:  # each section is written as soon as it is done (the protocol is long)
        if args.markdown:
            args.markdown.write_text("\n".join(lines) + "\n", encoding="utf-8")

    if args.protocol and args.part in ("all", "cv"):
        cv = held_out(points, folds_by_gpu(points), "5-fold", args.jobs)
        lines += report(cv, "Held out: 5-fold cross-validation (folds stratified by GPU and metric)")
        flush()
    if args.protocol and args.part in ("all", "loso"):
        groups = sorted({p.group for p in points})
        loso = held_out(points, [[i for i, p in enumerate(points) if p.group == g] for g in groups],
                        "leave-one-source-out", args.jobs)
        lines += report(loso, "Held out: leave one source out (each publication predicted by a fit without it)")
        flush()
    lines += report([(p, _safe_predict(p, base)) for p in points],
                    "In sample: the bundled constants (presets/engine.json) on every point")
    lines += memory_checks()
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        args.markdown.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
