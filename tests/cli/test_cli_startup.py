"""What a ``layout-studio`` process skips at start-up (issue 14) without changing what it does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: With every plugin off, a sweep validates and prints as usual without pydantic's plugin loader
#: (nor the ``importlib.metadata`` it imports); once plugins are back on, pydantic's own loader
#: takes over.
PLUGINS_CHILD = """
import contextlib, io, json, os, sys
from studio import cli

cli.skip_plugin_loader()
out = io.StringIO()
with contextlib.redirect_stdout(out):
    code = cli.main(["sweep", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--nodes", "1", "--json"])
assert code == 0 and json.loads(out.getvalue())["layouts"]
assert "importlib.metadata" not in sys.modules, "the plugin loader was imported"
loader = sys.modules["pydantic.plugin._loader"]
assert not hasattr(loader, "__file__") and list(loader.get_plugins()) == []

os.environ["PYDANTIC_DISABLE_PLUGINS"] = ""  # plugins back on: pydantic's loader scans for them
from pydantic import BaseModel

class Late(BaseModel):
    x: int

assert Late(x=1).x == 1
assert sys.modules["pydantic.plugin._loader"].__file__.endswith("_loader.py")
assert "importlib.metadata" in sys.modules
print("ok")
"""


def run_child(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    full.update(env, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=full, capture_output=True, text=True,
                          timeout=120)


def test_plugins_off_skip_pydantics_plugin_loader_until_turned_back_on():
    proc = run_child(PLUGINS_CHILD, PYDANTIC_DISABLE_PLUGINS="__all__")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


def test_plugins_left_on_keep_pydantics_plugin_loader():
    code = "import sys\nfrom studio import cli\ncli.skip_plugin_loader()\nprint('pydantic.plugin._loader' in sys.modules)"
    for value in ("", "some-plugin"):
        proc = run_child(code, PYDANTIC_DISABLE_PLUGINS=value)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == "False"  # nothing stands in: pydantic imports its own loader


def test_a_headless_command_collects_garbage_less_often(monkeypatch):
    import gc

    from studio import cli

    monkeypatch.setattr(gc, "set_threshold", lambda *t: calls.append(t))
    calls: list[tuple[int, ...]] = []
    for argv in ([], ["open"], ["--debug", "snapshot", "-o", "a.png"]):  # windows: left as they are
        cli.collect_less_often(argv)
    assert calls == []
    cli.collect_less_often(["sweep", "--json"])
    assert calls == [(cli.HEADLESS_GC_THRESHOLD, *gc.get_threshold()[1:])]  # older generations as they were


#: The thread count OpenBLAS is given in a ``layout-studio`` process for the command line after it.
BLAS_CHILD = """
import os, sys
from studio import cli

cli.one_blas_thread(sys.argv[1:])
print(os.environ.get("OPENBLAS_NUM_THREADS", "unset"))
"""

#: Every variable OpenBLAS reads its thread count from, unset (empty).
NO_THREAD_COUNT = dict.fromkeys(("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"), "")


def blas_threads(*argv: str, **env: str) -> str:
    full = {**os.environ, **NO_THREAD_COUNT, **env, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", BLAS_CHILD, *argv], cwd=ROOT, env=full, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_a_headless_command_runs_openblas_in_one_thread():
    assert blas_threads("sweep", "--json") == "1"
    assert blas_threads("--debug", "plan") == "1"
    for argv in ([], ["open"], ["--debug", "snapshot", "-o", "a.png"]):  # windows: left as they are
        assert blas_threads(*argv) == "", argv


def test_a_thread_count_the_user_set_wins():
    assert blas_threads("sweep", OPENBLAS_NUM_THREADS="4") == "4"
    assert blas_threads("sweep", GOTO_NUM_THREADS="4") == ""
    assert blas_threads("sweep", OMP_NUM_THREADS="4") == ""


def test_numpy_already_imported_is_left_as_it_is(monkeypatch):
    import numpy  # noqa: F401  # imported: OpenBLAS has read its thread count already

    from studio import cli

    for name in NO_THREAD_COUNT:
        monkeypatch.delenv(name, raising=False)
    cli.one_blas_thread(["sweep"])
    assert "OPENBLAS_NUM_THREADS" not in os.environ
