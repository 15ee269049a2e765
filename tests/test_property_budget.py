"""The Hypothesis profiles of ``tests/conftest.py`` and the example budget that follows them."""

from __future__ import annotations

import pytest
from hypothesis import settings

from tests.property_budget import CI_LONG_EXAMPLES, MIN_EXAMPLES, examples


@pytest.fixture
def restore_profile():
    settings.register_profile("_before_this_test", parent=settings.default)
    yield
    settings.load_profile("_before_this_test")


def test_ci_long_runs_the_thorough_count(restore_profile):
    settings.load_profile("ci-long")
    assert settings.default.max_examples == CI_LONG_EXAMPLES
    assert examples(5000) == 5000
    assert examples(300) == 300


def test_quick_runs_a_twentieth_but_never_too_few(restore_profile):
    settings.load_profile("quick")
    assert examples(5000) == 250
    assert examples(300) == 15
    assert examples(40) == MIN_EXAMPLES
    assert examples(3) == 3  # never more than asked for


@pytest.mark.parametrize("name", ["quick", "ci-long"])
def test_no_profile_depends_on_the_machines_speed(name):
    profile = settings.get_profile(name)
    assert profile.deadline is None
    assert "too_slow" in {h.name for h in profile.suppress_health_check}
