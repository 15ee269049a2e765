"""Bundled examples by id: ``layout-studio examples`` lists them, every command that takes a
PROJECT takes an example project's id, import-topo and calibrate nccl take a sample's id, and
calibrate nccl says when a log does not fit the link kind it is called."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROJECTS = sorted(p.stem for p in (ROOT / "presets" / "examples").glob("*.json"))
SAMPLES = sorted(p.stem for p in (ROOT / "presets" / "examples" / "samples").glob("*.txt"))


def test_examples_lists_every_bundled_project_and_sample_with_a_command_to_try(cli):
    r = cli("examples", "--json")
    assert r.code == 0, r.err
    listed = r.json()
    assert [e["id"] for e in listed] == PROJECTS + SAMPLES
    assert {e["kind"] for e in listed} == {"project", "nvidia-smi topo -m", "nccl-tests log"}
    for e in listed:
        assert e["title"] and e["try"].startswith("layout-studio ") and e["id"] in e["try"], e
    text = cli("examples").out
    assert all(i in text for i in PROJECTS + SAMPLES)


@pytest.mark.parametrize("sample", SAMPLES)
def test_every_sample_cites_its_source_and_its_try_command_runs(cli, sample, tmp_path, monkeypatch):
    body = (ROOT / "presets" / "examples" / "samples" / f"{sample}.txt").read_text(encoding="utf-8")
    assert "# Source:" in body and "shared/reference" in body or "reference/collectives.md" in body
    monkeypatch.chdir(tmp_path)  # the try command writes mine.json here
    try_command = next(e["try"] for e in cli("examples", "--json").json() if e["id"] == sample)
    r = cli(*try_command.split()[1:])
    assert r.code == 0, r.err
    assert "warning" not in r.err


def test_a_command_takes_an_example_id_in_place_of_its_project_file(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    by_id = cli("plan", "l40s-8x-llama-70b-fp8", "--json")
    assert by_id.code == 0, by_id.err
    by_file = cli("plan", str(ROOT / "presets" / "examples" / "l40s-8x-llama-70b-fp8.json"), "--json")
    assert by_id.json() == by_file.json()
    assert by_id.json() != cli("plan", "--json").json()  # not the default example
    copy = cli("examples", "l40s-8x-llama-70b-fp8")
    assert json.loads(copy.out)["name"] == "Llama-3.1-70B FP8 on 8× L40S (PCIe only)"


def test_a_file_of_the_same_name_wins_over_the_example(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "l40s-8x-llama-70b-fp8").write_text(cli("examples", "dgx-h100-2node-llama-405b").out)
    assert cli("plan", "l40s-8x-llama-70b-fp8", "--json").json() == cli("plan", "--json").json()


def test_an_unknown_id_names_the_examples_and_exits_2(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = cli("sweep", "no-such-example")
    assert r.code == 2 and "no such project file 'no-such-example'" in r.err
    assert "l40s-8x-llama-70b-fp8" in r.err and "Traceback" not in r.err
    r = cli("import-topo", "no-such-topo", "--gpu", "h100-sxm", "-o", "x.json")
    assert r.code == 2 and "topo-h100-8gpu-nvswitch" in r.err and "nccl-" not in r.err
    r = cli("examples", "nope")
    assert r.code == 2 and "examples` lists them" in r.err
    r = cli("calibrate", "nccl", "nccl-allreduce-a100-8gpu-nvswitch", "--link-kind", "nvlink3-nvswitch",
            "--project", "dgx-h100-2node-llama-405b", "--save-as", "lab")
    assert r.code == 2 and "is a bundled example; copy it first" in r.err


def test_calibrate_warns_when_a_two_node_log_is_called_nvlink(cli):
    r = cli("calibrate", "nccl", "nccl-allreduce-h100-2node-network", "--link-kind", "nvlink4-nvswitch")
    assert r.code == 0, r.err
    warnings = [ln for ln in r.err.splitlines() if "warning:" in ln]
    assert len(warnings) == 1 and "16 ranks" in warnings[0] and "at most 8 GPUs" in warnings[0]


def test_the_link_kind_checks():
    from studio.io.presets import load_catalog
    from studio.service.nccl_fit_checks import largest_domain, link_kind_mismatches

    catalog = load_catalog()
    nodes = list(catalog.nodes.values())
    assert largest_domain(catalog.link("nvlink5-rack"), nodes) == 72
    assert largest_domain(catalog.link("nvlink-bridge-h100"), nodes) == 2
    assert largest_domain(catalog.link("ib-ndr"), nodes) is None
    nvl4, ib = catalog.link("nvlink4-nvswitch"), catalog.link("ib-ndr")
    big = 1 << 30
    assert link_kind_mismatches(nvl4, 8, 480.0, big, nodes) == []  # NVLS beats the line rate a little
    assert link_kind_mismatches(ib, 16, 339.0, big, nodes) == []  # a network joins any count
    (slow,) = link_kind_mismatches(nvl4, 8, 40.0, big, nodes)  # an NVLink fit of an IB-speed run
    assert "slower path" in slow
    assert link_kind_mismatches(nvl4, 8, 40.0, 1 << 20, nodes) == []  # small messages: no verdict
    (fast,) = link_kind_mismatches(catalog.link("pcie-gen5-switch"), 8, 480.0, big, nodes)
    assert "faster link kind" in fast
