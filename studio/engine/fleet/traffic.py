"""A day of traffic: request rates per time slot, read from a constant, a curve or a CSV.

A :class:`Traffic` is ``slots`` equal time slots covering one day (``slot_s`` seconds each, the
slot count × ``slot_s`` = 86,400 s) with the mean request rate of each slot (requests per second,
all replicas together). It comes from:

* a constant rate (:func:`constant`): one slot of 24 h;
* a curve of rates (:func:`from_rates`): e.g. 24 hourly rates (the bundled presets), or 1,440
  per-minute rates; the count must divide a day;
* CSV text (:func:`parse_csv`), whose header line names its kind:

  - ``timestamp`` — one arrival time per line: seconds since midnight (``3600.5``) or a clock
    time (``09:30:00``, ``09:30``); strictly increasing (a duplicate or an earlier time is
    refused with its line). The arrivals are counted into slots of ``slot_minutes``;
  - ``minute,rate_per_s`` or ``hour,rate_per_s`` — one rate per minute (0…1439) or hour (0…23),
    every one present once, in order; per-minute rates are binned into slots of ``slot_minutes``
    (the mean rate of the minutes in each slot).

  ``#`` comments and blank lines are skipped; fields are separated by commas, semicolons, tabs or
  spaces.

Every problem is a :class:`~studio.core.errors.StudioError` naming the source, the line and the
field, and what is allowed.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from studio.core.errors import StudioError

DAY_S = 86_400.0
#: The highest request rate a traffic input may hold (requests per second, all replicas).
MAX_RATE_PER_S = 1e7
_SPLIT = re.compile(r"[,;\t ]+")


@dataclass(frozen=True)
class Traffic:
    """Mean request rate (req/s, all replicas) of each equal slot of one day.

    Attributes
    ----------
    name:
        What the traffic is (a preset's name, a file name, ``constant 4 req/s``).
    rates_per_s:
        One rate per slot, in time order from midnight; finite and ≥ 0.
    source:
        Where the figures come from (a preset's provenance, a file path).
    """

    name: str
    rates_per_s: np.ndarray
    source: str = ""
    #: Where each slot's rate was read (``line 12``, ``rates_per_s[10]``), for messages; () = by index.
    origins: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        r = np.asarray(self.rates_per_s, dtype=float)
        if r.ndim != 1 or r.size == 0:
            raise StudioError(f"{self.name}: traffic needs at least one rate", field="traffic")
        object.__setattr__(self, "rates_per_s", r)

    def origin(self, k: int) -> str:
        """Where slot ``k`` came from, in words."""
        return self.origins[k] if k < len(self.origins) else f"slot {k}"

    @property
    def slots(self) -> int:
        return int(self.rates_per_s.size)

    @property
    def slot_s(self) -> float:
        """Length of one slot, seconds."""
        return DAY_S / self.slots

    @property
    def starts_s(self) -> np.ndarray:
        """Start of each slot, seconds since midnight."""
        return np.arange(self.slots) * self.slot_s

    @property
    def peak_per_s(self) -> float:
        return float(self.rates_per_s.max())

    @property
    def requests_per_day(self) -> float:
        return float(self.rates_per_s.sum() * self.slot_s)

    def scaled_to_peak(self, peak_per_s: float) -> Traffic:
        """The same shape with its highest slot at ``peak_per_s``."""
        if not (math.isfinite(peak_per_s) and peak_per_s > 0):
            raise StudioError(f"a peak rate must be a positive number of requests per second, not {peak_per_s}",
                              field="peak")
        top = self.peak_per_s
        if top <= 0:
            raise StudioError(f"{self.name}: every rate is 0, there is no peak to scale", field="peak")
        return Traffic(f"{self.name}, scaled to a {peak_per_s:g} req/s peak", self.rates_per_s * (peak_per_s / top),
                       self.source, self.origins)


def clock(seconds: float) -> str:
    """``HH:MM`` of ``seconds`` since midnight."""
    s = int(round(seconds))
    return f"{s // 3600:02d}:{s % 3600 // 60:02d}"


def constant(rate_per_s: float) -> Traffic:
    """The same rate all day (one slot)."""
    check_rate(rate_per_s, "rate")
    return Traffic(f"constant {rate_per_s:g} req/s", np.array([float(rate_per_s)]), origins=("the constant rate",))


def check_rate(value: float | str, where: str) -> float:
    """``value`` as a rate, or a :class:`StudioError` saying where and what is allowed."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise StudioError(f"{where}: {value!r} is not a number; a rate is requests per second, 0 … {MAX_RATE_PER_S:g}",
                          field="traffic") from None
    if math.isnan(v) or math.isinf(v):
        raise StudioError(f"{where}: {value!r} is not a finite number; a rate is requests per second, "
                          f"0 … {MAX_RATE_PER_S:g}", field="traffic")
    if v < 0:
        raise StudioError(f"{where}: rate {v:g} is negative; a rate is requests per second, 0 … {MAX_RATE_PER_S:g}",
                          field="traffic")
    if v > MAX_RATE_PER_S:
        raise StudioError(f"{where}: rate {v:g} is above {MAX_RATE_PER_S:g} requests per second", field="traffic")
    return v


def from_rates(name: str, rates: list[float] | np.ndarray, source: str = "", where: str = "rates_per_s") -> Traffic:
    """A day of ``len(rates)`` equal slots (the count must divide 1,440 minutes)."""
    values = list(rates)
    if not values:
        raise StudioError(f"{where}: no rates; give one rate per slot (24 hourly, 1,440 per-minute, …)",
                          source or None, field="traffic")
    if 1440 % len(values) != 0:
        raise StudioError(f"{where}: {len(values)} rates do not divide a day into whole minutes; give 1, 2, 3, 4, 6, "
                          "8, 12, 24, 48, 96, 144, 288, 1,440 … rates (a divisor of 1,440)", source or None,
                          field="traffic")
    out = np.array([check_rate(v, f"{where}[{i}]") for i, v in enumerate(values)])
    return Traffic(name, out, source, tuple(f"{where}[{i}]" for i in range(len(values))))


def _fields(line: str) -> list[str]:
    return [f for f in _SPLIT.split(line.strip()) if f]


def _seconds(text: str, where: str) -> float:
    """Seconds since midnight of ``3600.5``, ``09:30`` or ``09:30:15``."""
    if ":" in text:
        parts = text.split(":")
        try:
            nums = [float(p) for p in parts]
        except ValueError:
            nums = []
        if len(nums) not in (2, 3) or any(math.isnan(n) or n < 0 for n in nums) or nums[0] > 24 \
                or any(n >= 60 for n in nums[1:]):
            raise StudioError(f"{where}: timestamp {text!r} is not a clock time HH:MM[:SS] of one day", field="traffic")
        sec = nums[0] * 3600 + nums[1] * 60 + (nums[2] if len(nums) == 3 else 0.0)
    else:
        try:
            sec = float(text)
        except ValueError:
            raise StudioError(f"{where}: timestamp {text!r} is not a number of seconds since midnight "
                              "or a clock time HH:MM[:SS]", field="traffic") from None
    if not math.isfinite(sec) or sec < 0 or sec >= DAY_S:
        raise StudioError(f"{where}: timestamp {text!r} is outside one day (0 ≤ seconds < 86,400)", field="traffic")
    return sec


def parse_csv(text: str, source: str, slot_minutes: int | None = None) -> Traffic:
    """The traffic of CSV ``text`` (see the module docstring for the three kinds).

    Parameters
    ----------
    source:
        The file name, put in front of every message.
    slot_minutes:
        Slot length; it must divide 1,440. Default: 60 for timestamps, the file's own step for rates.

    Raises
    ------
    StudioError
        An empty file, a missing or unknown header, a bad number, a negative or NaN rate, a
        missing, repeated or out-of-order minute/hour, a timestamp not after the previous one.
    """
    lines = [(n, raw.split("#", 1)[0].strip()) for n, raw in enumerate(text.splitlines(), start=1)]
    lines = [(n, s) for n, s in lines if s]
    if not lines:
        raise StudioError("the file is empty (no header, no data); the first line names the columns: "
                          "'timestamp', 'minute,rate_per_s' or 'hour,rate_per_s'", source, field="traffic")
    head_no, head = lines[0]
    cols = [c.lower() for c in _fields(head)]
    body = lines[1:]
    if not body:
        raise StudioError(f"line {head_no}: a header and no data lines", source, field="traffic")
    if slot_minutes is not None and (slot_minutes < 1 or 1440 % slot_minutes):
        raise StudioError(f"slot of {slot_minutes} minutes does not divide a day; use a divisor of 1,440 "
                          "(1, 5, 10, 15, 30, 60, …)", source, field="slot_minutes")
    try:
        if cols == ["timestamp"]:
            return _from_timestamps(body, source, slot_minutes or 60)
        if len(cols) == 2 and cols[0] in ("minute", "hour") and cols[1] in ("rate_per_s", "rate"):
            return _from_rate_rows(body, source, cols[0], slot_minutes)
    except StudioError as exc:
        if exc.source is None:  # a field check: the file goes in front
            raise StudioError(exc.message, source, field=exc.field) from None
        raise
    raise StudioError(f"line {head_no}: header {head!r} is not one of 'timestamp', 'minute,rate_per_s', "
                      "'hour,rate_per_s'", source, field="traffic")


def _from_timestamps(body: list[tuple[int, str]], source: str, slot_minutes: int) -> Traffic:
    times = np.empty(len(body))
    prev_line = 0
    for k, (n, s) in enumerate(body):
        f = _fields(s)
        if len(f) != 1:
            raise StudioError(f"line {n}: field 'timestamp': expected one timestamp, got {len(f)} fields",
                              source, field="traffic")
        t = _seconds(f[0], f"line {n}: field 'timestamp'")
        if k and t <= times[k - 1]:
            same = "repeats" if t == times[k - 1] else "is before"
            raise StudioError(f"line {n}: field 'timestamp': {f[0]} {same} the timestamp of line {prev_line}; "
                              "timestamps must be strictly increasing (sorted, no duplicates)", source,
                              field="traffic")
        times[k] = t
        prev_line = n
    slot_s = slot_minutes * 60.0
    counts = np.bincount((times // slot_s).astype(np.int64), minlength=int(DAY_S // slot_s))
    n = int(DAY_S // slot_s)
    return Traffic(source.rsplit("/", 1)[-1], counts / slot_s, f"{len(body):,} arrivals in {source}",
                   tuple(f"{source}: {clock(k * slot_s)}–{clock((k + 1) * slot_s)}" for k in range(n)))


def _from_rate_rows(body: list[tuple[int, str]], source: str, unit: str, slot_minutes: int | None) -> Traffic:
    per = 1440 if unit == "minute" else 24
    rates = np.empty(len(body))
    for k, (n, s) in enumerate(body):
        f = _fields(s)
        if len(f) != 2:
            raise StudioError(f"line {n}: expected two fields '{unit},rate_per_s', got {len(f)}", source,
                              field="traffic")
        try:
            idx = float(f[0])
        except ValueError:
            idx = math.nan
        if not idx.is_integer() or int(idx) != k:
            want = f"{k}" if k < per else f"at most {per} rows"
            raise StudioError(f"line {n}: field '{unit}': {f[0]!r} where {unit} {want} was expected; give every "
                              f"{unit} 0 … {per - 1} once, in order", source, field="traffic")
        rates[k] = check_rate(f[1], f"line {n}: field 'rate_per_s'") if _is_number(f[1]) else _bad_rate(f[1], n)
    if len(body) != per:
        raise StudioError(f"{len(body)} {unit} rows; a day has {per} (every {unit} 0 … {per - 1} once)", source,
                          field="traffic")
    step = 1 if unit == "minute" else 60
    slot = slot_minutes or step
    if slot % step:
        raise StudioError(f"slots of {slot} minutes cannot be made of {unit}s; use a multiple of {step} minutes",
                          source, field="slot_minutes")
    k = slot // step
    binned = rates.reshape(-1, k).mean(axis=1)
    lines = [n for n, _ in body]
    origins = tuple(f"{source}: line {lines[i * k]}" if k == 1 else f"{source}: lines {lines[i * k]}–{lines[i * k + k - 1]}"
                    for i in range(binned.size))
    return Traffic(source.rsplit("/", 1)[-1], binned, f"per-{unit} rates in {source}", origins)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _bad_rate(text: str, line: int) -> float:
    raise StudioError(f"line {line}: field 'rate_per_s': {text!r} is not a number; a rate is requests per second, "
                      f"0 … {MAX_RATE_PER_S:g}", field="traffic")
