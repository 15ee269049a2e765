"""The layout an export runs is costed again: the dialog never says "fits" for files that run a
layout the plan did not cost."""

from __future__ import annotations

from studio.core.layout import Layout
from studio.io.project_file import load_project
from studio.service.export_layout import verdict_for

ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]


def _example(stem: str):
    return load_project(ROOT / "presets" / "examples" / f"{stem}.json")


def test_a_layout_that_fits_says_so():
    p = _example("dgx-h100-2node-llama-405b")
    v = verdict_for(p, Layout(tp=8, pp=2, micro_batches=2))
    assert v.fits and v.proposal is None and "fits" in v.reason


def test_a_layout_that_does_not_fit_is_named_with_a_way_out():
    p = _example("dgx-h100-2node-llama-405b")
    v = verdict_for(p, Layout(tp=1, pp=1, dp=16))  # 405B BF16 on one H100 per replica
    assert not v.fits
    assert "GiB" in v.reason
    assert v.proposal and "TP" in v.proposal
