"""Measured kernel tables: GEMM, attention, fused MoE and collectives timed on real GPUs.

The tables are derived at build time from NVIDIA's ``aiconfigurator-core`` package by
``tools/derive_kernel_tables.py`` into ``presets/kernels/`` (float32 ``.npz`` + ``manifest.json``
citing the package, its version and the source file of every table). This module only reads those
numpy files, lazily on the first lookup (and each table of a file when first read), so importing
the engine costs nothing more.

Every lookup returns a :class:`Curve` (time against one size in log space) carrying its provenance:
``"measured: h200 GEMM, TensorRT-LLM 1.3.0rc20"`` when the GPU's own silicon was measured, or
``"estimate: no table for mi300x (roofline with h200 efficiency)"`` when the GPU has no tables —
then the nearest measured silicon's efficiency (measured time / its roofline) is applied to the
GPU's own roofline, its peaks scaled by the measured MAMF and STREAM fractions of
``presets/engine.json``. Shapes outside the measured range are scaled from the nearest measured
shape by the roofline ratio and say so.

Tables are per serving engine and version (``engine`` = ``trtllm`` | ``vllm`` | ``sglang``,
``version`` None = the newest shipped for that engine, else the nearest shipped version); each engine
profile (``presets/engines``) names the tables its engine runs; :data:`DEFAULT_ENGINE` (TensorRT-LLM)
serves callers without a profile.
"""

from __future__ import annotations

import io
import json
import math
import re
import threading
from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from studio.core.errors import StudioError
from studio.core.hardware import GpuSpec
from studio.core.packaged import data_root
from studio.engine.step.records import Record

if TYPE_CHECKING:
    from studio.core.packaged import Traversable

DEFAULT_ENGINE = "trtllm"
ENGINE_NAMES = {"trtllm": "TensorRT-LLM", "vllm": "vLLM", "sglang": "SGLang"}
#: Universal grid of sizes every curve is resampled to (1 … 2^15 tokens in half octaves), so curves
#: of one stage add up point by point.
TOKENS = 2.0 ** np.arange(0.0, 15.01, 0.5)
_LOG_TOKENS = np.log(TOKENS)
#: Expected maximum of n independent standard normals (n = 1, 2, 4, …, 256): E[max] of the
#: per-rank loads of an EP group, μ + σ·c_n (tabulated by quadrature in :func:`_max_normal`).
_DTYPE_BYTES = {"bf16": 2.0, "fp8": 1.0, "fp8_block": 1.0, "fp4": 0.5625, "w4a16": 0.53125}
_PEAK_OF = {"bf16": "bf16", "fp8": "fp8", "fp8_block": "fp8", "fp4": "fp4", "w4a16": "bf16"}


def _kernels_dir() -> Traversable:
    return data_root("presets").joinpath("kernels")


@lru_cache(maxsize=1)
def manifest() -> dict[str, Any]:
    """``presets/kernels/manifest.json`` (cached)."""
    path = _kernels_dir().joinpath("manifest.json")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise StudioError(f"cannot read the kernel tables' manifest: {exc}", "presets/kernels/manifest.json") from None
    return data


class TableFile(Mapping[str, np.ndarray]):
    """The arrays of one kernel-table file by name, each decompressed and widened to float64 when
    first read: a sweep reads a dozen of a file's ~100 tables (its model's GEMM and attention
    shapes, the collectives of its group sizes), and reading all of them cost ~15 ms per process.
    The file's bytes are read once; reads from several threads (the window's engine workers) are
    serialised."""

    def __init__(self, data: bytes) -> None:
        self._npz = np.load(io.BytesIO(data))
        self._names = frozenset(self._npz.files)
        self._read: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()

    def __getitem__(self, name: str) -> np.ndarray:
        hit = self._read.get(name)
        if hit is None:
            if name not in self._names:
                raise KeyError(name)
            with self._lock:
                hit = self._read.get(name)
                if hit is None:
                    hit = self._read[name] = np.asarray(self._npz[name], dtype=np.float64)
        return hit

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __iter__(self) -> Iterator[str]:
        return iter(self._npz.files)

    def __len__(self) -> int:
        return len(self._names)


