"""``sweep`` with a p99 TPOT target, and with the SLO saved in a project file (the Explorer's)."""

from __future__ import annotations

from pathlib import Path

from studio.io.project_file import load_project, save_project

EXAMPLE = (
    Path(__file__).resolve().parents[2] / "presets" / "examples" / "h100-pcie-bridge-llama-70b.json"
)


def _slo(cli, *flags: str) -> dict:
    return cli("sweep", str(EXAMPLE), "--top", "2", "--at-rate", "1", "--slo-check", "8", *flags, "--json").json()["slo"]


def test_tpot_p99_decides_with_the_ttft_one(cli):
    # the TTFT target alone: the simulated layouts and their p99 TPOT
    alone = _slo(cli, "--ttft-p99", "2000")
    tpots = sorted(e["tpot_p99_ms"] for e in alone["checked"] if e["meets"])
    assert len(tpots) >= 2 and tpots[0] < tpots[-1], tpots
    target = (tpots[0] + tpots[-1]) / 2  # a TPOT target between them: one must now fail it
    slo = _slo(cli, "--ttft-p99", "2000", "--tpot-p99", f"{target:.3f}")
    assert (slo["ttft_p99_ms"], slo["rate_per_s"]) == (2000, 1) and abs(slo["tpot_p99_ms"] - target) < 1e-3
    for e in slo["checked"]:
        if e["tpot_p99_ms"] is not None:
            assert e["meets"] == (e["ttft_p99_ms"] <= 2000 and e["tpot_p99_ms"] <= slo["tpot_p99_ms"])
        else:
            assert not e["meets"]
    assert any(
        e["tpot_p99_ms"] is not None and e["ttft_p99_ms"] <= 2000 and e["tpot_p99_ms"] > target and not e["meets"]
        for e in slo["checked"]
    )  # the TPOT target fails a layout the TTFT one lets through
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
