"""Read serving-benchmark results: ``vllm bench serve`` / ``benchmark_serving.py`` JSON, ``genai-perf``
``profile_export_genai_perf.json`` summaries and ``trtllm-bench throughput`` reports.

Every reader returns :class:`ServingRun` records (one per benchmark run) with what the file says:
input/output lengths, concurrency, output-token throughput, TTFT, TPOT. What a file does not say
(vLLM results do not record TP/PP; offline runs have no concurrency) is filled by
:meth:`ServingRun.point` from arguments, and a value still missing is a :class:`StudioError` naming
the file, the field and the argument that supplies it.

Formats (detected from the content):

* **vLLM** — one JSON object per run (``--save-result``) or one per line (``--append-result``);
  keys ``output_throughput``, ``mean_ttft_ms``, ``mean_tpot_ms``, ``total_input_tokens``,
  ``total_output_tokens``, ``completed``, ``max_concurrency``, ``request_rate``, ``num_prompts``,
  ``duration``, ``mean_e2el_ms``; per-request ``input_lens`` / ``output_lens`` when saved.
  ``--metadata tp=4 pp=1 gpu=h200-sxm`` keys are read too (``tp``/``tensor_parallel_size``,
  ``pp``/``pipeline_parallel_size``). Keys starting with ``_`` are ignored (used for notes).
* **genai-perf** — ``{"output_token_throughput": {"unit": "tokens/sec", "avg": ...},
  "time_to_first_token": {"unit": "ms", "avg": ...}, ...}``; a time metric without ``unit`` is in
  ns (older versions).
* **trtllm-bench** — the text report: ``Key: value`` lines such as ``Request Throughput (req/sec)``,
  ``Total Output Throughput (tokens/sec)``, ``Average Input Length (tokens)``, ``TP Size``.

Nothing in a file is executed; sizes and nesting are limited.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from studio.core.errors import StudioError
from studio.core.units import whole_mib
from studio.engine.search.calibration import ServingPoint
from studio.io.safe import decode_text, loads_json_limited, read_bytes_limited

MAX_BYTES = 32 * 1024 * 1024
MAX_RUNS = 10_000
MAX_LIST = 1_000_000
#: Largest input or output length, concurrency and TP/PP a run may have (the workload's and the
#: calibrate flags' own limits), checked before a run becomes a measured point.
MAX_TOKENS = 10_000_000
MAX_CONCURRENCY = 1_000_000
MAX_PARALLEL = 65_536


@dataclass(frozen=True)
class ServingRun:
    """One benchmark run as its file describes it. Times in ms, throughputs per second."""

    source: str
    format: str  # "vllm", "genai-perf", "trtllm-bench"
    output_tok_s: float
    isl: float | None = None
    osl: float | None = None
    concurrency: float | None = None
    concurrency_note: str = ""
    num_prompts: int | None = None
    request_per_s: float | None = None
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    itl_ms: float | None = None
    e2el_ms: float | None = None
    tp: int | None = None
    pp: int | None = None
    model_id: str | None = None
    backend: str | None = None
    gpu: str | None = None
    line: int | None = None  # line of a JSON-lines file

    @property
    def where(self) -> str:
        return f"{self.source} line {self.line}" if self.line else self.source

    def point(
        self,
        *,
        isl: int | None = None,
        osl: int | None = None,
        tp: int | None = None,
        pp: int | None = None,
        concurrency: int | None = None,
    ) -> ServingPoint:
        """The measured point the fit uses; arguments fill what the file does not say.

        Raises
        ------
        StudioError
            ISL, OSL or TP unknown from the file and not given (names the value; ``field`` is
            ``isl``, ``osl``, ``tp`` or ``pp``).
        """
        def need(value: float | None, given: int | None, what: str, field: str, most: int) -> int:
            v = value if value is not None else given
            if v is None:
                raise StudioError(f"the file does not say the {what}; give it", self.where, field=field)
            if v > most:
                raise StudioError(f"the {what} is {v:,.4g}; at most {most:,}", self.where)
            return max(1, round(v))

        c = self.concurrency if self.concurrency is not None else concurrency
        if c is not None and c > MAX_CONCURRENCY:
            raise StudioError(f"the concurrency is {c:,.4g}; at most {MAX_CONCURRENCY:,}", self.where)
        return ServingPoint(
            label=self.label(),
            isl=need(self.isl, isl, "input length (total_input_tokens / completed)", "isl", MAX_TOKENS),
            osl=need(self.osl, osl, "output length (total_output_tokens / completed)", "osl", MAX_TOKENS),
            tp=need(self.tp, tp, "tensor-parallel size", "tp", MAX_PARALLEL),
            pp=need(self.pp, pp if pp is not None else 1, "pipeline-parallel size", "pp", MAX_PARALLEL),
            concurrency=None if c is None else max(1, round(c)),
            output_tok_s=self.output_tok_s,
            ttft_ms=self.ttft_ms,
            tpot_ms=self.tpot_ms,
        )

    def label(self) -> str:
        parts = []
        if self.tp:
            parts.append(f"TP{self.tp}" + (f"×PP{self.pp}" if self.pp and self.pp > 1 else ""))
        if self.isl is not None and self.osl is not None:
            parts.append(f"{self.isl:.0f}/{self.osl:.0f}")
        if self.concurrency is not None:
            parts.append(f"c={self.concurrency:.0f}")
        parts.append(f"({Path(self.source).name}" + (f":{self.line})" if self.line else ")"))
        return " ".join(parts)


# ----------------------------------------------------------------------------- helpers
def _number(data: dict[str, Any], key: str, where: str, *, required: bool = False,
            positive: bool = False) -> float | None:
    """A finite number ≥ 0 (> 0 with ``positive``) at ``key``; None if absent or null."""
    if key not in data or data[key] is None:
        if required:
            raise StudioError(f"field '{key}' is missing; is this a serving-benchmark result?", where)
        return None
    v = data[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise StudioError(f"field '{key}' must be a number (got {_show(v)})", where)
    v = _finite(v)
    if not math.isfinite(v) or v < 0 or (positive and v == 0):
        raise StudioError(f"field '{key}' must be a finite number {'> 0' if positive else '≥ 0'} (got {v})", where)
    return v


def _finite(v: int | float) -> float:
    """``v`` as a float; an integer past a float's range (a 400-digit ``max_concurrency``) is
    infinite, which the callers refuse with the field's name."""
    try:
        return float(v)
    except OverflowError:
        return math.inf


