"""Golden project files of every schema version keep loading, with the same content, forever."""

from __future__ import annotations

import json

import pytest

from studio.core.errors import StudioError
from studio.core.project import SCHEMA_VERSION
from studio.io.project_file import load_project, project_from_json, project_to_json, save_project
from tests.robustness.golden_files import GOLDEN, example_files, golden_files

#: What each golden file holds: GPUs, links, model id, layout label, first pinned label.
EXPECTED = {
    "minimal.json": (0, 0, "llama-3.1-70b", "TP1×PP1", None),
    "dgx-h100-2node.json": (16, 74, "llama-3.1-70b", "TP8×PP2", "TP8×PP1×DP2"),
    "moe-mla-placement.json": (16, 74, "deepseek-v3", "TP8×PP1×DP2×EP16", None),
    "gpt-oss-unicode-bom-crlf.json": (8, 29, "gpt-oss-120b", "TP2×PP1×DP4×EP8", None),
    # Copies of the bundled examples (presets/examples) as first released with schema_version 1.
    "example-dgx-h100-2node-llama-405b.json": (16, 82, "llama-3.1-405b", "TP8×PP2", None),
    "example-gb200-nvl72-deepseek-v3.json": (72, 270, "deepseek-v3", "TP8×PP1×DP9×EP72", None),
    "example-h100-pcie-bridge-llama-70b.json": (8, 21, "llama-3.1-70b", "TP2×PP4", None),
    "example-l40s-8x-llama-70b-fp8.json": (8, 15, "llama-3.1-70b", "TP8×PP1", None),
}


def test_a_golden_folder_exists_for_every_version():
    for v in range(1, SCHEMA_VERSION + 1):
        assert golden_files(v), f"no golden files for schema_version {v} in {GOLDEN}"


@pytest.mark.parametrize("path", golden_files(1), ids=lambda p: p.name)
def test_v1_golden_file_loads_with_its_content(path):
    p = load_project(path)
    gpus, links, model, layout, pinned = EXPECTED[path.name]
    assert p.schema_version == SCHEMA_VERSION
    assert p.cluster.num_gpus == gpus
    assert len(p.cluster.links) == links
    assert p.model.id == model
    assert p.layout.label == layout
    assert (p.pinned[0].label if p.pinned else None) == pinned


@pytest.mark.parametrize("path", golden_files(1) + example_files(), ids=lambda p: p.name)
def test_save_load_round_trip_is_exact(path, tmp_path):
    p = load_project(path)
    out = save_project(p, tmp_path / path.name)
    again = load_project(out)
    assert again == p
    assert project_to_json(again) == out.read_text(encoding="utf-8")


def test_golden_details_survive():
    unicode_plan = load_project(GOLDEN / "v1" / "gpt-oss-unicode-bom-crlf.json")
    assert unicode_plan.name == 'Plan with "quotes", $(rm -rf ~), `ticks` and ünïcödé'
    assert unicode_plan.cluster.name == 'Lab "A" — 実験 rack\nrow 2'
    assert unicode_plan.model.num_sliding_layers == 18
    dgx = load_project(GOLDEN / "v1" / "dgx-h100-2node.json")
    fit = dgx.calibrations["lab-a"].link_fits["nvlink4"]
    assert (fit.latency_us, fit.bandwidth_gbps) == (18.0, 370.0)
    minimal = json.loads((GOLDEN / "v1" / "minimal.json").read_text())
    assert "workload" not in minimal  # defaults filled in on load
    assert project_from_json(json.dumps(minimal)).workload.isl == 1024


def test_golden_files_are_listed():
    assert sorted(p.name for p in golden_files(1)) == sorted(EXPECTED)


def test_v4_fleet_settings_load_and_older_files_keep_the_defaults(tmp_path):
    fleet = load_project(GOLDEN / "v4" / "fleet-settings.json").fleet
    assert (fleet.traffic, fleet.peak_per_s, fleet.ttft_p99_ms, fleet.tpot_p99_ms) == ("flat-batch", 12.0, 1500.0, 40.0)
    assert (fleet.headroom, fleet.storage_gbps, fleet.burst, fleet.pue, fleet.grid_g_co2e_per_kwh) == (
        0.3, 2.5, "spot", 1.3, 250.0)
    old = load_project(GOLDEN / "v3" / "sglang-runtime-version.json")
    assert old.fleet == type(fleet)()
    saved = json.loads((save_project(old, tmp_path / "old.json")).read_text(encoding="utf-8"))
    assert "fleet" not in saved and saved["schema_version"] == SCHEMA_VERSION


def test_bad_fleet_settings_name_the_field():
    data = json.loads((GOLDEN / "v4" / "fleet-settings.json").read_text(encoding="utf-8"))
    data["fleet"]["headroom"] = -1
    with pytest.raises(StudioError, match="fleet.headroom"):
        project_from_json(json.dumps(data), "bad.json")
