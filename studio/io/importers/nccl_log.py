"""Read the stdout of nccl-tests (``all_reduce_perf``, ``all_gather_perf``, ``sendrecv_perf``, ...).

The table has one row per message size::

    #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
    #        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
           8388608       2097152     float     sum      -1    133.5   62.82  109.93      0    ...

Older versions lack the ``root`` (and for some tests the ``redop``) column and call ``#wrong``
``error``; ``#wrong`` may read ``N/A`` (run with ``-c 0``); a table may hold only the out-of-place
group. Lines prefixed by ``mpirun --tag-output`` (``[1,0]<stdout>:``) are accepted. Header lines give
the thread/GPU counts (``# nThread 1 nGpus 8 ...``), the devices (``#  Rank  0 ... device  0 [0x..]
NVIDIA H100 80GB HBM3``) and the test (``# Collective test starting: all_reduce_perf``); the footer
the average bus bandwidth. Nothing in the text is executed; the size is limited.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace

from studio.core.errors import StudioError
from studio.core.units import whole_mib

MAX_LOG_BYTES = 8 * 1024 * 1024
MAX_ROWS = 10_000

#: busbw / algbw of each collective for ``n`` ranks (nccl-tests' PERFORMANCE.md definitions).
BUS_FACTORS = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "alltoall": lambda n: (n - 1) / n,
    "sendrecv": lambda n: 1.0,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
}

_TAG = re.compile(r"^\[\d+,\d+\]<std(?:out|err)>:")
# "#  Rank  0 Group  0 Pid 1234 on host1 device  0 [0x1b] NVIDIA H100 80GB HBM3": the head and the
# device part are separate anchored regexes without nested quantifiers, the "device" word is found
# with str.find, so long runs of spaces or repeated words cost linear time.
_RANK = re.compile(r"^#\s*Rank\s+(\d{1,9})(?!\w)")
_DEVICE = re.compile(r"\s+\d{1,9}\s+\[[^\]\s]{0,64}\]\s+(\S.*)$")
_TEST = re.compile(r"^#\s*Collective test starting:\s*(\w+)")
_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*([0-9.eE+-]+)")
_NGPUS = re.compile(r"\bnGpus\s+(\d+)")
_NTHREAD = re.compile(r"\bnThread\s+(\d+)")
# The units line under the table header: "#  (B)  (elements)  (us)  (GB/s)  (GB/s) ...".
_UNIT = re.compile(r"\((ns|us|µs|ms|s)\)")
#: Microseconds per unit of the time columns.
TIME_UNITS_US = {"ns": 1e-3, "us": 1.0, "µs": 1.0, "ms": 1e3, "s": 1e6}


@dataclass(frozen=True)
class NcclRow:
    """One message size. Times in µs, bandwidths in GB/s; ``in_*`` are None when the table has
    no in-place group; ``*_wrong`` None when not checked (``N/A``)."""

    size_bytes: int
    count: int
    dtype: str
    redop: str | None
    root: int | None
    time_us: float
    algbw_gbps: float
    busbw_gbps: float
    wrong: float | None
    in_time_us: float | None = None
    in_algbw_gbps: float | None = None
    in_busbw_gbps: float | None = None
    in_wrong: float | None = None
    line: int = 0


@dataclass(frozen=True)
class NcclLog:
    """A parsed nccl-tests run."""

    rows: tuple[NcclRow, ...]
    test: str | None = None
    ranks: int | None = None
    devices: tuple[str, ...] = ()
    avg_busbw_gbps: float | None = None
    source: str = "<nccl>"

    @property
    def collective(self) -> str | None:
        """``all_reduce``, ``sendrecv``, ... from the test name, else from busbw/algbw."""
        if self.test:
            name = re.sub(r"(_perf)?(_mpi)?$", "", self.test)
            if name in BUS_FACTORS:
                return name
        return infer_collective(self)

    def points(self, in_place: bool = True) -> tuple[list[float], list[float]]:
        """(size in bytes, time in µs) of every timed measurement, out-of-place then in-place."""
        sizes: list[float] = []
        times: list[float] = []
        for r in self.rows:
            if r.time_us > 0:
                sizes.append(float(r.size_bytes))
                times.append(r.time_us)
            if in_place and r.in_time_us is not None and r.in_time_us > 0:
                sizes.append(float(r.size_bytes))
                times.append(r.in_time_us)
        return sizes, times

    @property
    def group_size(self) -> int | None:
        """Ranks of the run: the rank lines, else what the all-reduce bus factor 2(n-1)/n implies."""
        if self.ranks:
            return self.ranks
        f = self.bus_factor
        if self.collective == "all_reduce" and f is not None and 1.0 < f < 1.999:
            return round(2 / (2 - f))
        return None

    @property
    def bus_factor(self) -> float | None:
        """busbw / algbw of this run (measured from the rows, which nccl-tests computed)."""
        ratios = [r.busbw_gbps / r.algbw_gbps for r in self.rows if r.algbw_gbps >= 0.1]
        if not ratios:
            return None
        ratios.sort()
        return ratios[len(ratios) // 2]


def infer_collective(log: NcclLog) -> str | None:
    """Guess the collective from busbw/algbw: 2(n-1)/n is all_reduce, 1 is point-to-point."""
    f = log.bus_factor
    if f is None:
        return None
    if f > 1.02:
        return "all_reduce"
    if f > 0.98:
        return None if log.ranks == 2 else "sendrecv"  # 2-rank all_reduce has factor 1 too
    return "all_gather"


def _num(tok: str, line_no: int, col: int, what: str, source: str) -> float:
    try:
        v = float(tok)
    except ValueError:
        raise StudioError(
            f"line {line_no}, column {col} ({what}): cannot read '{tok[:30]}' as a number", source
        ) from None
    if not math.isfinite(v) or v < 0:
        raise StudioError(f"line {line_no}, column {col} ({what}): '{tok[:30]}' is not a number ≥ 0", source)
    return v


def _wrong(tok: str, line_no: int, col: int, source: str) -> float | None:
    if tok.upper() == "N/A":
        return None
    return _num(tok, line_no, col, "#wrong", source)


def _row(line: str, line_no: int, source: str, offset: int = 0) -> NcclRow:
    toks = [(m.start() + 1 + offset, m.group()) for m in re.finditer(r"\S+", line)]
    rest = toks[3:]
    groups = 2 if len(rest) >= 8 else 1
    head = len(rest) - 4 * groups
    if not 0 <= head <= 2:
        col = toks[-1][0]
        raise StudioError(
            f"line {line_no}, column {col}: a table row has {len(toks)} fields; expected size, count, "
            "type, [redop], [root], then time, algbw, busbw, #wrong (out-of-place [and in-place])",
            source,
        )
    size = int(toks[0][1])
    if not re.fullmatch(r"\d{1,20}", toks[1][1]):
        raise StudioError(f"line {line_no}, column {toks[1][0]} (count): '{toks[1][1][:30]}' is not a count", source)
    redop: str | None = None
    root: int | None = None
    hv = [t for _, t in rest[:head]]
    for v in hv:
        if re.fullmatch(r"-?\d{1,9}", v):
            root = int(v)
        else:
            redop = v[:20]
    g = rest[head:]
    in_place: dict[str, float | None] = {}
    if groups == 2:
        in_place = {
            "in_time_us": _num(g[4][1], line_no, g[4][0], "in-place time", source),
            "in_algbw_gbps": _num(g[5][1], line_no, g[5][0], "in-place algbw", source),
            "in_busbw_gbps": _num(g[6][1], line_no, g[6][0], "in-place busbw", source),
            "in_wrong": _wrong(g[7][1], line_no, g[7][0], source),
        }
    return NcclRow(
        size, int(toks[1][1]), toks[2][1][:20], redop, root,
        time_us=_num(g[0][1], line_no, g[0][0], "time", source),
        algbw_gbps=_num(g[1][1], line_no, g[1][0], "algbw", source),
        busbw_gbps=_num(g[2][1], line_no, g[2][0], "busbw", source),
        wrong=_wrong(g[3][1], line_no, g[3][0], source),
        line=line_no,
        **in_place,
    )


def _rank_line(line: str) -> tuple[int, str] | None:
    """(rank, device name) of a "# Rank N ... device D [BUS] NAME" line, else ``None``."""
    m = _RANK.match(line)
    if m is None:
        return None
    rest = line[m.end():]
    at = 0
    while (k := rest.find("device", at)) >= 0:
        at = k + len("device")
        if k and (rest[k - 1].isalnum() or rest[k - 1] == "_"):
            continue  # "cudadevice": not the word
        d = _DEVICE.match(rest, at)
        if d is not None:
            return int(m.group(1)), d.group(1).rstrip()[:120]
    return None


def parse_nccl_log(text: str, source: str = "<nccl>") -> NcclLog:
    """Parse nccl-tests stdout.

    Raises
    ------
    StudioError
        Oversized input, no table rows, or a row that cannot be read (naming line and column).
    """
    if not isinstance(text, str):
        raise StudioError("an nccl-tests log must be text", source)
    if len(text) > MAX_LOG_BYTES:
        raise StudioError(f"log is larger than {whole_mib(MAX_LOG_BYTES)}", source)
    rows: list[NcclRow] = []
    ranks: dict[int, str] = {}
    test = None
    avg = None
    n_gpus = n_thread = None
    time_scale = 1.0  # the header's time unit in µs (nccl-tests prints "(us)")
    for i, raw in enumerate(text.replace("\r", "\n").split("\n")):
        body = _TAG.sub("", raw)
        line = body.strip()
        if not line:
            continue
        if line.startswith("#"):
            if rank := _rank_line(line):
                ranks[rank[0]] = rank[1]
            elif m := _TEST.match(line):
                test = m.group(1)[:60]
            elif m := _AVG.match(line):
                try:
                    avg = float(m.group(1))
                except ValueError:
                    avg = None
            elif "(elements)" in line or "(B)" in line:
                found = set(_UNIT.findall(line))
                if len(found) > 1:
                    raise StudioError(
                        f"line {i + 1}: the table header gives times in {' and '.join(sorted(found))}; "
                        "expected one unit", source
                    )
                if found:
                    time_scale = TIME_UNITS_US[found.pop()]
            else:
                if m := _NGPUS.search(line):
                    n_gpus = int(m.group(1)[:6])
                if m := _NTHREAD.search(line):
                    n_thread = int(m.group(1)[:6])
            continue
        first = line.split(None, 1)[0]
        if not re.fullmatch(r"\d{1,20}", first):
            continue  # NCCL INFO/WARN lines, hostnames, banners
        if len(line.split()) < 7:
            continue
        rows.append(_row(body, i + 1, source, offset=len(raw) - len(body)))
        if len(rows) > MAX_ROWS:
            raise StudioError(f"more than {MAX_ROWS} table rows; is this an nccl-tests log?", source)
    if not rows:
        raise StudioError(
            "no nccl-tests table rows found (lines of size, count, type, ..., time, algbw, busbw)", source
        )
    if time_scale != 1.0:
        rows = [
            replace(r, time_us=r.time_us * time_scale,
                    in_time_us=None if r.in_time_us is None else r.in_time_us * time_scale)
            for r in rows
        ]
    n_ranks = len(ranks) if ranks else None
    if n_ranks is None and n_gpus and (n_thread or 1) * n_gpus > 1:
        n_ranks = n_gpus * (n_thread or 1)  # one process; under MPI the rank lines say more
    return NcclLog(
        rows=tuple(rows),
        test=test,
        ranks=n_ranks,
        devices=tuple(ranks[k] for k in sorted(ranks)),
        avg_busbw_gbps=avg,
        source=source,
    )


def read_nccl_log(path: str) -> NcclLog:
    """Read and parse an nccl-tests log file through the bounded reader (regular files only, size
    checked before reading; UTF-8, UTF-16 or, failing both, Latin-1)."""
    from studio.io.safe import read_text_limited

    text = read_text_limited(path, MAX_LOG_BYTES, "nccl-tests log", fallback="latin-1")
    return parse_nccl_log(text, str(path))
