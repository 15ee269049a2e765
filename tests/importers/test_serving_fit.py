"""The serving fit: recovers known efficiencies, improves held-out error on the public TRT-LLM tables,
and the ``calibrate serving`` command prints, writes and stores the profile."""

from __future__ import annotations

import json

import numpy as np
import pytest

from studio.cli import main
from studio.core.building.builders import build_cluster
from studio.core.errors import StudioError
from studio.core.precision import DType
from studio.core.project import Project
from studio.core.workload import ServingConfig
from studio.engine.search.calibration import (
    EFFICIENCY_BOUNDS,
    ITERATION_ONLY,
    OTHER_BOUNDS,
    ServingPoint,
    evaluate_serving,
    fit_serving,
    rms,
)
from studio.engine.step.constants import default_constants
from studio.io.importers.serving_bench import read_points
from studio.io.project_file import load_project, save_project

from .conftest import DATA

H200_70B = DATA / "serving" / "trtllm-v0.17-h200-fp8-llama-3.1-70b.jsonl"
H200_8B = DATA / "serving" / "trtllm-v0.17-h200-fp8-llama-3.1-8b.jsonl"
#: Fitting the step overhead as well as the two efficiencies (see docs/import-and-calibrate.md).
THREE = ("prefill_efficiency", "decode_efficiency", "decode_step_overhead_us")


def h200_project(catalog_full, model_id: str) -> Project:
    cat = catalog_full
    cluster = build_cluster(cat.node("hgx-h200"), 1, cat.gpu("h200-sxm"), cat.links)
    serving = ServingConfig(weight_dtype=DType.FP8, kv_dtype=DType.FP8, gpu_memory_utilization=0.95, runtime="trtllm")
    return Project(cluster=cluster, model=cat.model(model_id).architecture, model_ref=model_id, serving=serving)


def held_out_error(project, points, params, constants=None):
    fit = fit_serving(project, points[0::2], params=params, constants=constants)
    held = points[1::2]

    def err(preds):
        return rms(np.array([(p["output_tok_s"] - q.output_tok_s) / q.output_tok_s for p, q in zip(preds, held, strict=True)]))

    return (err(evaluate_serving(project, held, constants=constants)),
            err(evaluate_serving(project, held, fit.efficiency, constants=constants)), fit)


def test_fit_recovers_efficiencies_that_generated_the_points(catalog_full):
    project = h200_project(catalog_full, "llama-3.1-8b")
    shapes = [(128, 128, 64), (128, 2048, 256), (2048, 128, 32), (1000, 1000, 128), (5000, 500, 16), (500, 2000, 8)]
    truth = {"prefill_efficiency": 0.4, "decode_efficiency": 0.6}
    bare = [ServingPoint(f"{i}/{o}", i, o, 1, 1, c, 1.0) for i, o, c in shapes]
    preds = evaluate_serving(project, bare, truth)
    points = [ServingPoint(p.label, p.isl, p.osl, 1, 1, p.concurrency, d["output_tok_s"], d["ttft_ms"], d["tpot_ms"])
              for p, d in zip(bare, preds, strict=True)]
    fit = fit_serving(project, points)
    assert fit.efficiency["prefill_efficiency"] == pytest.approx(0.4, rel=0.03)
    assert fit.efficiency["decode_efficiency"] == pytest.approx(0.6, rel=0.03)
    err = fit.fit_error()
    assert err["serving.output_tok_s.rms_rel_error"] < 0.01 < err["serving.output_tok_s.default_rms_rel_error"]
    assert set(fit.measures()) == {"output_tok_s", "ttft_ms", "tpot_ms"}


@pytest.mark.slow  # fits on half a public table
@pytest.mark.parametrize(("model_id", "path"), [("llama-3.1-70b", H200_70B), ("llama-3.1-8b", H200_8B)])
def test_fitting_half_the_public_table_improves_the_other_half(catalog_full, model_id, path):
    project = h200_project(catalog_full, model_id)
    points = read_points([path])
    # constants that do not know this engine yet (both efficiencies 0.6x the bundled ones, as on a
    # GPU or engine version nothing was fitted for): a fit on half the table must fix the other half
    bundled = default_constants()
    stale = bundled.with_overrides({k: 0.6 * getattr(bundled, k) for k in THREE[:2]})
    before, after, fit = held_out_error(project, points, THREE, constants=stale)
    assert after < before * 0.5, (before, after, fit.efficiency)
    # and it lands near the bundled constants' own error on that half, which the wider corpus fitted
    held = points[1::2]
    bundled_error = rms(np.array([(p["output_tok_s"] - q.output_tok_s) / q.output_tok_s
                                  for p, q in zip(evaluate_serving(project, held), held, strict=True)]))
    assert after < bundled_error * 1.5, (after, bundled_error, fit.efficiency)
    for k in THREE[:2]:  # within the fit's declared bounds (the decode factor may pass 1: see OTHER_BOUNDS)
        lo, hi = OTHER_BOUNDS.get(k, EFFICIENCY_BOUNDS)
        assert lo <= fit.efficiency[k] <= hi, (k, fit.efficiency[k])


