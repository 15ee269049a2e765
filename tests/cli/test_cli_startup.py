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
