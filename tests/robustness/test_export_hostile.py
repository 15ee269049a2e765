"""Exports are safe to run: no user string (node names, project name, model path, host names)
breaks out of its quoting or smuggles an option into a recipe. Checked without running the
payload: every shell word the exporters quote reads back as the literal string (``printf`` in
bash), every generated script passes ``bash -n`` and holds the model path as that exact quoted
word, every YAML parses back, and option-like, bidirectional-control and terminal-escape input is
refused with a one-line message or escaped."""

from __future__ import annotations

import shutil
import subprocess

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from studio.commands.options.flags import cli_message
from studio.core.errors import StudioError
from studio.engine import evaluate
from studio.io.export import ENGINES, FORMATS, export_plan
from studio.io.export.checks.safety import first_unsafe_char
from studio.io.export.common import quote
from studio.io.project_file import load_project
from tests.property_budget import examples
from tests.robustness.golden_files import GOLDEN

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")

BASE = load_project(GOLDEN / "v1" / "example-dgx-h100-2node-llama-405b.json")
SHELL_CHARS = "$`'\"\\;&|<>(){}[]*?!~#=% \t\n\r\x0b\x0c\u2028\u00e9\u5b9f"
hostile = st.text(alphabet=st.sampled_from(SHELL_CHARS) | st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1, max_size=24)
#: What ``quote`` writes: no control, format or bidirectional character but line feed and tab.
quotable = hostile.filter(lambda w: first_unsafe_char(w.replace("\n", "").replace("\t", "")) is None)
host_names = st.from_regex(r"\A[a-z0-9]([a-z0-9-]{0,10}[a-z0-9])?(\.[a-z0-9]{1,8}){0,2}\Z")
CASES = ["a b $(touch PWNED)", "x`id`", "n'; rm -rf ~; echo '", 'q"$(id)"', "line\nid", "-rf", "--model=evil", "$HOME", "~root"]
HOSTILE_SETTINGS = settings(deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow])


def _bash_words(words: list[str], tmp_path) -> list[str]:
    """What bash passes to a program for ``printf '%s\\0' <quoted words>`` (nothing else runs)."""
    script = "printf '%s\\0' " + " ".join(quote(w) for w in words) + "\n"
    out = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, env={"PATH": "/usr/bin:/bin"}, timeout=30)
    assert out.returncode == 0, out.stderr
    return out.stdout.decode("utf-8", "surrogateescape").split("\0")[:-1]


@settings(HOSTILE_SETTINGS, max_examples=examples(500))
@given(words=st.lists(quotable, min_size=1, max_size=40))
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


@settings(HOSTILE_SETTINGS, max_examples=examples(200))
@given(names=st.lists(hostile.map(lambda s: s[:120]), min_size=1, max_size=2), model=hostile.filter(str.strip), title=hostile,
       hosts=st.one_of(st.lists(host_names, min_size=2, max_size=2), st.lists(hostile.filter(str.strip), min_size=2, max_size=2)))
def test_exports_with_hostile_strings(tmp_path_factory, names, model, title, hosts):
    project = _renamed(names, title)
    plan = evaluate(project)
    tmp = tmp_path_factory.mktemp("x")
    for engine in ENGINES:
        for fmt in FORMATS:
            if engine == "trtllm" and fmt == "k8s":
                continue
            try:
                bundle = export_plan(project, plan, engine=engine, fmt=fmt, model_path=model, hosts=hosts)
            except StudioError as exc:  # refused: one line naming the input, no raw control character
                msg = cli_message(exc)
                assert "\n" not in msg and first_unsafe_char(msg) is None, msg
                assert exc.field in ("model_path", "hosts"), msg
                assert msg.startswith(("--model-path: ", "--hosts: ")), msg
                continue
            assert not model.lstrip().startswith("-")
            for name, text in bundle.files.items():
                assert first_unsafe_char(text.replace("\n", "")) is None, f"{engine}/{fmt} {name}"
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


@pytest.mark.parametrize("kwargs,match", [
    ({"model_path": "--trust-remote-code"}, "the model path '--trust-remote-code' starts with '-'"),
    ({"model_path": " -x"}, "starts with '-'"),
    ({"model_path": "org/model\u202e1lm.ht"}, "U\\+202E"),
    ({"model_path": "org/\x1b[31mred"}, "U\\+001B"),
    ({"hosts": ["-oProxyCommand=touch PWNED,evil:99", "b"]}, "not a host name"),
    ({"hosts": ["a,evil", "b"]}, "not a host name"),
    ({"hosts": ["a:8", "b"]}, "not a host name"),
    ({"hosts": ["a\u2066", "b"]}, "not a host name"),
])
@pytest.mark.parametrize("engine", ENGINES)
def test_option_like_and_invisible_input_is_refused(engine, kwargs, match):
    """Issue 16.8: a model id or host entry that would become an option, an extra host with its own
    slots, or a line that reads differently from what runs, is refused with one line."""
    with pytest.raises(StudioError, match=match) as info:
        export_plan(BASE, evaluate(BASE), engine=engine, fmt="script", **kwargs)
    assert first_unsafe_char(str(info.value)) is None and "\n" not in str(info.value)


def test_quote_refuses_bidirectional_and_escape_characters():
    for bad in ("a\u202eb", "\x1b[2J", "x\u2069", "cr\r"):
        with pytest.raises(StudioError):
            quote(bad)


def test_terminal_escapes_in_names_are_escaped_in_every_file_and_in_the_cli(tmp_path, capsys):
    from studio.cli import main
    from studio.io.project_file import save_project

    names = ["\x1b]0;owned\x07node", "n\u202eodon"]
    project = _renamed(names, "\x1b[2J\x1b[31mProject \u202eeman")
    for engine in ENGINES:
        for fmt in FORMATS:
            if engine == "trtllm" and fmt == "k8s":
                continue
            for text in export_plan(project, evaluate(project), engine=engine, fmt=fmt).files.values():
                assert "\x1b" not in text and "\u202e" not in text and "\x07" not in text
                assert "\\x1b" in text  # shown escaped in the header
    path = tmp_path / "p.json"
    save_project(project, path)
    assert main(["export", str(path), "--engine", "sglang"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\u202e" not in out and "\\u202e" in out
