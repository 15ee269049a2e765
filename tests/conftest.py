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

import gc
import os
import sys

import pytest
from hypothesis import HealthCheck, settings

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("LAYOUT_STUDIO_NO_SETTINGS", "1")
# the preset cache (studio/io/preset_cache.py) goes to a folder of this run, not the user's own
# cache: a test run never writes into the home folder, and never reads what an earlier checkout left
if "LAYOUT_STUDIO_CACHE_DIR" not in os.environ:
    import atexit
    import shutil
    import tempfile

    os.environ["LAYOUT_STUDIO_CACHE_DIR"] = tempfile.mkdtemp(prefix="layout-studio-test-cache-")
    atexit.register(shutil.rmtree, os.environ["LAYOUT_STUDIO_CACHE_DIR"], ignore_errors=True)


_NO_TIMING = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}

settings.register_profile("quick", max_examples=50, derandomize=True, database=None, **_NO_TIMING)
settings.register_profile("ci-long", max_examples=1000, **_NO_TIMING)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "quick"))


def _no_constants_from_the_source() -> None:
    """Under ``quick``, Hypothesis draws no constants from the studio's own source (its "local
    constants": the literals of every module loaded so far, ~3,100 of them). Those made the
    examples of a derandomized test depend on which modules happened to be imported before it
    (a file run alone tried other inputs than the same file in the whole suite) and on every
    edit of any module's literals, against the profile's promise of the same inputs every run;
    and parsing the ~350 modules for them cost ~1.5 s of CPU per run from a fresh clone (cached
    in ``.hypothesis/constants`` after that, still ~0.8 s to check). ``ci-long`` keeps them, as
    it keeps fresh random inputs. A Hypothesis without that (private) hook runs as before."""
    from hypothesis.internal.conjecture import providers

    constants = getattr(providers, "_local_constants", None)
    if callable(getattr(providers, "_get_local_constants", None)) and constants is not None and not len(constants):
        providers._get_local_constants = lambda: constants


if settings.default.derandomize:
    _no_constants_from_the_source()


def _utf8_intervals_known() -> None:
    """The characters UTF-8 encodes, as Hypothesis's ``text()`` asks for them (its default
    ``codec="utf-8"``), without its scan of all 1,114,112 code points: every code point but the
    surrogates U+D800-U+DFFF, each decoding back to itself. The scan cost ~1.5-3 s of CPU in every
    run from a fresh clone (its result is cached in ``.hypothesis/unicode_data`` after that); the
    intervals handed back are the ones it finds, so every example drawn is the same. Other codecs
    are scanned as before; a Hypothesis without that (private) function, or whose function answers
    in another form, runs as before."""
    from hypothesis.internal import charmap
    from hypothesis.internal.intervalsets import IntervalSet

    scan = getattr(charmap, "intervals_from_codec", None)
    if not callable(scan):
        return
    import inspect

    # only where the function still answers (encodable, not round-tripping) as this stand-in does
    if "IntervalSet, " not in str(inspect.signature(scan).return_annotation):
        return
    utf8 = (IntervalSet([(0, 0xD7FF), (0xE000, sys.maxunicode)]), IntervalSet([]))

    def intervals_from_codec(codec_name: str):
        return utf8 if codec_name == "utf-8" else scan(codec_name)

    charmap.intervals_from_codec = intervals_from_codec


_utf8_intervals_known()


def _clear_settings() -> None:
    """Empty the throw-away settings file (``LAYOUT_STUDIO_NO_SETTINGS=1``), shared by the whole run."""
    if "studio.gui.window.settings" in sys.modules:
        from studio.gui.window.settings import make_settings

        s = make_settings()
        s.clear()
        s.sync()


@pytest.fixture(autouse=True)
def _fresh_settings():
    """Every test starts from default window settings: the throw-away settings file
    (``LAYOUT_STUDIO_NO_SETTINGS=1``) is shared by the whole run, so a test that saved a dock
    layout (closing a window does) would otherwise narrow the docks of every later window."""
    _clear_settings()
    yield


@pytest.fixture(autouse=True, scope="module")
def _fresh_settings_per_module():
    """The same before a module's shared windows are built (module fixtures are set up before a
    test's own): the previous module's shared editable window, closed with its Explorer and Load
    docks closed, saved that dock layout on its way out, and a window of the next module restored
    it, so its Explorer never swept (tests/gui/test_window.py after test_honest_figures.py)."""
    _clear_settings()
    yield