@lru_cache(maxsize=32)
def _arrays(file: str) -> TableFile:
    return TableFile(_kernels_dir().joinpath(file).read_bytes())


def _short(silicon: str) -> str:
    return silicon.replace("_sxm", "").replace("_server", "").replace("_", " ")


class Silicon(Record):
    """Which measured tables a GPU uses and how."""

    gpu: str  # our preset id
    silicon: str  # aiconfigurator's system name
    engine: str
    version: str
    file: str
    measured: bool  # the GPU's own silicon was measured
    peaks: dict[str, float]  # the measured system's datasheet figures (manifest "silicon")
    asked: str = ""  # the version the engine profile asked for ("" = the shipped one)

    # one object per (gpu, engine, version) (:func:`silicon_for` is cached): identity is equality,
    # so the lookups below can be cached on it

    @property
    def label(self) -> str:
        return f"{_short(self.silicon)}, {ENGINE_NAMES.get(self.engine, self.engine)} {self.version}"

    def arrays(self) -> TableFile:
        return _arrays(self.file)

    @property
    def substitute(self) -> str:
        """``"nearest to 0.33.0"`` when the profile asked for a version without tables, else ``""``."""
        return f"nearest to {self.asked}" if self.asked and self.asked != self.version else ""

    def provenance(self, op: str, *, scaled: str = "") -> str:
        if self.measured:
            text = f"measured: {_short(self.silicon)} {op}, {ENGINE_NAMES.get(self.engine, self.engine)} {self.version}"
        else:
            text = (f"estimate: no table for {self.gpu} ({op}: roofline with {self.label} efficiency)")
        if self.substitute:
            text += f" ({self.substitute})"
        return text + (f"; {scaled}" if scaled else "")


def engines() -> dict[str, list[str]]:
    """Serving engines with tables and their versions."""
    out: dict[str, list[str]] = {}
    for t in manifest()["tables"].values():
        out.setdefault(t["engine"], [])
        if t["version"] not in out[t["engine"]]:
            out[t["engine"]].append(t["version"])
    return out


def _nearest_silicon(bw: float, bf16: float) -> str:
    """The measured silicon closest in memory bandwidth and BF16 peak (log distance)."""
    sil = manifest()["silicon"]
    return min(sil, key=lambda s: abs(math.log(sil[s]["mem_bw_gbps"] / bw))
               + abs(math.log(sil[s]["bf16_tflops"] / bf16)))


def silicon_for(spec: GpuSpec, engine: str = DEFAULT_ENGINE, version: str | None = None) -> Silicon:
    """The tables ``spec`` uses for ``engine`` at ``version`` (None = the newest shipped): the
    shipped version nearest to it when that version has no tables of its own (the provenance then
    says "nearest to …").

    Raises
    ------
    StudioError
        No tables for that engine (the message lists those shipped).
    """
    return _silicon_for(spec.id, spec.hbm_bandwidth_gbps, spec.tflops_bf16, engine, version)


@lru_cache(maxsize=256)
def _silicon_for(gpu: str, bw: float, bf16: float, engine: str, version: str | None) -> Silicon:
    m = manifest()
    entry = m["gpus"].get(gpu)
    silicon = entry["silicon"] if entry else _nearest_silicon(bw, bf16)
    measured = bool(entry and entry["measured"])
    tables = [t for t in m["tables"].values() if t["silicon"] == silicon and t["engine"] == engine]
    if not tables:
        shipped = ", ".join(f"{e} {'/'.join(v)}" for e, v in engines().items())
        raise StudioError(f"no kernel tables for engine '{engine}'; shipped: {shipped}", "presets/kernels")
    t = (max(tables, key=lambda x: _version_key(x["version"])) if version is None
         else nearest_version(tables, version))
    return Silicon(gpu=gpu, silicon=silicon, engine=engine, version=t["version"], file=t["file"],
                   measured=measured, peaks=m["silicon"][silicon], asked=version or "")


