"""``sweep`` with a p99 TPOT target, and with the SLO saved in a project file (the Explorer's)."""

from __future__ import annotations

from pathlib import Path

from studio.io.project_file import load_project, save_project

EXAMPLE = (
    Path(__file__).resolve().parents[2] / "presets" / "examples" / "h100-pcie-bridge-llama-70b.json"
)


def test_tpot_p99_decides_with_the_ttft_one(cli):
    d = cli(
        "sweep",
        str(EXAMPLE),
        "--top",
        "2",
        "--ttft-p99",
        "2000",
        "--tpot-p99",
        "60",
        "--at-rate",
        "1",
        "--slo-check",
        "8",
        "--json",
    ).json()
    slo = d["slo"]
    assert (slo["ttft_p99_ms"], slo["tpot_p99_ms"], slo["rate_per_s"]) == (2000, 60, 1)
    for e in slo["checked"]:
        if e["tpot_p99_ms"] is not None:
            assert e["meets"] == (e["ttft_p99_ms"] <= 2000 and e["tpot_p99_ms"] <= 60)
        else:
            assert not e["meets"]
    assert any(
        e["tpot_p99_ms"] is not None and e["tpot_p99_ms"] > 60 for e in slo["checked"]
    )  # TPOT fails one
    assert slo["best"] is not None and slo["checked"][slo["best"]]["meets"]


def test_the_project_files_slo_is_checked_without_flags(cli, tmp_path):
    p = load_project(EXAMPLE)
    path = save_project(
        p.replace(explorer=p.explorer.replace(tpot_p99_ms=60.0, slo_rate_per_s=1.0)),
        tmp_path / "slo.json",
    )
    d = cli("sweep", str(path), "--top", "2", "--json").json()
    assert (d["slo"]["tpot_p99_ms"], d["slo"]["ttft_p99_ms"], d["slo"]["rate_per_s"]) == (
        60,
        None,
        1,
    )
    plain = cli("sweep", str(EXAMPLE), "--top", "2", "--json").json()
    assert "slo" not in plain  # no SLO saved, no flag: no check
    flags = cli(
        "sweep", str(path), "--top", "2", "--ttft-p99", "900", "--at-rate", "2", "--json"
    ).json()
    assert (flags["slo"]["ttft_p99_ms"], flags["slo"]["tpot_p99_ms"]) == (900, None)  # flags win


def test_a_saved_target_without_a_rate_names_the_field(cli, tmp_path):
    p = load_project(EXAMPLE)
    path = save_project(
        p.replace(explorer=p.explorer.replace(ttft_p99_ms=900.0)), tmp_path / "norate.json"
    )
    r = cli("sweep", str(path))
    assert r.code == 2 and "explorer.slo_rate_per_s" in r.err.strip().splitlines()[-1]
    ok = cli("sweep", str(path), "--rate", "1.5", "--top", "1", "--json")  # the load's rate serves
    assert ok.code == 0 and ok.json()["slo"]["rate_per_s"] == 1.5
