"""Shared test setup: Qt runs offscreen (CI has no display), and the Hypothesis profiles.

Profiles (pick one with ``pytest --hypothesis-profile=NAME`` or ``HYPOTHESIS_PROFILE=NAME``):

``quick`` (the default)
    Few, derandomized examples: every run tries the same inputs, so the suite is quick and steady.
``ci-long``
    The thorough run (``pytest -m hypothesis --hypothesis-profile=ci-long``, see README.md): twenty
    times the examples, fresh random ones each run, failures kept in the example database.

Neither profile has a deadline or the too-slow health check, which would make a test's outcome
depend on the machine's speed. Tests that need many examples ask
:func:`tests.property_budget.examples` for their share of the loaded profile.
"""

import os

from hypothesis import HealthCheck, settings

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("LAYOUT_STUDIO_NO_SETTINGS", "1")

_NO_TIMING = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}

settings.register_profile("quick", max_examples=50, derandomize=True, database=None, **_NO_TIMING)
settings.register_profile("ci-long", max_examples=1000, **_NO_TIMING)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "quick"))
