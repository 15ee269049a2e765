"""Formatted quantities scale their unit and never print inf or nan (studio.service.units)."""

from __future__ import annotations

import math

import pytest

from studio.service import units


@pytest.mark.parametrize(("ms", "text"), [
    (601.7, "601.7 ms"), (31_029.9, "31.0 s"), (750_000.0, "12.5 min"), (11_520_000.0, "3.2 h"),
    (math.inf, "—"), (math.nan, "—"), (None, "—"),
])
def test_durations_scale(ms, text):
    assert units.duration_ms(ms) == text


@pytest.mark.parametrize(("us", "text"), [
    (25.6, "25.6 µs"), (2493.0, "2,493 µs"), (24_900.0, "24.9 ms"), (146_000.0, "146 ms"), (math.inf, "—"),
])
def test_microseconds_scale(us, text):
    assert units.duration_us(us) == text


@pytest.mark.parametrize(("b", "text"), [
    (67.0 * 2**30, "67.0 GiB"), (1.5 * 2**40, "1.50 TiB"), (512 * 2**20, "512 MiB"), (math.inf, "—"),
])
def test_sizes_scale(b, text):
    assert units.size_bytes(b) == text


def test_a_cost_that_does_not_exist_is_a_dash():
    assert units.usd(10.928) == "$10.93"
    assert units.usd(math.inf) == "—"