def _show(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def _int_meta(data: dict[str, Any], keys: tuple[str, ...], where: str) -> int | None:
    for k in keys:
        if k in data and data[k] is not None:
            v = data[k]
            if isinstance(v, str) and re.fullmatch(r"\s*[0-9]{1,6}\s*", v):
                v = int(v)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v != int(v) or not 1 <= v <= 1_000_000:
                raise StudioError(f"field '{k}' must be a whole number ≥ 1 (got {_show(v)})", where)
            return int(v)
    return None


def _text(data: dict[str, Any], key: str) -> str | None:
    v = data.get(key)
    return v[:200] if isinstance(v, str) and v else None


def _mean_list(data: dict[str, Any], key: str, where: str) -> float | None:
    v = data.get(key)
    if v is None:
        return None
    if not isinstance(v, list):
        raise StudioError(f"field '{key}' must be a list of numbers", where)
    if len(v) > MAX_LIST:
        raise StudioError(f"field '{key}' has more than {MAX_LIST:,} entries", where)
    nums = [x for x in v if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(_finite(x)) and x >= 0]
    if len(nums) != len(v):
        raise StudioError(f"field '{key}' must hold only numbers ≥ 0", where)
    if not nums:
        return None
    mean = math.fsum(_finite(x) for x in nums) / len(nums)
    if not math.isfinite(mean):
        raise StudioError(f"field '{key}' holds numbers too large to average", where)
    return mean


# ----------------------------------------------------------------------------- vLLM
def _vllm_run(data: dict[str, Any], source: str, line: int | None) -> ServingRun:
    where = f"{source} line {line}" if line else source
    out = _number(data, "output_throughput", where, required=True, positive=True)
    assert out is not None  # required=True: a missing value raised above
    completed = _number(data, "completed", where)
    tin, tout = _number(data, "total_input_tokens", where), _number(data, "total_output_tokens", where)
    isl = _mean_list(data, "input_lens", where)
    osl = _mean_list(data, "output_lens", where)
    if completed:
        isl = isl if isl is not None else (tin / completed if tin else None)
        osl = osl if osl is not None else (tout / completed if tout else None)
    conc = _number(data, "max_concurrency", where, positive=True)
    note = "max_concurrency" if conc is not None else ""
    rate = data.get("request_rate")
    prompts = _number(data, "num_prompts", where)
    e2el = _number(data, "mean_e2el_ms", where)
    req_s = _number(data, "request_throughput", where)
    burst = rate in (None, "inf", float("inf")) or (isinstance(rate, str) and rate.strip().lower() == "inf")
    if conc is None and burst and prompts:
        conc, note = prompts, "num_prompts (all requests sent at once)"
    elif conc is None and req_s and e2el:
        conc, note = req_s * e2el / 1e3, "request_throughput × mean_e2el_ms (Little's law)"
    if conc is not None and prompts:
        conc = min(conc, prompts)
    return ServingRun(
        source=source, format="vllm", output_tok_s=out, isl=isl, osl=osl, concurrency=conc,
        concurrency_note=note, num_prompts=int(prompts) if prompts else None, request_per_s=req_s,
        ttft_ms=_number(data, "mean_ttft_ms", where, positive=True),
        tpot_ms=_number(data, "mean_tpot_ms", where, positive=True),
        itl_ms=_number(data, "mean_itl_ms", where), e2el_ms=e2el,
        tp=_int_meta(data, ("tp", "tensor_parallel_size", "tp_size"), where),
        pp=_int_meta(data, ("pp", "pipeline_parallel_size", "pp_size"), where),
        model_id=_text(data, "model_id"), backend=_text(data, "backend"), gpu=_text(data, "gpu"), line=line,
    )


# ----------------------------------------------------------------------------- genai-perf
_TIME_UNITS = {"ns": 1e-6, "us": 1e-3, "µs": 1e-3, "ms": 1.0, "s": 1e3, "sec": 1e3}


def _gp_metric(data: dict[str, Any], key: str, where: str, *, time: bool) -> float | None:
    m = data.get(key)
    if m is None:
        return None
    if not isinstance(m, dict):
        raise StudioError(f"field '{key}' must be an object with 'avg' (and 'unit')", where)
    v = _number(m, "avg", f"{where} field '{key}'")
    if v is None or not time:
        return v
    unit = m.get("unit", "ns")
    if not isinstance(unit, str) or unit.strip().lower() not in _TIME_UNITS:
        raise StudioError(f"field '{key}.unit' is {_show(unit)}; allowed: {', '.join(_TIME_UNITS)}", where)
    return v * _TIME_UNITS[unit.strip().lower()]


def _find_key(data: Any, key: str, depth: int = 4) -> Any:
    """First value of ``key`` in nested dicts (breadth-first, limited depth)."""
    level = [data]
    for _ in range(depth):
        nxt = []
        for d in level:
            if isinstance(d, dict):
                if key in d:
                    return d[key]
                nxt += [v for v in d.values() if isinstance(v, dict)]
        level = nxt
    return None


def _genai_run(data: dict[str, Any], source: str) -> ServingRun:
    out = _gp_metric(data, "output_token_throughput", source, time=False)
    if not out:
        raise StudioError("field 'output_token_throughput.avg' must be a number > 0", source)
    cfg = data.get("input_config")
    conc = _find_key(cfg, "concurrency") if isinstance(cfg, dict) else None
    if conc is not None and (isinstance(conc, bool) or not isinstance(conc, (int, float)) or not 0 < conc <= 1e7):
        raise StudioError(f"field 'input_config…concurrency' must be a number > 0 (got {_show(conc)})", source)
    return ServingRun(
        source=source, format="genai-perf", output_tok_s=out,
        isl=_gp_metric(data, "input_sequence_length", source, time=False),
        osl=_gp_metric(data, "output_sequence_length", source, time=False),
        concurrency=float(conc) if conc is not None else None,
        concurrency_note="input_config concurrency" if conc is not None else "",
        request_per_s=_gp_metric(data, "request_throughput", source, time=False),
        ttft_ms=_gp_metric(data, "time_to_first_token", source, time=True) or None,
        tpot_ms=_gp_metric(data, "inter_token_latency", source, time=True) or None,
        e2el_ms=_gp_metric(data, "request_latency", source, time=True),
        tp=_int_meta(data, ("tp", "tensor_parallel_size"), source),
        pp=_int_meta(data, ("pp", "pipeline_parallel_size"), source),
    )


# ----------------------------------------------------------------------------- trtllm-bench
_TRT_KEYS = {
    "request throughput (req/sec)": "request_per_s",
    "total output throughput (tokens/sec)": "output_tok_s",
    "average input length (tokens)": "isl",
    "average output length (tokens)": "osl",
    "number of concurrent requests": "concurrency",
    "tp size": "tp",
    "pp size": "pp",
    "number of requests": "num_prompts",
    "average request latency (ms)": "e2el_ms",
    "average time-to-first-token [ttft] (ms)": "ttft_ms",
    "average time-per-output-token [tpot] (ms)": "tpot_ms",
}
_TRT_LINE = re.compile(r"^\s*([A-Za-z][^:]{0,80}?)\s*:\s*(\S+)\s*$")


def _trtllm_run(text: str, source: str) -> ServingRun:
    vals: dict[str, float] = {}
    for i, line in enumerate(text.splitlines(), 1):
        m = _TRT_LINE.match(line)
        if not m:
            continue
        key = _TRT_KEYS.get(re.sub(r"\s+", " ", m.group(1).strip().lower()))
        if key is None or key in vals:
            continue
        tok = m.group(2)
        if tok.lower() in ("none", "n/a"):
            continue
        try:
            v = float(tok)
        except ValueError:
            raise StudioError(f"line {i}: '{m.group(1).strip()}' value '{tok[:30]}' is not a number", source) from None
        if not math.isfinite(v) or v < 0:
            raise StudioError(f"line {i}: '{m.group(1).strip()}' must be a finite number ≥ 0 (got {tok[:30]})", source)
        vals[key] = v
    if not vals.get("output_tok_s"):
        raise StudioError("no 'Total Output Throughput (tokens/sec)' line with a value > 0", source)
    for k in ("tp", "pp"):
        if k in vals and (vals[k] != int(vals[k]) or not 1 <= vals[k] <= 1_000_000):
            raise StudioError(f"'{k.upper()} Size' must be a whole number ≥ 1 (got {vals[k]})", source)
    return ServingRun(
        source=source, format="trtllm-bench", output_tok_s=vals["output_tok_s"], isl=vals.get("isl"),
        osl=vals.get("osl"), concurrency=vals.get("concurrency") or None,
        concurrency_note="Number of concurrent requests" if vals.get("concurrency") else "",
        num_prompts=int(vals["num_prompts"]) if "num_prompts" in vals else None,
        request_per_s=vals.get("request_per_s"), ttft_ms=vals.get("ttft_ms") or None,
        tpot_ms=vals.get("tpot_ms") or None, e2el_ms=vals.get("e2el_ms"),
        tp=int(vals["tp"]) if "tp" in vals else None, pp=int(vals["pp"]) if "pp" in vals else None,
    )


# ----------------------------------------------------------------------------- entry points
def _json_run(data: Any, source: str, line: int | None) -> ServingRun:
    where = f"{source} line {line}" if line else source
    if not isinstance(data, dict):
        raise StudioError("a serving-benchmark result must be a JSON object", where)
    if "output_throughput" in data:
        return _vllm_run(data, source, line)
    if "output_token_throughput" in data:
        return _genai_run(data, where)
    raise StudioError(
        "not a known serving-benchmark result: expected 'output_throughput' (vllm bench serve) or "
        "'output_token_throughput' (genai-perf)", where,
    )


def parse_serving_text(text: str, source: str = "<serving>") -> list[ServingRun]:
    """Parse the text of one result file (JSON, JSON lines, or a trtllm-bench report).

    Raises
    ------
    StudioError
        Oversized, malformed, or not a known format; the message names the file (and line) and field.
    """
    if not isinstance(text, str):
        raise StudioError("a serving-benchmark result must be text", source)
    if len(text) > MAX_BYTES:
        raise StudioError(f"file is larger than {whole_mib(MAX_BYTES)}", source)
    body = text.strip()
    if not body:
        raise StudioError("the file is empty", source)
    if body.startswith("{") or body.startswith("["):
        try:
            data = loads_json_limited(body, source, what="serving result")
        except StudioError:
            lines = [ln for ln in body.splitlines() if ln.strip()]
            if len(lines) < 2:
                raise
            return _json_lines(text, source)
        if isinstance(data, list):
            if len(data) > MAX_RUNS:
                raise StudioError(f"more than {MAX_RUNS} results in one file", source)
            if not data:
                raise StudioError("the JSON array holds no results", source)
            return [_json_run(d, source, None) for d in data]
        return [_json_run(data, source, None)]
    return [_trtllm_run(text, source)]


def _json_lines(text: str, source: str) -> list[ServingRun]:
    runs: list[ServingRun] = []
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if len(runs) >= MAX_RUNS:
            raise StudioError(f"more than {MAX_RUNS} results in one file", source)
        data = loads_json_limited(line, f"{source} line {i}", what="serving result")
        runs.append(_json_run(data, source, i))
    return runs


def read_serving_file(path: str | Path) -> list[ServingRun]:
    """Read a result file (size-limited UTF-8) and parse it with :func:`parse_serving_text`."""
    raw = read_bytes_limited(path, MAX_BYTES, "serving-benchmark result")
    return parse_serving_text(decode_text(raw, str(path), "serving-benchmark result"), str(path))


def read_points(files, **defaults: int | None) -> list[ServingPoint]:
    """Every run of ``files`` as a :class:`ServingPoint`; ``defaults`` (``tp``, ``pp``, ``isl``, ``osl``,
    ``concurrency``) fill what a file does not say."""
    points: list[ServingPoint] = []
    for f in files:
        points += [r.point(**defaults) for r in read_serving_file(f)]
    if not points:
        raise StudioError("no serving runs found in the files given")
    return points


def fit_files(project, files, *, params=None, **defaults: int | None):
    """Read ``files`` and fit the engine on ``project`` (see :func:`studio.engine.search.calibration.fit_serving`)."""
    from studio.engine.search.calibration import SERVING_PARAMS, fit_serving

    return fit_serving(project, read_points(files, **defaults), params=tuple(params or SERVING_PARAMS))


def serving_profile(fit, name: str, project, files=()):
    """The :class:`~studio.core.project.CalibrationProfile` of a serving fit."""
    from pydantic import ValidationError

    from studio.core.errors import first_error_message
    from studio.core.project import CalibrationProfile

    gpu = project.cluster.gpu_types()[0]
    try:
        return CalibrationProfile(
            name=name[:120],
            description=f"efficiency factors of {project.model.id} on {gpu} ({project.serving.runtime}) fitted to "
            f"{len(fit.points)} serving runs",
            efficiency=fit.efficiency,
            fit_error=fit.fit_error(),
            source_files=tuple(str(f) for f in files),
        )
    except ValidationError as exc:
        raise StudioError(f"cannot store the profile: {first_error_message(exc, quote_field=True)}") from None