def _version_key(text: str) -> tuple[int, ...]:
    """``"1.3.0rc20"`` → ``(1, 3, 0)``: the leading dotted integers (``(0,)`` if none)."""
    m = re.match(r"\d+(?:\.\d+)*", text.strip().lstrip("vV"))
    return tuple(int(x) for x in m.group(0).split(".")) if m else (0,)


def nearest_version(tables: list[dict[str, Any]], version: str) -> dict[str, Any]:
    """The table of ``version`` if shipped, else the one whose version is nearest (compared part by
    part: major, then minor, then patch; a tie goes to the newer table)."""
    exact = [t for t in tables if t["version"] == version]
    if exact:
        return exact[0]
    want = _version_key(version)

    def distance(t: dict[str, Any]) -> tuple[int, ...]:
        have = _version_key(t["version"])
        n = max(len(want), len(have))
        a, b = want + (0,) * (n - len(want)), have + (0,) * (n - len(have))
        return tuple(abs(x - y) for x, y in zip(a, b, strict=True))

    return min(tables, key=lambda t: (distance(t), tuple(-x for x in _version_key(t["version"]))))


class Curve:
    """Time (ms) against one size (tokens, bytes or FLOPs) on a log grid, with its provenance.

    Below the grid the first point holds (a latency floor); above it time grows in proportion to the
    size (the kernel is saturated)."""

    __slots__ = ("log_x", "log_t", "provenance", "_last", "_x0", "_inv", "_y", "_dy", "_n", "_seen")

    #: most sizes a curve keeps the times of (:meth:`at_log`), and the longest array of sizes kept
    MEMO_ENTRIES = 64
    MEMO_SIZES = 64

    #: resampling step of the uniform log grid the curve is evaluated on (1/8 octave): a direct index
    #: instead of a binary search per element (the sweep evaluates curves over ~10⁵ rows)
    STEP = math.log(2.0) / 8

    def __init__(self, x: np.ndarray, t: np.ndarray, provenance: str) -> None:
        self.log_x = np.log(np.asarray(x, dtype=float))
        self.log_t = np.log(np.maximum(np.asarray(t, dtype=float), 1e-12))
        self.provenance = provenance
        self._last = float(self.log_x[-1])
        self._x0 = float(self.log_x[0])
        n = max(2, int(math.ceil((self._last - self._x0) / self.STEP)) + 1)
        grid = np.linspace(self._x0, self._last, n)
        y = np.interp(grid, self.log_x, self.log_t)
        self._inv = (n - 1) / (self._last - self._x0) if self._last > self._x0 else 0.0
        self._y = y
        self._dy = np.append(np.diff(y), 0.0)
        self._n = n
        self._seen: dict[bytes, np.ndarray] = {}

    def __call__(self, size: np.ndarray | float) -> np.ndarray:
        return self.at_log(np.log(np.maximum(size, 1e-30)))

    def at_log(self, ls: np.ndarray | float) -> np.ndarray:
        """The time at sizes given as their natural logarithms (callers that evaluate several
        curves at the same sizes take the logarithm once)."""
        la = np.asarray(ls, dtype=float)
        if la.ndim == 0:
            x = min(max((float(la) - self._x0) * self._inv, 0.0), self._n - 1.0)
            j = int(x)
            return np.float64(math.exp(self._y[j] + (x - j) * self._dy[j] + max(float(la) - self._last, 0.0)))
        # the engine asks a curve for the same few sizes again and again (the same plan under other
        # constants, the same stage at the same batch: ~3 of 4 lookups over a test run), so the
        # times of short arrays of sizes are kept with the curve and handed back as copies
        small = la.size <= self.MEMO_SIZES
        if small:
            key = la.tobytes() + bytes((la.ndim,))
            hit = self._seen.get(key)
            if hit is not None:
                return hit.reshape(la.shape).copy()
        v = self._times(la)
        if small:
            if len(self._seen) >= self.MEMO_ENTRIES:
                self._seen.clear()
            self._seen[key] = v.copy()
        return v

    def _times(self, la: np.ndarray) -> np.ndarray:
        """:meth:`at_log` of an array of log sizes (not kept)."""
        u = (la - self._x0) * self._inv
        np.maximum(u, 0.0, out=u)
        np.minimum(u, self._n - 1.0, out=u)
        i = u.astype(np.intp)
        v = self._y[i]
        u -= i
        u *= self._dy[i]
        v += u
        over = la - self._last
        np.maximum(over, 0.0, out=over)
        v += over
        return np.exp(v, out=v)

    @staticmethod
    def total(curves: list[Curve], weights: list[float] | None = None) -> Curve:
        """Point-by-point weighted sum of curves on the same grid (provenances joined, unique)."""
        w = weights or [1.0] * len(curves)
        t = sum(wi * np.exp(cv.log_t) for wi, cv in zip(w, curves, strict=True))
        prov = "; ".join(dict.fromkeys(cv.provenance for cv in curves))
        return Curve(np.exp(curves[0].log_x), np.asarray(t), prov)


