"""How many examples a property test runs under the loaded Hypothesis profile."""

from __future__ import annotations

from hypothesis import settings

#: ``max_examples`` of the thorough ``ci-long`` profile (registered in ``tests/conftest.py``).
CI_LONG_EXAMPLES = 1000

#: No property test runs fewer examples than this (unless it asks for fewer), whatever the profile.
MIN_EXAMPLES = 10


def examples(thorough: int) -> int:
    """The ``max_examples`` for a test that wants ``thorough`` examples in the ``ci-long`` run.

    Parameters
    ----------
    thorough:
        Examples to run under ``ci-long``.

    Returns
    -------
    int
        ``thorough`` scaled by the loaded profile's ``max_examples`` against ``ci-long``'s (a
        twentieth under the quick default), at least :data:`MIN_EXAMPLES` and at most ``thorough``.
    """
    share = settings.default.max_examples / CI_LONG_EXAMPLES
    return min(thorough, max(MIN_EXAMPLES, round(thorough * share)))