def test_the_factors_a_fit_reuses_layout_costs_for_are_read_by_the_iteration_model_alone(catalog_full):
    """fit_serving costs each point's layout once when it fits only ITERATION_ONLY constants: a plan
    with one of them changed, its layout costs kept from the bundled constants, is the plan costed
    afresh with it, figure for figure."""
    from studio.engine.plan.evaluate import evaluate
    from studio.engine.search.calibration import serving_project

    project = serving_project(h200_project(catalog_full, "llama-3.1-8b"), ServingPoint("p", 1000, 500, 2, 1, 64, 1.0))
    base = default_constants()
    memo: dict = {}
    plain = evaluate(project, constants=base, details=False, costs=memo)
    assert memo  # the memo was filled with the bundled constants' layout costs
    changed = 0
    for name in sorted(ITERATION_ONLY):
        c = base.with_overrides({name: getattr(base, name) * 0.5})
        fresh = evaluate(project, constants=c, details=False)
        assert repr(evaluate(project, constants=c, details=False, costs=memo)) == repr(fresh), name
        changed += fresh.tpot_ms != plain.tpot_ms
    assert changed >= 2  # the factors do move the figures (both efficiencies at least)


def test_unknown_factor_and_bad_layout_are_clear_errors(catalog_full):
    project = h200_project(catalog_full, "llama-3.1-8b")
    pts = read_points([H200_8B])[:2]
    with pytest.raises(StudioError, match="'speed' is not an engine constant; allowed: .*prefill_efficiency"):
        fit_serving(project, pts, params=("speed",))
    odd = [ServingPoint("odd", 128, 128, 3, 1, 8, 100.0)]
    with pytest.raises(StudioError, match="TP3×PP1 = 3 GPUs does not divide the cluster's 8 GPUs"):
        fit_serving(project, odd)


@pytest.mark.slow  # fits a public table through the command line
def test_cli_prints_every_run_writes_and_stores_the_profile(tmp_path, capsys, catalog_full):
    out = tmp_path / "prof.json"
    args = ["calibrate", "serving", str(H200_8B), "--gpu", "h200-sxm", "--model", "llama-3.1-8b",
            "--weight-dtype", "fp8", "--kv-dtype", "fp8", "--gpu-memory-utilization", "0.95"]
    assert main([*args, "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert text.count("TP1 ") == 9 and "RMS relative error of output_tok_s" in text
    data = json.loads(out.read_text())
    assert set(data["efficiency"]) == {"prefill_efficiency", "decode_efficiency"}
    assert data["fit_error"]["serving.output_tok_s.rms_rel_error"] < data["fit_error"]["serving.output_tok_s.default_rms_rel_error"]
    # storing the fit in a project and planning with it: three of the runs make a profile as well
    # (the fit over the whole table is the one above; this part checks --project and --save-as)
    three = tmp_path / "three.jsonl"
    three.write_text("".join(line + "\n" for line in H200_8B.read_text().splitlines()[:3]))
    project = tmp_path / "p.json"
    save_project(h200_project(catalog_full, "llama-3.1-8b"), project)
    assert main(["calibrate", "serving", str(three), "--project", str(project), "--save-as", "lab-h200"]) == 0
    assert capsys.readouterr().out.startswith("3 runs of llama-3.1-8b on h200-sxm")
    saved = load_project(project)
    assert "lab-h200" in saved.calibrations and saved.calibrations["lab-h200"].efficiency
    assert main(["plan", str(project), "--calibration", "lab-h200", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["calibration"] == "lab-h200"


def test_cli_asks_for_what_the_file_does_not_say(tmp_path, capsys):
    line = json.loads(H200_8B.read_text().splitlines()[0])
    del line["tp"]
    f = tmp_path / "r.json"
    f.write_text(json.dumps(line))
    rc = main(["calibrate", "serving", str(f), "--gpu", "h200-sxm", "--model", "llama-3.1-8b"])
    assert rc == 2 and "--tp: the file does not say the tensor-parallel size" in capsys.readouterr().err
    rc = main(["calibrate", "serving", str(f)])
    assert rc == 2 and "--gpu ID and --model ID" in capsys.readouterr().err
