"""The engines as data (engines.<id>.export in presets/engines/rules.json): the engine x format
matrix and labels defined once, the export module behind each engine, and the report carrying each
recipe's check verdict."""

from __future__ import annotations

import pytest

from studio.core.errors import StudioError
from studio.core.layout import Layout
from studio.io.export import ENGINE_FORMATS, ENGINE_LABELS, FORMAT_LABELS, export_plan
from studio.io.export.engines import engine_spec, engine_specs, format_refusal

from .conftest import LLAMA_70B, plan, project


def test_the_matrix_and_the_modules_come_from_one_entry_per_engine():
    assert ENGINE_LABELS == {"vllm": "vLLM", "trtllm": "TensorRT-LLM", "sglang": "SGLang"}
    assert set(FORMAT_LABELS) == {"command", "yaml", "script", "k8s"}
    assert "k8s" not in ENGINE_FORMATS["trtllm"] and "k8s" in ENGINE_FORMATS["vllm"]
    for eid, spec in engine_specs().items():
        assert callable(spec.exporter().build), eid
        proj = project(LLAMA_70B, 1, Layout(tp=8))
        for fmt in FORMAT_LABELS:
            if fmt in spec.formats:
                assert export_plan(proj, plan(proj), engine=eid, fmt=fmt).files
            else:
                with pytest.raises(StudioError, match=f"format '{fmt}' is available for engines vllm and sglang"):
                    export_plan(proj, plan(proj), engine=eid, fmt=fmt)
    assert format_refusal("vllm", "pdf") == "format 'pdf' is not supported; allowed: command, yaml, script, k8s"
    with pytest.raises(StudioError, match="engine 'tgi' is not supported; allowed: vllm, trtllm, sglang"):
        engine_spec("tgi")


def test_the_report_carries_each_recipes_check_verdict(monkeypatch):
    monkeypatch.delenv("LAYOUT_STUDIO_ENGINE_PYTHON", raising=False)  # the engines are not installed here
    from studio.service.report.report_content import _exports

    proj = project(LLAMA_70B, 1, Layout(tp=8))
    out = dict(_exports(proj, plan(proj)))
    assert list(out) == ["vLLM", "TensorRT-LLM", "SGLang"]
    for title, text in out.items():
        head = text.splitlines()
        assert head[0].startswith("# ") and "the recipe passes the engine's run-time rules" in head[0], title
        assert any("export --check: the engine's start-up rules only" in ln for ln in head[:3]), title