def _interp_axis(grid: np.ndarray, value: float) -> tuple[int, int, float, float]:
    """Indices and weight of ``value`` on the ascending ``grid`` in log space, clamped; the last item
    is the clamped value (so callers can scale what lies outside)."""
    lg = np.log(grid)
    lv = math.log(max(value, 1e-30))
    c = min(max(lv, lg[0]), lg[-1])
    i = int(np.searchsorted(lg, c, side="right") - 1)
    i = min(max(i, 0), len(lg) - 2) if len(lg) > 1 else 0
    if len(lg) == 1:
        return 0, 0, 0.0, float(math.exp(c))
    w = (c - lg[i]) / (lg[i + 1] - lg[i])
    return i, i + 1, float(w), float(math.exp(c))


def _roofline(flops: np.ndarray, nbytes: np.ndarray, tflops: float, gbps: float) -> np.ndarray:
    return np.maximum(flops / (tflops * 1e12), nbytes / (gbps * 1e9)) * 1e3


class Target(Record, frozen=True):
    """The GPU a lookup is for: its datasheet peaks and bandwidth, scaled by its measured MAMF /
    STREAM fractions relative to the reference silicon's (only used when that silicon is not the
    GPU's own). Hashable by value, so lookups are cached across layouts."""

    gpu: str
    peaks: tuple[tuple[str, float], ...]  # (compute class, TFLOPS × scale)
    gbps: float

    @staticmethod
    def of(spec: GpuSpec, compute_scale: dict[str, float] | None = None, memory_scale: float = 1.0) -> Target:
        cs = compute_scale or {}
        return Target(spec.id, tuple((k, spec.peak_tflops(k) * cs.get(k, 1.0)) for k in ("bf16", "fp8", "fp4")),
                      spec.hbm_bandwidth_gbps * memory_scale)

    def tflops(self, cls: str) -> float:
        return dict(self.peaks).get(cls, self.peaks[0][1])


def _to_target(sil: Silicon, tgt: Target, cls: str, flops: np.ndarray, nbytes: np.ndarray) -> np.ndarray:
    """Factor from the reference silicon's time to the target GPU's: 1 on its own silicon, else
    roofline(target) / roofline(reference) point by point."""
    if sil.measured:
        return np.ones_like(np.asarray(flops, dtype=float))
    ref_tf = sil.peaks.get(f"{cls}_tflops") or sil.peaks["bf16_tflops"]
    return _roofline(flops, nbytes, tgt.tflops(cls), tgt.gbps) / _roofline(flops, nbytes, ref_tf, sil.peaks["mem_bw_gbps"])


