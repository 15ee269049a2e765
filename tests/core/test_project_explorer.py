"""Explorer objective and targets live in the project: schema 2, its migration and golden file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from studio.core.errors import StudioError
from studio.core.layout import Layout
from studio.core.project import SCHEMA_VERSION, migrate
from studio.io.project_file import load_project, project_to_json, save_project
from studio.service.explore.recommend import sweep_kwargs, with_row

GOLDEN = Path(__file__).resolve().parents[1] / "robustness" / "golden"


def test_schema_2_stores_the_objective():
    assert SCHEMA_VERSION >= 2  # schema 3 added serving.runtime_version (issue 29)
    p = load_project(GOLDEN / "v2" / "explorer-cost-targets.json")
    assert p.explorer.objective == "cost"
    assert (p.workload.ttft_ms, p.workload.tpot_ms) == (2000.0, 50.0)
    assert sweep_kwargs(p) == {"objective": "cost", "ttft_ms": 2000.0, "tpot_ms": 50.0}


def test_a_version_1_file_migrates_to_the_throughput_objective():
    raw = json.loads((GOLDEN / "v1" / "dgx-h100-2node.json").read_text(encoding="utf-8-sig"))
    assert "explorer" not in raw
    out = migrate(raw)
    assert out["schema_version"] == SCHEMA_VERSION and out["explorer"] == {"objective": "throughput"}
    assert "explorer" not in raw  # the input is left alone
    assert load_project(GOLDEN / "v1" / "dgx-h100-2node.json").explorer.objective == "throughput"


def test_a_bad_explorer_value_in_a_version_1_file_is_refused_with_the_step():
    raw = json.loads((GOLDEN / "v1" / "minimal.json").read_text(encoding="utf-8-sig"))
    raw["explorer"] = ["cost"]
    with pytest.raises(StudioError, match="from schema_version 1 to 2: TypeError: 'explorer' must be an object"):
        migrate(raw, "old.json")


def test_objective_round_trips_through_a_file(tmp_path):
    p = load_project(GOLDEN / "v2" / "explorer-cost-targets.json")
    p = p.replace(explorer=p.explorer.replace(objective="latency"))
    out = save_project(p, tmp_path / "p.json")
    again = load_project(out)
    assert again == p and again.explorer.objective == "latency"
    assert json.loads(project_to_json(again))["schema_version"] == SCHEMA_VERSION


def test_with_row_sets_layout_micro_batches_and_batch():
    p = load_project(GOLDEN / "v2" / "explorer-cost-targets.json")
    lay = Layout(tp=8, pp=2, micro_batches=4)
    q = with_row(p, lay, 96)
    assert q.layout == lay and q.workload.batch == 96
    assert q.workload.replace(batch=p.workload.batch) == p.workload


def test_a_pinned_batch_is_saved_and_a_project_without_one_is_written_as_before(tmp_path):
    p = load_project(GOLDEN / "v2" / "explorer-cost-targets.json")
    tp16, tp8 = Layout(tp=16), Layout(tp=8, pp=2)
    plain = p.replace(pinned=(tp16, tp8))
    text = project_to_json(plain)
    assert "pinned_batches" not in text  # no pinned batch: the file is what it was before the field
    batched = plain.with_pin(tp16, 96)
    assert batched.pinned == plain.pinned  # already pinned: keeps its place
    assert batched.pinned_batch(tp16) == 96 and batched.pinned_batch(tp8) is None
    data = json.loads(project_to_json(batched))
    assert data["pinned_batches"] == [{"layout": json.loads(tp16.model_dump_json()), "batch": 96}]
    del data["pinned_batches"]
    assert json.dumps(data) == json.dumps(json.loads(text))  # nothing else changes
    again = load_project(save_project(batched, tmp_path / "p.json"))
    assert again == batched and again.pinned_batch(tp16) == 96


def test_a_pinned_batch_goes_with_its_layout():
    p = load_project(GOLDEN / "v2" / "explorer-cost-targets.json")
    tp16, tp8 = Layout(tp=16), Layout(tp=8, pp=2)
    q = p.with_pin(tp16, 96).with_pin(tp8, 32)
    assert q.pinned == (tp16, tp8) and (q.pinned_batch(tp16), q.pinned_batch(tp8)) == (96, 32)
    unpinned = q.replace(pinned=(tp8,))
    assert unpinned.pinned_batches == q.pinned_batches[1:]  # unpinning drops the batch
    assert q.replace(pinned=()).pinned_batches == ()  # as a cluster change that clears the pins does
    assert q.with_pin(tp8).pinned_batch(tp8) is None  # re-pinned without a batch: the workload's


def test_a_pinned_batch_is_bounded_like_the_workload_batch():
    p = load_project(GOLDEN / "v2" / "explorer-cost-targets.json")
    with pytest.raises(ValueError, match="batch"):
        p.with_pin(Layout(tp=16), 0)
