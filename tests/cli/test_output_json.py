"""``--json`` text: :func:`studio.commands.output.dumps_indented` writes exactly what
``json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False)`` writes (issue 14: the
standard library indents in pure Python, 10 ms of a sweep's 190 kB of JSON)."""

from __future__ import annotations

import enum
import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from studio.commands.output import dumps_indented, json_safe


def stdlib(value) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False)


leaves = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
plain = st.recursive(
    leaves, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=30,
)


@given(plain)
def test_plain_values_are_written_as_the_standard_library_writes_them(value):
    assert dumps_indented(value) == stdlib(value)


class Colour(str, enum.Enum):
    RED = "red"


class Count(int):
    pass


@pytest.mark.parametrize(
    "value",
    [
        {},
        [],
        {"a": {}, "b": [], "c": [[]], "d": [{}]},
        {"name": "2× H200 \u202e \x1b[31m", "µs": 1e-7, "big": 1e300, "neg": -0.0, "int": 10**30},
        {"kind": Colour.RED, "n": Count(3), "t": (1, 2)},  # not plain: the standard library writes it
        {1: "int key", None: "none key", 2.5: "float key"},
        [True, False, None, 1, 1.0, "1"],
    ],
)
def test_edge_values_are_written_as_the_standard_library_writes_them(value):
    assert dumps_indented(value) == stdlib(value)


@pytest.mark.parametrize("bad", [float("nan"), {"x": [float("inf")]}, {"y": -float("inf")}])
def test_non_finite_floats_are_refused_as_the_standard_library_refuses_them(bad):
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        dumps_indented(bad)


def test_an_unserialisable_value_is_refused_as_the_standard_library_refuses_it():
    with pytest.raises(TypeError, match="not JSON serializable"):
        dumps_indented({"x": object()})


def test_json_safe_values_take_the_fast_path():
    value = json_safe({"a": np.float64(1.5), "b": np.arange(3), "c": (1, 2), "d": float("nan"), 3: "x"})
    assert value == {"a": 1.5, "b": [0, 1, 2], "c": [1, 2], "d": None, "3": "x"}
    assert dumps_indented(value) == stdlib(value)
