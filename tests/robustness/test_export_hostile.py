"""Exports are safe to run: no user string (node names, project name, model path, host names)
breaks out of its quoting. Checked without running the payload: every shell word the exporters
quote reads back as the literal string (``printf`` in bash), every generated script passes
``bash -n`` and holds the model path as that exact quoted word, and every YAML parses back to the
literal strings."""

from __future__ import annotations

import shutil
import subprocess

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from studio.engine import evaluate
from studio.io.export import ENGINES, FORMATS, export_plan
from studio.io.export.common import quote
from studio.io.project_file import load_project
from tests.robustness.golden_files import GOLDEN

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")

BASE = load_project(GOLDEN / "v1" / "example-dgx-h100-2node-llama-405b.json")
SHELL_CHARS = "$`'\"\\;&|<>(){}[]*?!~#=% \t\n\r\x0b\x0c\u2028\u00e9\u5b9f"
hostile = st.text(alphabet=st.sampled_from(SHELL_CHARS) | st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1, max_size=24)
CASES = ["a b $(touch PWNED)", "x`id`", "n'; rm -rf ~; echo '", 'q"$(id)"', "line\nid", "-rf", "--model=evil", "$HOME", "~root"]
HOSTILE_SETTINGS = settings(deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow])


def _bash_words(words: list[str], tmp_path) -> list[str]:
    """What bash passes to a program for ``printf '%s\\0' <quoted words>`` (nothing else runs)."""
    script = "printf '%s\\0' " + " ".join(quote(w) for w in words) + "\n"
    out = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, env={"PATH": "/usr/bin:/bin"}, timeout=30)
    assert out.returncode == 0, out.stderr
    return out.stdout.decode("utf-8", "surrogateescape").split("\0")[:-1]


@settings(HOSTILE_SETTINGS, max_examples=40)
@given(words=st.lists(hostile, min_size=1, max_size=40))
def test_quoted_words_read_back_literally(tmp_path_factory, words):
    tmp = tmp_path_factory.mktemp("q")
    assert _bash_words(words, tmp) == words
    assert list(tmp.iterdir()) == []


def test_known_payloads_read_back_literally(tmp_path):
    assert _bash_words(CASES, tmp_path) == CASES
    assert list(tmp_path.iterdir()) == []


def _renamed(names: list[str], project_name: str):
    nodes = tuple(n.replace(name=names[i % len(names)].strip() or "n") for i, n in enumerate(BASE.cluster.nodes))
    return BASE.replace(name=project_name[:200], cluster=BASE.cluster.replace(nodes=nodes))


@settings(HOSTILE_SETTINGS, max_examples=15)
@given(names=st.lists(hostile.map(lambda s: s[:120]), min_size=1, max_size=2), model=hostile.filter(str.strip), title=hostile, hosts=st.lists(hostile.filter(str.strip), min_size=2, max_size=2))
def test_exports_with_hostile_strings(tmp_path_factory, names, model, title, hosts):
    project = _renamed(names, title)
    plan = evaluate(project)
    tmp = tmp_path_factory.mktemp("x")
    for engine in ENGINES:
        for fmt in FORMATS:
            if engine == "trtllm" and fmt == "k8s":
                continue
            bundle = export_plan(project, plan, engine=engine, fmt=fmt, model_path=model, hosts=hosts)
            for name, text in bundle.files.items():
                if name.endswith(".sh"):
                    f = tmp / name
                    f.write_text(text)
                    check = subprocess.run(["bash", "-n", str(f)], capture_output=True, text=True, timeout=30)
                    assert check.returncode == 0, f"{engine}/{fmt} {name}: {check.stderr}"
                    assert quote(model) in text, f"{engine}/{fmt}: model path not one quoted word"
                elif name.endswith((".yaml", ".yml")):
                    docs = list(yaml.safe_load_all(text))
                    assert docs, name
    assert list(p for p in tmp.iterdir() if not p.name.endswith(".sh")) == []