def gemm_curve(sil: Silicon, tgt: Target, dtype: str, n: float, k: float, weight_bytes: float | None = None) -> Curve:
    """Time of one GEMM ``[m × k] · [k × n]`` against m (the tokens) on :data:`TOKENS`.

    ``dtype`` is the table's format (``bf16``, ``fp8``, ``fp4``); ``weight_bytes`` the bytes per
    weight element when they differ from it (weight-only INT4/INT8 run BF16 math on narrower
    weights): the time is scaled by the roofline ratio, which moves only the memory-bound part."""
    return _gemm_curve(sil, tgt, dtype, float(n), float(k), weight_bytes)


@lru_cache(maxsize=4096)
def _gemm_curve(sil: Silicon, tgt: Target, dtype: str, n: float, k: float, weight_bytes: float | None) -> Curve:
    a = sil.arrays()
    table = dtype
    for cand in (dtype, "fp8_block" if dtype == "fp8" else "", "fp8" if dtype == "fp4" else "", "bf16"):
        if cand and f"gemm_{cand}" in a:
            table = cand
            break
    grid = a[f"gemm_{table}"]
    ms, ns, ks = a[f"gemm_{table}_m"], a[f"gemm_{table}_n"], a[f"gemm_{table}_k"]
    n0, n1, wn, nc = _interp_axis(ns, n)
    k0, k1, wk, kc = _interp_axis(ks, k)
    lg = np.log(grid)
    lt = ((1 - wn) * (1 - wk) * lg[:, n0, k0] + wn * (1 - wk) * lg[:, n1, k0]
          + (1 - wn) * wk * lg[:, n0, k1] + wn * wk * lg[:, n1, k1])
    t_ref = np.exp(np.interp(_LOG_TOKENS, np.log(ms), lt))
    over = np.maximum(_LOG_TOKENS - np.log(ms[-1]), 0.0)
    t_ref = t_ref * np.exp(over)
    tb = _DTYPE_BYTES.get(table, 2.0)
    wb = weight_bytes if weight_bytes is not None else tb
    notes = []
    flops = 2.0 * TOKENS * n * k
    cls = _PEAK_OF.get(table, "bf16")
    ref_tf = sil.peaks.get(f"{cls}_tflops") or sil.peaks["bf16_tflops"]
    ref_bw = sil.peaks["mem_bw_gbps"]

    def nbytes(nn: float, kk: float, b: float) -> np.ndarray:
        return nn * kk * b + TOKENS * (nn + kk) * 2.0

    inside = math.isclose(nc, n, rel_tol=1e-6) and math.isclose(kc, k, rel_tol=1e-6)
    if not inside or wb != tb:
        # outside the measured shapes, or narrower weights than the table's: the roofline ratio
        t_ref = t_ref * (_roofline(flops, nbytes(n, k, wb), ref_tf, ref_bw)
                         / _roofline(2.0 * TOKENS * nc * kc, nbytes(nc, kc, tb), ref_tf, ref_bw))
        if not inside:
            notes.append(f"n={n:.0f}, k={k:.0f} scaled from the measured {nc:.0f}×{kc:.0f}")
        if wb != tb:
            notes.append(f"{wb:g} B weights scaled from the {table} table")
    t = t_ref * _to_target(sil, tgt, cls, flops, nbytes(n, k, wb))
    op = "GEMM" if table == dtype else f"GEMM ({table} table for {dtype})"
    return Curve(TOKENS, t, sil.provenance(op, scaled="; ".join(notes)))


