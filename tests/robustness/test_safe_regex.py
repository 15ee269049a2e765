"""The polynomial-time matcher for engines' ``re:`` module patterns agrees with Python's re."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from studio.io.safe_regex import MAX_PATTERN_CHARS, SafePattern, UnsafePattern
from tests.property_budget import examples
from tests.robustness.hostile import guarded

ATOMS = ["a", "b", ".", "[ab]", "[^a]", "\\.", "\\d", "\\w", "(a|b)", "(?:ab)", "a?", "b*", "(a*)*",
         "(a|ab)+", "a{1,3}", "b{2}", "\\b", "\\B", "^", "$", "(.*)?", "a*?", "(|a)+", "\\Z"]


@given(st.lists(st.sampled_from(ATOMS), min_size=1, max_size=6), st.text(alphabet="ab.1_ \n", max_size=10))
@settings(max_examples=examples(4000), deadline=None)
def test_agrees_with_python_re(atoms, subject):
    pattern = "".join(atoms)
    p = SafePattern(pattern)
    assert p.search(subject) == bool(re.search(pattern, subject))
    assert p.fullmatch(subject) == bool(re.fullmatch(pattern, subject))


@pytest.mark.parametrize(
    ("pattern", "subject", "expected"),
    [
        (r"model\.layers\.\d+\.mlp\.gate$", "model.layers.12.mlp.gate", True),
        (r".*lm_head", "lm_head", True),
        (r"(?i)LM_HEAD", "lm_head", True),
        (r"(?s)a.b", "a\nb", True),
        (r"[^.]+\.experts", "mlp.experts", True),
        (r"^model\.embed", "x.model.embed", False),
    ],
)
def test_engine_style_patterns(pattern, subject, expected):
    assert SafePattern(pattern).search(subject) is expected


@pytest.mark.parametrize("pattern", ["(.*)*X", "(a+)+$", "(a|aa)*c", "(x*)*" * 50 + "y", "(.*)" * 200 + "Q"])
def test_backtracking_bombs_finish(pattern):
    # Python's re needs minutes or longer for these on 40+ characters; the set matcher does not.
    found, err = guarded(lambda: SafePattern(pattern).search("a" * 60 + "model.layers.0.mlp.down_proj"))
    assert err is None and found is bool(pattern.endswith("y") and "y" in "model.layers")


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("(?=a)", "assert"),
        ("(?<!a)b", "assert not"),
        (r"(a)\1", "groupref"),
        ("(?>a)", "atomic group"),
        ("a*+", "possessive"),
        ("a{5000}", "repeat counts above"),
        ("x" * (MAX_PATTERN_CHARS + 1), "at most"),
        ("(?i:a)", "local flags"),
        ("(?m)^a", "flags"),
        ("(", "invalid pattern"),
    ],
)
def test_unsupported_or_invalid_patterns_are_refused(pattern, why):
    with pytest.raises(UnsafePattern, match=why):
        SafePattern(pattern)
