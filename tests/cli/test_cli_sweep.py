"""``layout-studio sweep``: JSON structure, Pareto/recommended indices, CSV rows."""

from __future__ import annotations

import csv

import pytest

from .conftest import dot_paths, golden_lines

ARGS = ("--gpu", "h100-sxm", "--nodes", "2", "--model", "llama-3.1-70b", "--isl", "1024", "--osl", "256")


@pytest.fixture(scope="module")
def sweep_out(tmp_path_factory):
    import json
    from contextlib import redirect_stdout
    from io import StringIO

    from studio.cli import main

    path = tmp_path_factory.mktemp("sweep") / "rows.csv"
    buf = StringIO()
    with redirect_stdout(buf):
        code = main(["sweep", *ARGS, "--top", "5", "--json", "--csv", str(path)])
    assert code == 0
    return json.loads(buf.getvalue()), path


def test_sweep_json_structure(sweep_out):
    data, _ = sweep_out
    assert set(golden_lines("sweep_json_keys.txt")) <= set(data)
    assert data["candidates"] >= len(data["layouts"]) >= 5
    plan_keys = set(golden_lines("plan_json_keys.txt"))
    for plan in data["layouts"]:
        assert plan_keys <= dot_paths(plan)
        assert plan["layout"]["gpus"] == 16


def test_sweep_indices_point_into_layouts(sweep_out):
    data, _ = sweep_out
    n = len(data["layouts"])
    assert data["pareto"], "a 16-GPU cluster serving a 70B model has a Pareto frontier"
    assert all(0 <= i < n for i in data["pareto"])
    assert data["recommended"] is not None and 0 <= data["recommended"] < n
    assert data["reasons"]


def test_sweep_pareto_is_non_dominated(sweep_out):
    data, _ = sweep_out
    pts = [
        (data["layouts"][i]["throughput"]["output_tokens_per_s_per_gpu"],
         data["layouts"][i]["throughput"]["tokens_per_s_per_user"])
        for i in data["pareto"]
    ]
    for a in pts:
        assert not any(b[0] >= a[0] and b[1] >= a[1] and b != a for b in pts)


def test_sweep_layouts_best_first_for_throughput(sweep_out):
    data, _ = sweep_out
    ok = [p for p in data["layouts"] if p["fits"] and p["sweep"]["meets_targets"]]
    assert ok and data["layouts"][0] is ok[0], "the best layout comes first"
    best = ok[0]["throughput"]["output_tokens_per_s_per_gpu"]
    assert best == max(p["throughput"]["output_tokens_per_s_per_gpu"] for p in ok)


def test_sweep_csv_has_every_row(sweep_out):
    data, path = sweep_out
    with path.open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == data["candidates"]
    for col in ("rank", "layout", "tp", "pp", "dp", "fits", "ttft_ms", "tokens_per_s_per_gpu", "pareto"):
        assert col in rows[0]
    assert all(int(r["tp"]) * int(r["pp"]) * int(r["dp"]) == 16 for r in rows)
    assert sum(r["pareto"] == "True" for r in rows) >= len(data["pareto"])


def test_sweep_table(cli):
    r = cli("sweep", *ARGS, "--top", "3", "--tpot-ms", "50")
    assert r.code == 0, r.err
    assert "candidate layouts" in r.out and "Recommended" in r.out
    assert "TPOT ≤ 50 ms" in r.out
    assert "TP" in r.out and "tok/s/GPU" in r.out


def test_sweep_rejects_layout_flags(cli):
    r = cli("sweep", *ARGS, "--pp", "2")
    assert r.code == 2 and "--pp" in r.err


def test_sweep_csv_onto_a_device_is_refused_and_writes_nothing(cli, tmp_path):
    """The CSV goes through the atomic writer: a device target is refused in one line (exit 2),
    and an existing file is replaced whole, never left half written."""
    r = cli("sweep", *ARGS, "--top", "1", "--csv", "/dev/full")
    assert r.code == 2 and "not a regular file" in r.err and len(r.err.strip().splitlines()) == 1
    out = tmp_path / "rows.csv"
    out.write_text("old\n", encoding="utf-8")
    assert cli("sweep", *ARGS, "--top", "1", "--csv", str(out)).code == 0
    assert out.read_text(encoding="utf-8").startswith("rank,row,layout")
    assert not list(tmp_path.glob(".*tmp"))
