"""The shared limited readers: size, UTF-8, nesting, non-finite numbers, YAML safety."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from studio.core.errors import StudioError
from studio.io.safe import (
    json_depth,
    load_json_file,
    loads_json_limited,
    loads_yaml_limited,
    read_text_limited,
)
from tests.property_budget import examples


def _depth(value: object) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='[]{}"\\ab,:\n'),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(alphabet='[]{}"\\k'), inner, max_size=4),
    max_leaves=30,
)


@given(json_values)
@settings(max_examples=examples(300), deadline=None)
def test_json_depth_matches_decoded_depth(value):
    # Brackets, quotes and backslashes inside strings must not count.
    assert json_depth(json.dumps(value)) == _depth(value)
    assert json_depth(json.dumps(value, ensure_ascii=False).encode("utf-8")) == _depth(value)


def _containers(value) -> int:
    if isinstance(value, dict):
        return 1 + sum(_containers(v) for v in value.values())
    if isinstance(value, list):
        return 1 + sum(_containers(v) for v in value)
    return 0


@given(json_values, st.integers(min_value=1, max_value=9))
@settings(max_examples=examples(300), deadline=None)
def test_json_shape_read_in_pieces_matches_the_decoded_value(value, chunk):
    """The scan carries strings and backslash runs from one piece to the next: a piece that ends
    inside a string, or between a backslash and the quote it escapes, counts the same."""
    from unittest import mock

    from studio.io import safe

    text = json.dumps(value)
    with mock.patch.object(safe, "SCAN_CHUNK", chunk):
        assert safe.json_shape(text) == (_depth(value), _containers(value))
        assert safe.json_shape(text.encode("utf-8")) == (_depth(value), _containers(value))


def test_deep_nesting_is_refused_before_decoding():
    bomb = "[" * 200_000 + "]" * 200_000
    with pytest.raises(StudioError, match="nests 200000 levels deep; at most 64"):
        loads_json_limited(bomb, "bomb.json")


def test_syntax_error_names_line_and_column():
    with pytest.raises(StudioError) as info:
        loads_json_limited('{\n  "a": 1,\n  "b": ]\n}', "p.json")
    assert str(info.value).startswith("p.json: ")
    assert "line 3 column 8" in str(info.value)


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity", "1e400", "-2E+999"])
def test_non_finite_numbers_are_refused_with_their_place(token):
    with pytest.raises(StudioError, match=re.escape(f"number {token} at line 2 column 9; only finite")):
        loads_json_limited('{"s": "NaN Infinity",\n "x": [ ' + token + "]}", "f.json")


def test_huge_integer_literal_is_an_error_not_a_hang():
    with pytest.raises(StudioError, match="not valid JSON"):
        loads_json_limited("[" + "9" * 100_000 + "]", "f.json")


def test_size_limit_is_checked_before_reading(tmp_path):
    f = tmp_path / "big.json"
    f.write_bytes(b" " * 2049)
    with pytest.raises(StudioError, match=r"config.json is 2.0 KiB; at most 2.0 KiB"):
        read_text_limited(f, 2048, "config.json")
    assert read_text_limited(f, 2049, "config.json") == " " * 2049


def test_missing_folder_and_non_utf8_files(tmp_path):
    with pytest.raises(StudioError, match="config.json not found"):
        read_text_limited(tmp_path / "nope.json", 100, "config.json")
    with pytest.raises(StudioError, match="this is a folder"):
        read_text_limited(tmp_path, 100, "config.json")
    bad = tmp_path / "latin1.json"
    bad.write_bytes(b'{"name":\n "caf\xe9"}')
    with pytest.raises(StudioError, match=r"not UTF-8 text \(bad byte 0xe9 at line 2"):
        load_json_file(bad, what="config.json")


def test_byte_order_mark_is_accepted(tmp_path):
    f = tmp_path / "bom.json"
    f.write_bytes('\ufeff{"a": 1}'.encode())
    assert load_json_file(f) == {"a": 1}


def test_yaml_never_builds_python_objects():
    hostile = "x: !!python/object/apply:os.system ['echo owned']\n"
    with pytest.raises(StudioError, match="not valid YAML: could not determine a constructor"):
        loads_yaml_limited(hostile, "evil.yaml")


def test_yaml_limits_and_positions():
    with pytest.raises(StudioError, match="nests 65"):
        loads_yaml_limited("a: " + "[" * 80 + "]" * 80, "deep.yaml")
    with pytest.raises(StudioError, match="line 2 column"):
        loads_yaml_limited("a: [1, 2\nb: 3\n", "bad.yaml")
    with pytest.raises(StudioError, match="only finite numbers"):
        loads_yaml_limited("x: .inf\n", "inf.yaml")
    # Self-referencing aliases decode to a cyclic list without hanging the checks.
    data = loads_yaml_limited("a: &x [1, *x]\n", "alias.yaml")
    assert data["a"][0] == 1 and data["a"][1] is data["a"]
