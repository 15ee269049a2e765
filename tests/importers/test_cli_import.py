"""The import-topo and calibrate nccl commands end to end."""

from __future__ import annotations

import json
import re

import pytest

from studio.cli import main
from studio.io.project_file import load_project

from .conftest import DATA


def test_import_topo_writes_a_valid_project(tmp_path, capsys):
    out = tmp_path / "p.json"
    rc = main(["import-topo", str(DATA / "topo/h100-8gpu-nvswitch-8nic.txt"), "--gpu", "h100-sxm", "--nodes", "2", "-o", str(out)])
    assert rc == 0
    p = load_project(out)
    assert p.cluster.num_gpus == 16 and p.layout.world_size == 16 and p.layout.tp == 8
    assert "TP8" in capsys.readouterr().out


def test_import_topo_without_gpu_is_a_clear_error(tmp_path, capsys):
    rc = main(["import-topo", str(DATA / "topo/l40s-4gpu-2nic-spaces.txt"), "-o", str(tmp_path / "p.json")])
    assert rc != 0 and "--gpu: the topology does not say which GPU model it is" in capsys.readouterr().err


def test_calibrate_nccl_writes_a_profile_and_stores_it_in_a_project(tmp_path, capsys):
    log = str(DATA / "nccl/a100-8gpu-nvswitch-allreduce.txt")
    prof = tmp_path / "prof.json"
    assert main(["calibrate", "nccl", log, "--link-kind", "nvlink3-nvswitch", "-o", str(prof)]) == 0
    data = json.loads(prof.read_text())
    fit = data["link_fits"]["nvlink3-nvswitch"]
    assert fit["points"] == 18 and fit["rms_rel_error"] < data["fit_error"]["nvlink3-nvswitch.default_rms_rel_error"]
    text = capsys.readouterr().out
    assert "RMS relative error" in text and "17,179,869,184" in text
    project = tmp_path / "a100.json"
    topo = "\tGPU0\tGPU1\tGPU2\tGPU3\tGPU4\tGPU5\tGPU6\tGPU7\n" + "".join(
        f"GPU{i}\t" + "\t".join(" X " if i == j else "NV12" for j in range(8)) + "\n" for i in range(8)
    )
    (tmp_path / "topo.txt").write_text(topo)
    assert main(["import-topo", str(tmp_path / "topo.txt"), "--gpu", "a100-sxm-80g", "-o", str(project)]) == 0
    rc = main(["calibrate", "nccl", log, "--link-kind", "nvlink3-nvswitch", "--project", str(project), "--save-as", "lab-a100"])
    assert rc == 0
    assert load_project(project).calibrations["lab-a100"].link_fits["nvlink3-nvswitch"].points == 18


def test_import_topo_picks_a_layout_that_fits_and_says_so(tmp_path, capsys):
    """Two imported H100 nodes with the default Llama-3.1-405B used to get TP8×DP2, which does not
    fit; the card's rule (TP in the node, PP across nodes) gives TP8×PP2, which does."""
    from studio.engine import evaluate

    out = tmp_path / "p.json"
    topo = str(DATA / "topo/h100-8gpu-nvswitch-8nic.txt")
    assert main(["import-topo", topo, "--gpu", "h100-sxm", "--nodes", "2", "-o", str(out)]) == 0
    p = load_project(out)
    assert (p.layout.tp, p.layout.pp, p.layout.dp) == (8, 2, 1)
    assert evaluate(p).fits
    assert "TP8×PP2, which fits" in capsys.readouterr().out
    # a model that fits one node keeps PP=1 and uses the second node as a replica
    assert main(["import-topo", topo, "--gpu", "h100-sxm", "--nodes", "2", "--model", "llama-3.1-70b", "-o", str(out)]) == 0
    assert (load_project(out).layout.pp, load_project(out).layout.dp) == (1, 2)
    # when nothing fits, the project is still written and the message says it does not fit
    assert main(["import-topo", topo, "--gpu", "h100-sxm", "--nodes", "1", "-o", str(out)]) == 0
    assert "which does not fit (" in capsys.readouterr().out


#: Five of the published shapes (ISL/OSL), each at TP1 and TP2: the TP1 runs are the ones that
#: cannot hold the 70B weights in BF16, the TP2 runs fit either way. The whole table (36 runs) gives
#: the same notes and outcomes; this subset makes the second fit converge in a tenth of its engine
#: runs (the whole table's fit is covered by tests/importers/test_serving_fit.py).
BOUND_SHAPES = {(128, 128), (128, 2048), (2048, 128), (5000, 500), (20000, 2000)}


def _h200_70b_runs(tmp_path):
    """The BOUND_SHAPES runs of the H200 FP8 70B table at TP1 and TP2, as a file of their own."""
    lines = []
    for line in (DATA / "serving/trtllm-v0.17-h200-fp8-llama-3.1-70b.jsonl").read_text().splitlines():
        run = json.loads(line)
        n = run["num_prompts"]
        if run["tp"] in (1, 2) and (run["total_input_tokens"] // n, run["total_output_tokens"] // n) in BOUND_SHAPES:
            lines.append(line)
    assert len(lines) == 10
    path = tmp_path / "h200-fp8-70b-tp1-tp2.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@pytest.mark.slow  # fits the serving model twice
def test_calibrate_serving_says_when_a_fit_hits_its_bound(tmp_path, capsys):
    """The H200 FP8 runs read without --weight-dtype fp8: the TP1 runs cannot fit in BF16 and the
    factors run into their upper bound; the output says both and names the flags to check."""
    runs = _h200_70b_runs(tmp_path)
    assert main(["calibrate", "serving", runs, "--gpu", "h200-sxm", "--model", "llama-3.1-70b"]) == 0
    out = capsys.readouterr().out
    assert out.count("  skipped TP1 ") == 5 and "skipped TP2" not in out
    assert "say so with --weight-dtype / --kv-dtype" in out
    assert "stopped at the upper bound 1" in out
    assert main(["calibrate", "serving", runs, "--gpu", "h200-sxm", "--model", "llama-3.1-70b",
                 "--weight-dtype", "fp8", "--kv-dtype", "fp8", "--gpu-memory-utilization", "0.95"]) == 0
    out = capsys.readouterr().out
    # with the formats it ran, every run fits, the prefill factor lands inside its bounds and the
    # fit reproduces the table (the decode factor may touch its 1.1 bound: TensorRT-LLM v0.17's TP1
    # runs are ~15 % faster than the corpus-fitted overheads allow, see docs/calibration.md)
    assert "skipped" not in out and "10 runs of llama-3.1-70b" in out
    prefill = next(line for line in out.splitlines() if line.strip().startswith("prefill_efficiency"))
    assert "bound" not in prefill
    fitted = re.search(r"RMS relative error of output_tok_s: defaults [\d.]+% -> fitted ([\d.]+)%", out)
    assert fitted is not None and float(fitted.group(1)) < 20.0