def _bilinear(xs: np.ndarray, ys: np.ndarray, grid: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Bilinear interpolation in log space, clamped to the grid."""
    lx, ly = np.log(xs), np.log(ys)
    cx = np.clip(np.log(np.maximum(x, 1e-30)), lx[0], lx[-1])
    cy = np.clip(np.log(np.maximum(y, 1e-30)), ly[0], ly[-1])
    i = np.clip(np.searchsorted(lx, cx, side="right") - 1, 0, max(len(lx) - 2, 0))
    j = np.clip(np.searchsorted(ly, cy, side="right") - 1, 0, max(len(ly) - 2, 0))
    i1 = np.minimum(i + 1, len(lx) - 1)
    j1 = np.minimum(j + 1, len(ly) - 1)
    wx = np.where(i1 > i, (cx - lx[i]) / np.where(i1 > i, lx[i1] - lx[i], 1.0), 0.0)
    wy = np.where(j1 > j, (cy - ly[j]) / np.where(j1 > j, ly[j1] - ly[j], 1.0), 0.0)
    return ((1 - wx) * (1 - wy) * grid[i, j] + wx * (1 - wy) * grid[i1, j]
            + (1 - wx) * wy * grid[i, j1] + wx * wy * grid[i1, j1])


@lru_cache(maxsize=64)
def _max_normal(n: int) -> float:
    """E[max of n independent standard normals] (0 for n = 1), by quadrature."""
    if n <= 1:
        return 0.0
    z = np.linspace(-8.0, 8.0, 4001)
    phi = np.exp(-z * z / 2) / math.sqrt(2 * math.pi)
    cdf = np.cumsum(phi) * (z[1] - z[0])
    dens = n * phi * cdf ** (n - 1)
    return float(np.sum(z * dens) * (z[1] - z[0]))


def moe_curve(sil: Silicon, tgt: Target, dtype: str, hidden: float, inter: float, topk: int, experts: int,
              ep: int, skew: float = 1.0, backend: str = "") -> Curve:
    """Time of one fused MoE layer on the most loaded EP rank against the tokens routed in the EP
    group (on :data:`TOKENS`): ``inter`` is the expert width on one GPU (÷ TP-in-experts), ``ep`` the
    ranks the experts are spread over. Per rank, the distinct experts touched (balanced routing;
    the most loaded rank's expectation for ep > 1) are read once, and the token-expert pairs are
    computed at ``skew`` × the balanced load (routing skew); the measured fraction of that roofline
    comes from the table at the tokens per expert and the bytes one rank reads. ``backend`` (e.g.
    ``cutlass``) takes that backend's own table where the package timed several fused-MoE backends
    for the format (``moe_<dtype>_<backend>``); elsewhere the format's table, the fastest measured."""
    return _moe_curve(sil, tgt, dtype, float(hidden), float(inter), int(topk), int(experts), int(ep), float(skew),
                      backend)


@lru_cache(maxsize=1024)
def _moe_curve(sil: Silicon, tgt: Target, dtype: str, hidden: float, inter: float, topk: int, experts: int,
               ep: int, skew: float, backend: str = "") -> Curve:
    a = sil.arrays()
    table = dtype
    for cand in (dtype, "fp8_block" if dtype == "fp8" else "", "fp8" if dtype in ("fp4", "fp8_block") else "",
                 "fp4" if dtype == "w4a16" else "", "bf16"):
        if cand and f"moe_{cand}_eff" in a:
            table = cand
            break
    fmt = table
    if backend and f"moe_{table}_{backend}_eff" in a:
        table = f"{table}_{backend}"
    t = TOKENS
    local = experts / ep
    p = 1.0 - (1.0 - topk / experts) ** t
    mean = local * p
    sd = np.sqrt(local * p * (1.0 - p))
    touched = np.minimum(mean + sd * _max_normal(ep), local)  # the most loaded rank
    per_expert = 3.0 * hidden * inter * _DTYPE_BYTES.get(dtype, 2.0)
    nbytes = touched * per_expert
    pairs = t * topk / ep * skew
    flops = 2.0 * pairs * 3.0 * hidden * inter
    cls = _PEAK_OF.get(dtype, "bf16")
    ref_tf = sil.peaks.get(f"{cls}_tflops") or sil.peaks["bf16_tflops"]
    eff = _bilinear(a[f"moe_{table}_tpe"], a[f"moe_{table}_bytes"], a[f"moe_{table}_eff"],
                    t * topk / experts, mean * per_expert)
    roof = _roofline(flops, nbytes, ref_tf, sil.peaks["mem_bw_gbps"])
    model = roof / np.maximum(eff, 1e-3)
    op = "MoE" if fmt == dtype else f"MoE ({fmt} table for {dtype})"
    if table != fmt:
        op += f", {backend.upper()} backend"
    shape = _measured_moe_shape(a, table, hidden, inter, topk, experts, ep)
    if shape is not None:
        # this very shape was measured: its times as they are, joined to the roofline-efficiency model
        # beyond the measured token counts (the model scaled to meet the last measured point)
        tok, ms = shape
        # the table routes its tokens evenly ("balanced": t·k/ep experts per rank, all of them from
        # 4 tokens on for top-2 of 8); real routing draws them, so fewer distinct experts are
        # touched at small t (and the most loaded EP rank more): the roofline ratio of the two moves
        # the measured times the way the weight bytes do
        # (a routing skew multiplies the FLOPs of the table's even load the same way)
        even = np.minimum(local, t * topk / ep) * per_expert
        ms = ms * np.interp(np.log(tok), _LOG_TOKENS,
                            roof / _roofline(flops / skew, even, ref_tf, sil.peaks["mem_bw_gbps"]))
        lt = np.log(tok)
        inside = (_LOG_TOKENS >= lt[0]) & (_LOG_TOKENS <= lt[-1])
        meas = np.exp(np.interp(_LOG_TOKENS, lt, np.log(ms)))
        lo = model * (ms[0] / float(np.interp(lt[0], _LOG_TOKENS, model)))
        hi = model * (ms[-1] / float(np.interp(lt[-1], _LOG_TOKENS, model)))
        model = np.where(inside, meas, np.where(_LOG_TOKENS < lt[0], lo, hi))
        op += " (this shape measured)"
    out = model * _to_target(sil, tgt, cls, flops, nbytes)
    return Curve(t, out, sil.provenance(op))


def _measured_moe_shape(a: Mapping[str, np.ndarray], table: str, hidden: float, inter: float, topk: int,
                        experts: int, ep: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(tokens, ms) the table measured for exactly this MoE shape (hidden, expert width per GPU,
    top-k, experts, EP ranks), at least two token counts; None when the shape was not measured."""
    key = f"moe_{table}_shapes"
    if key not in a:
        return None
    want = np.array([hidden, inter, topk, experts, ep], dtype=float)
    rows = np.flatnonzero(np.all(np.isclose(a[key], want, rtol=1e-3), axis=1))
    if rows.size == 0:
        return None
    ms = a[f"moe_{table}_shape_ms"][rows[0]]
    ok = np.isfinite(ms) & (ms > 0)
    if ok.sum() < 2:
        return None
    return a[f"moe_{table}_shape_tokens"][ok], ms[ok]


def decode_attention_curve(sil: Silicon, tgt: Target, kv_dtype: str) -> Curve:
    """Time of one paged decode-attention call against the KV bytes it reads (all sequences)."""
    return _decode_attention(sil, tgt, "fp8" if kv_dtype == "fp8" else "bf16")


@lru_cache(maxsize=64)
def _decode_attention(sil: Silicon, tgt: Target, kv: str) -> Curve:
    a = sil.arrays()
    key = kv if f"gen_{kv}_bytes" in a else "bf16"
    x, bw = a[f"gen_{key}_bytes"], a[f"gen_{key}_gbps"]
    t = x / (bw * 1e9) * 1e3
    # a memory-bound kernel: the target's bandwidth scales it (no FLOPs term)
    scale = 1.0 if sil.measured else sil.peaks["mem_bw_gbps"] / tgt.gbps
    return Curve(x, t * scale, sil.provenance("decode attention"))


def prefill_attention_curve(sil: Silicon, tgt: Target, dtype: str) -> Curve:
    """Time of one causal prefill-attention call against its FLOPs (QKᵀ and PV)."""
    return _prefill_attention(sil, tgt, "fp8" if dtype == "fp8" else "bf16")


@lru_cache(maxsize=64)
def _prefill_attention(sil: Silicon, tgt: Target, dt: str) -> Curve:
    a = sil.arrays()
    key = dt if f"ctx_{dt}_flops" in a else "bf16"
    x, tf = a[f"ctx_{key}_flops"], a[f"ctx_{key}_tflops"]
    ok = tf > 0
    x, tf = x[ok], tf[ok]
    t = x / (tf * 1e12) * 1e3
    ref = sil.peaks.get(f"{key}_tflops") or sil.peaks["bf16_tflops"]
    scale = 1.0 if sil.measured else ref / tgt.tflops(key)
    return Curve(x, t * scale, sil.provenance("prefill attention"))


#: Bytes per element of the collective tables' ``message_size``. aiconfigurator-core counts a
#: message in elements, not bytes: its models query an all-reduce of ``tokens × hidden``
#: (sdk/models/llama.py ``CustomAllReduce(..., h, tp_size)``), its comm shims "factor an element count"
#: (sdk/perf_database.py), and at one message_size NCCL's half all-reduce takes longer than its int8
#: one (B200, 4 GPUs, 134,217,728: 0.659 against 0.357 ms; H200, 8 GPUs, 268,435,456: 2.04 against
#: 1.36 ms). The derived tables keep the half (NCCL) and bfloat16 (custom all-reduce) rows: 2 bytes.
COLLECTIVE_ELEMENT_BYTES = 2.0


class CollectiveTable(Record):
    """Measured latency (µs) of one collective on the measured system, by message size, for one
    group size (interpolated between measured group sizes in log space)."""

    sizes: np.ndarray
    times_us: np.ndarray
    provenance: str
    reference_gbps: float  # the measured system's per-GPU link bandwidth (its systems yaml)

    def __call__(self, size: np.ndarray | float) -> np.ndarray:
        s = np.maximum(np.asarray(size, dtype=float), 1.0)
        ls, lx = np.log(s), np.log(self.sizes)
        out = np.exp(np.interp(ls, lx, np.log(self.times_us)))
        return np.where(ls > lx[-1], out * np.exp(ls - lx[-1]), out)


def collective_table(sil: Silicon, op: str, group: int) -> CollectiveTable | None:
    """``op`` = ``ar_nccl`` | ``ar_custom`` | ``a2a_nccl`` on ``group`` GPUs of the measured system;
    None without a table (or for a group outside the measured 2…8 GPUs)."""
    return _collective(sil, op, int(group))


@lru_cache(maxsize=256)
def _collective(sil: Silicon, op: str, group: int) -> CollectiveTable | None:
    a = sil.arrays()
    if op not in a or group < 2:
        return None
    groups, sizes, grid = a[f"{op}_groups"], a[f"{op}_sizes"], a[op]
    if group > groups[-1]:
        return None
    lg = np.log(groups)
    i = int(np.clip(np.searchsorted(lg, math.log(group), side="right") - 1, 0, max(len(lg) - 2, 0)))
    j = min(i + 1, len(lg) - 1)
    w = 0.0 if j == i else (math.log(group) - lg[i]) / (lg[j] - lg[i])
    row = np.exp((1 - w) * np.log(grid[i]) + w * np.log(grid[j])) * 1e3
    ok = np.isfinite(row)
    if ok.sum() < 2:
        return None
    sizes = sizes * COLLECTIVE_ELEMENT_BYTES  # the tables count elements; the engine's messages are bytes
    name = {"ar_nccl": "NCCL all-reduce", "ar_custom": "custom all-reduce", "a2a_nccl": "NCCL all-to-all"}[op]
    prov = f"measured: {_short(sil.silicon)} {name} ({group} GPUs)"
    if sil.engine and op == "ar_custom":
        prov += f", {ENGINE_NAMES.get(sil.engine, sil.engine)} {sil.version}"
    return CollectiveTable(sizes[ok], row[ok], prov, float(sil.peaks["intra_node_gbps"]))
