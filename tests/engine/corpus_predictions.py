"""The calibration corpus costed once per test run with the bundled constants and every engine
feature as shipped, shared read-only by the tests that read it (tests/engine/test_validation_corpus.py,
tests/engine/test_features_off.py): each pass over the ~280 points costs ~1 s of CPU, and the same
pass was made four times."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import benchmarks.validation.corpus as corpus
from studio.core.errors import StudioError


@dataclass(frozen=True)
class Costed:
    """A point's figure (:func:`benchmarks.validation.corpus.predict`) and whether its plan fits,
    or the engine's refusal (``figure`` is then the message and ``fits`` False)."""

    figure: float | str
    fits: bool
    fit_reason: str


@functools.cache
def plain_predictions() -> tuple[Costed, ...]:
    """Every point of :func:`corpus.load_points`, in its order. Call it only where nothing is patched
    (a test that patches the engine or ``corpus.project_for`` costs the points itself)."""
    out = []
    for p in corpus.load_points():
        try:
            figure, plan = corpus.predict_with_plan(p)
        except StudioError as e:  # a point the engine refuses is refused the same way each time
            out.append(Costed(str(e), False, str(e)))
        else:
            out.append(Costed(figure, plan.fits, plan.fit_reason))
    return tuple(out)
