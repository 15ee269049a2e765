"""Traffic input: the three CSV kinds bin into slots, bad input is refused naming line and field."""

from __future__ import annotations

import numpy as np
import pytest

from studio.core.errors import StudioError
from studio.engine.fleet.plan import needed_replicas
from studio.engine.fleet.traffic import constant, from_rates, parse_csv
from studio.io.fleet_presets import load_traffic, traffic_presets


def test_timestamps_are_counted_into_slots():
    text = "timestamp\n# two in the first hour, three at 09:xx\n10\n3599.5\n09:00\n09:30\n09:59:59\n"
    tr = parse_csv(text, "arrivals.csv")
    assert tr.slots == 24 and tr.slot_s == 3600
    assert tr.rates_per_s[0] * 3600 == pytest.approx(2) and tr.rates_per_s[9] * 3600 == pytest.approx(3)
    assert tr.requests_per_day == pytest.approx(5)
    fine = parse_csv(text, "arrivals.csv", slot_minutes=30)
    assert fine.slots == 48 and fine.requests_per_day == pytest.approx(5)


def test_per_minute_rates_bin_to_the_mean_of_their_minutes():
    rates = np.arange(1440) % 7
    text = "minute,rate_per_s\n" + "\n".join(f"{m},{r}" for m, r in enumerate(rates))
    day = parse_csv(text, "minutes.csv")
    assert day.slots == 1440
    hourly = parse_csv(text, "minutes.csv", slot_minutes=60)
    assert hourly.slots == 24
    assert hourly.rates_per_s == pytest.approx(rates.reshape(24, 60).mean(axis=1))
    assert hourly.requests_per_day == pytest.approx(day.requests_per_day)


@pytest.mark.parametrize(("text", "where"), [
    ("", "empty"),
    ("# only a comment\n", "empty"),
    ("hour,rate_per_s\n0,1\n1,-2\n", "line 3: field 'rate_per_s'"),
    ("hour,rate_per_s\n0,1\n1,nan\n", "line 3: field 'rate_per_s'"),
    ("hour,rate_per_s\n0,1\n1,x\n", "line 3: field 'rate_per_s'"),
    ("hour,rate_per_s\n0,1\n2,1\n", "line 3: field 'hour'"),
    ("timestamp\n10\n5\n", "line 3: field 'timestamp'"),
    ("timestamp\n10\n20\n20\n", "line 4: field 'timestamp'"),
    ("timestamp\n10\n25:00\n", "line 3: field 'timestamp'"),
    ("when,rate\n0,1\n", "line 1: header"),
])
def test_bad_csv_names_file_line_and_field(text, where):
    with pytest.raises(StudioError) as err:
        parse_csv(text, "day.csv")
    msg = str(err.value)
    assert msg.startswith("day.csv: ")
    assert where in msg


def test_duplicate_and_unsorted_timestamps_say_which():
    with pytest.raises(StudioError, match="repeats the timestamp of line 2"):
        parse_csv("timestamp\n7\n7\n", "t.csv")
    with pytest.raises(StudioError, match="is before the timestamp of line 3"):
        parse_csv("timestamp\n1\n9\n3\n", "t.csv")


def test_a_rate_no_fleet_serves_names_where_it_was_read():
    tr = from_rates("day", [1.0] * 23 + [5e6])
    with pytest.raises(StudioError, match=r"rates_per_s\[23\].*no fleet"):
        needed_replicas(tr, replica_rate_per_s=1.0, headroom=0.0)


def test_rates_must_divide_a_day_and_be_finite():
    with pytest.raises(StudioError, match="divide a day"):
        from_rates("x", [1.0] * 7)
    with pytest.raises(StudioError, match=r"rates_per_s\[1\].*not a finite"):
        from_rates("x", [1.0, float("inf")])
    with pytest.raises(StudioError, match="negative"):
        constant(-1)


def test_bundled_curves_and_files(tmp_path):
    presets = traffic_presets()
    assert {"business-hours-chat", "flat-batch"} <= set(presets)
    chat = presets["business-hours-chat"].traffic
    assert chat.slots == 24 and chat.peak_per_s == pytest.approx(50)
    assert chat.scaled_to_peak(10).peak_per_s == pytest.approx(10)
    flat = presets["flat-batch"].traffic
    assert flat.rates_per_s.min() == flat.rates_per_s.max() > 0
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(StudioError, match="empty"):
        load_traffic(str(empty))
    with pytest.raises(StudioError, match="neither a traffic preset"):
        load_traffic("business-hours-caht")
