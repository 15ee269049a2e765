"""Formatted quantities scale their unit and never print inf or nan (studio.service.units)."""

from __future__ import annotations

import math

import pytest

from studio.service import units


@pytest.mark.parametrize(("ms", "text"), [
    (601.7, "601.7 ms"), (5_764.1, "5.76 s"), (31_029.9, "31.0 s"), (750_000.0, "12.5 min"), (11_520_000.0, "3.2 h"),
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


@pytest.mark.parametrize(("v", "text"), [
    (1220.0, "1.22k tok/s"), (523_000.0, "523k tok/s"), (2_050_000.0, "2.05M tok/s"), (61.5, "61.5 tok/s"),
    (250.0, "250 tok/s"), (999.6, "1k tok/s"), (1.5e12, "1,500G tok/s"), (math.inf, "—"), (math.nan, "—"),
])
def test_card_figures_take_an_si_prefix(v, text):
    assert units.si(v, "tok/s") == text


def test_a_cost_that_does_not_exist_is_a_dash():
    assert units.usd(10.928) == "$10.93"
    assert units.usd(math.inf) == "—"


@pytest.mark.parametrize(("v", "text"), [
    (12_345.6, "12,346"), (123.4, "123"), (12.345, "12.3"), (0.0, "0"), (0.012345, "0.0123"),
    (math.nan, "–"), (None, "–"),
])
def test_report_figures_are_readable(v, text):
    assert units.readable(v) == text


def test_the_fixed_writers_below_the_views_keep_their_formats():
    """The export headers, file-limit messages and Hub sizes print one fixed format each
    (studio.core.units): a change here would change every export golden."""
    from studio.core import units as core

    assert core.gib_1(67.04 * 2**30) == "67.0 GiB"
    assert core.fixed(1234.56) == "1,234.6" and core.fixed(0.1234, 3) == "0.123"
    assert core.fixed(math.inf) == "n/a" and core.fixed(math.nan) == "n/a"
    assert core.file_size(64 * 2**20) == "64.0 MiB"
    assert core.file_size(12_800) == "12.5 KiB" and core.file_size(300) == "300 bytes"
    assert core.decimal_bytes(16.06e9) == "16.06 GB" and core.decimal_bytes(53_600) == "53.60 kB"
    assert core.decimal_bytes(999) == "999 bytes"
    assert core.whole_mib(64 * 2**20) == "64 MiB" and core.whole_mib(100 * 2**20 + 5) == "100 MiB"


def test_the_readers_size_limit_messages_are_unchanged():
    """The io readers' limits print whole MiB (core.units.whole_mib), the oversized file one decimal."""
    from studio.core.errors import StudioError
    from studio.io.importers.nccl_log import MAX_LOG_BYTES, parse_nccl_log
    from studio.io.importers.serving_bench import MAX_BYTES, parse_serving_text
    from studio.io.project_file import MAX_PROJECT_BYTES, project_from_bytes

    with pytest.raises(StudioError, match=r"log is larger than 8 MiB"):
        parse_nccl_log(" " * (MAX_LOG_BYTES + 1))
    with pytest.raises(StudioError, match=r"file is larger than 32 MiB"):
        parse_serving_text(" " * (MAX_BYTES + 1))
    with pytest.raises(StudioError, match=r"project file is 64\.0 MiB; at most 64 MiB"):
        project_from_bytes(b" " * (MAX_PROJECT_BYTES + 1))
