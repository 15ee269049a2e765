"""With every engine feature off (or set to what costs nothing: an even routing, an all-to-all
backend without a public table, a load-aware balancer), every figure of the calibration corpus
(``benchmarks/validation/calibration-points.json`` through ``benchmarks/calibration.py``'s point
evaluation, :func:`benchmarks.validation.corpus.predict`) is bit for bit what the step model gives
without the features package's hooks."""

from __future__ import annotations

import math

import pytest

import benchmarks.validation.corpus as corpus
from studio.core.engine_features import EngineFeatures
from studio.core.errors import StudioError
from tests.engine.corpus_predictions import plain_predictions

POINTS = corpus.load_points()
NEUTRAL = EngineFeatures(routing_skew=1.0, all2all_backend="naive", load_balance="internal")


def _predictions() -> list[object]:
    out: list[object] = []
    for p in POINTS:
        try:
            out.append(corpus.predict(p))
        except StudioError as e:  # a point the engine refuses is refused the same way both times
            out.append(str(e))
    return out


def _same(a: list, b: list) -> bool:
    return all((x == y) or (isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y))
               for x, y in zip(a, b, strict=True))


@pytest.fixture(scope="module")
def without_hooks() -> list[object]:
    import studio.engine.features.effects as effects
    import studio.engine.features.frontend as frontend

    mp = pytest.MonkeyPatch()
    mp.setattr(effects, "with_features", lambda project, layout, lc, topo, c: lc)
    mp.setattr(effects, "feature_constants", lambda project, layout, c: c)
    mp.setattr(frontend, "project_frontend", lambda engine, servers: None)
    try:
        return _predictions()
    finally:
        mp.undo()


def test_every_calibration_point_is_unchanged_with_features_off(without_hooks):
    """The run's one costing of the corpus as shipped (:func:`plain_predictions`, which
    tests/engine/test_validation_corpus.py reads too) against the same points without the hooks."""
    assert len(POINTS) > 200
    assert _same([c.figure for c in plain_predictions()], without_hooks)


def test_neutral_settings_change_no_figure_either(without_hooks, monkeypatch):
    plain = corpus.project_for

    def with_neutral(p):
        proj, lay = plain(p)
        return proj.model_copy(update={"serving": proj.serving.model_copy(update={"features": NEUTRAL})}), lay

    monkeypatch.setattr(corpus, "project_for", with_neutral)
    assert _same(_predictions(), without_hooks)


def test_with_features_hands_back_the_costs_themselves_when_off():
    from studio.engine.features.effects import feature_constants, with_features
    from studio.engine.plan.costs import project_costs
    from studio.engine.step.constants import default_constants

    proj, lay = corpus.project_for(next(p for p in POINTS if "mixtral" in p.record["model"].lower()
                                        or "deepseek" in p.record["model"].lower()))
    from studio.engine.fabric.topology import topology_of
    from studio.engine.plan.validate import check_layout

    c = default_constants()
    placement = check_layout(lay, proj.cluster, proj.model)
    topo = topology_of(proj.cluster)
    lc = project_costs(proj, lay, placement, topo, c)
    assert lc.features is None
    assert with_features(proj, lay, lc, topo, c) is lc and feature_constants(proj, lay, c) is c