@pytest.fixture(autouse=True)
def _delete_leftover_windows():
    """Delete the top-level widgets a test leaves behind (windows not handed to ``qtbot``, message
    boxes, menus): they pile up by the hundred over the suite and make every later offscreen
    render slower (the report's charts took 41 s instead of 4.5 s at the end of a full run).

    Only windows made from Python are deleted (their Qt class name is their Python class name);
    Qt's own (tooltips, popup containers) stay, as do those that existed before the test (a
    session fixture's). Nothing happens in tests that never loaded Qt.
    """
    before = _top_level_windows()
    yield
    after = _top_level_windows()
    if not after:
        return
    from PySide6.QtCore import QCoreApplication, QEvent

    for key, widget in after.items():
        if key not in before and type(widget).__name__ == widget.metaObject().className():
            widget.deleteLater()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)


def _top_level_windows() -> dict:
    """Top-level widgets by C++ address (empty when Qt is not loaded or has no application)."""
    if "PySide6.QtWidgets" not in sys.modules:
        return {}
    from PySide6.QtWidgets import QApplication
    from shiboken6 import getCppPointer

    app = QApplication.instance()
    if app is None:
        return {}
    return {getCppPointer(w)[0]: w for w in app.topLevelWidgets()}


#: A parameter's test id is cut to this many characters (see :func:`pytest_make_parametrize_id`).
_MAX_ID = 64


def pytest_make_parametrize_id(config, val, argname):
    """Short ids for long string parameters (hostile inputs of thousands of characters): the
    start of the value, its length and a checksum, instead of the whole value. A test id stays one
    readable line in ``--durations`` and ``-ra``, and distinct values keep distinct ids."""
    if not isinstance(val, (str, bytes)):
        return None
    text = val.decode("latin-1") if isinstance(val, bytes) else val
    shown = text.encode("unicode_escape").decode("ascii")
    if len(shown) <= _MAX_ID:
        return None
    import zlib

    checksum = zlib.crc32(text.encode("utf-8", "surrogatepass")) & 0xFFFF
    return f"{shown[:32]}...{len(text)}chars-{checksum:04x}"


def pytest_collection_finish(session):
    """Freeze what collection left on the heap (the test modules, the libraries they import, the
    collected items: ~100,000 objects): Python's full collections, which the many small allocations
    of property tests, fuzzing and the engine trigger every so often, then stop walking them each
    time. Full collections took 6.9 s of a whole run's CPU (35 of them); on tests/robustness,
    tests/engine and tests/cli, 4.8 s -> 2.6 s. What the tests create is collected as before, and
    nothing frozen is garbage (a collection runs first)."""
    gc.collect()
    gc.freeze()
    _suite_gc_threshold()


#: Allocations between two young-generation collections, from the moment this conftest loads (see
#: :func:`_suite_gc_threshold`).
_GC_YOUNG_THRESHOLD = 100_000


def _suite_gc_threshold() -> None:
    """Young-object passes every 100,000 allocations instead of CPython's 700, as a headless command
    runs (studio.cli.HEADLESS_GC_THRESHOLD): the suite's engine, fuzzing and property tests make
    few cyclic garbage objects, and the default threshold ran ~5,000 young and ~40 full passes,
    3.0 s of CPU over tests/engine, tests/robustness and tests/cli (1.1 s with this). Cyclic
    garbage is still collected, only in fewer, larger passes; reference counting frees the rest.

    Set as soon as this conftest loads, before the test modules are collected: importing and
    assertion-rewriting ~290 test modules (and the libraries they import) made ~3,000 young and
    ~20 full passes at CPython's threshold, 1.3 s of the collection's ~6 s of CPU. Set again once
    collection is done, in case a module imported during it changed the threshold."""
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(_GC_YOUNG_THRESHOLD, older, oldest)


_suite_gc_threshold()


#: tests/test_layering.py runs every test of tests/service in a fresh interpreter where Qt cannot be
#: imported; the same tests collected here as well would run twice per session.
_QT_FREE_SERVICE_RUN = "tests/test_layering.py::test_service_tests_pass_without_qt"


def pytest_collection_modifyitems(config, items):
    """Run tests/service once per session: when the Qt-free run of them (:data:`_QT_FREE_SERVICE_RUN`)
    is selected, their in-process copies are deselected (``pytest tests/service`` still runs them
    here). A failing service test fails that run, which prints the failing test's report."""
    if not any(item.nodeid == _QT_FREE_SERVICE_RUN for item in items):
        return
    service = [item for item in items if item.nodeid.startswith("tests/service/")]
    if service:
        config.hook.pytest_deselected(items=service)
        items[:] = [item for item in items if not item.nodeid.startswith("tests/service/")]


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    """Freeze the heap once pytest's end-of-run collection is done. Pytest collects twice on its
    way out, to report the unraisable exceptions of garbage cycles: in its own ``pytest_unconfigure``
    (which runs before this one) and again in its clean-up, once the hooks have run. By then
    the heap holds every module, fixture and report of the run, and each full pass over it took
    ~0.4 s of CPU; after the first, what is left is alive, so the second pass walks only what
    the hooks made after it (still collected and reported)."""
    gc.freeze()
