"""Length histograms (``studio.io.importers.lengths``): the shapes accepted and one-line errors that name the
file and the line or entry."""

from __future__ import annotations

import pytest

from studio.core.errors import StudioError
from studio.io.importers.lengths import load_histogram, parse_histogram


def test_csv_with_header_comments_and_separators():
    text = "# from the gateway log\nlength;weight\n\n100;2\n300\t1\n100 1\n"
    assert parse_histogram(text, "h.csv") == ((100, 3.0), (300, 1.0))


def test_one_length_per_line_counts_each_once():
    assert parse_histogram("5\n7\n5\n", "raw.txt") == ((5, 2.0), (7, 1.0))


@pytest.mark.parametrize(
    "text",
    ['[[100, 2], [300, 1]]', '[{"length": 100, "weight": 2}, {"length": 300}]', '{"histogram": [[100, 2], [300, 1]]}'],
)
def test_json_shapes(text):
    pairs = parse_histogram(text, "h.json")
    assert dict(pairs)[100] == 2.0 and dict(pairs)[300] == 1.0


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('[[100, 1], [true, 1]]', "entry 2"),
        ('[[100, 1], {"len": 3}]', "entry 2"),
        ('[{"length": 5, "weight": 1, "x": 2}]', "unknown key"),
        ('[[1.5, 1]]', "whole number"),
        ('[[100, 1]', "line 1"),
        ('{"lengths": []}', "'histogram'"),
        ('[[20000000, 1]]', "1..10000000"),
        ('[[100, "a"]]', "weight"),
    ],
)
def test_json_errors_name_the_entry(text, where):
    with pytest.raises(StudioError) as err:
        parse_histogram(text, "h.json")
    assert where in str(err.value) and "h.json" in str(err.value)


def test_load_histogram_makes_a_distribution(tmp_path):
    p = tmp_path / "osl.json"
    p.write_text("[[64, 1], [192, 3]]", encoding="utf-8")
    dist = load_histogram(p)
    assert dist.kind == "histogram" and dist.mean(0) == pytest.approx(160)


def test_inf_and_nan_refused():
    for text in ("1e400,1\n", "100,nan\n", "100,inf\n"):
        with pytest.raises(StudioError, match="line 1"):
            parse_histogram(text, "h.csv")
