"""Serving-benchmark readers: vLLM JSON / JSON lines, genai-perf summaries, trtllm-bench reports."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from studio.core.errors import StudioError
from studio.io.importers.serving_bench import parse_serving_text, read_serving_file
from tests.property_budget import examples

from .conftest import DATA

H200_70B = DATA / "serving" / "trtllm-v0.17-h200-fp8-llama-3.1-70b.jsonl"
H200_8B = DATA / "serving" / "trtllm-v0.17-h200-fp8-llama-3.1-8b.jsonl"
TRT_REPORT = DATA / "serving" / "trtllm-bench-qwen2-vl-2b-sample.txt"


def _vllm(**over):
    """A vllm bench serve result built from the 8B 1000/1000 line of the bundled table."""
    line = H200_8B.read_text(encoding="utf-8").splitlines()[4]
    d = json.loads(line)
    d.update(over)
    return d


def test_jsonl_tables_read_every_line_with_derived_lengths():
    runs = read_serving_file(H200_70B)
    assert len(runs) == 36
    assert {r.tp for r in runs} == {1, 2, 4, 8}
    first = runs[0]
    assert (first.isl, first.osl, first.output_tok_s) == (128, 128, 4020.75)
    assert first.concurrency == 30000 and "num_prompts" in first.concurrency_note
    assert first.line == 1 and first.format == "vllm"
    last = runs[-1]
    assert (last.tp, last.isl, last.osl, last.output_tok_s) == (8, 20000, 2000, 1920.45)


def test_single_object_with_latencies_and_per_request_lists():
    d = _vllm(mean_ttft_ms=120.5, mean_tpot_ms=14.25, max_concurrency=64, input_lens=[900, 1100],
              output_lens=[1000, 1000])
    (run,) = parse_serving_text(json.dumps(d), "r.json")
    assert run.ttft_ms == 120.5 and run.tpot_ms == 14.25
    assert run.concurrency == 64 and run.isl == 1000 and run.osl == 1000
    p = run.point()
    assert (p.isl, p.osl, p.tp, p.pp, p.concurrency) == (1000, 1000, 1, 1, 64)


def test_concurrency_from_littles_law_when_rate_limited():
    d = _vllm(request_rate=4.0, max_concurrency=None, request_throughput=3.5, mean_e2el_ms=20_000.0)
    (run,) = parse_serving_text(json.dumps(d), "r.json")
    assert run.concurrency == pytest.approx(70.0)
    assert "Little" in run.concurrency_note


def test_missing_tp_is_asked_for_and_flag_fills_it():
    d = _vllm()
    del d["tp"]
    (run,) = parse_serving_text(json.dumps(d), "bench.json")
    with pytest.raises(StudioError, match=r"bench.json.*tensor-parallel") as err:
        run.point()
    assert err.value.field == "tp"  # the CLI names it --tp (studio.commands.options.flags)
    assert run.point(tp=2).tp == 2
    assert run.point(tp=2).pp == 1


def test_file_value_wins_over_flag():
    (run,) = parse_serving_text(json.dumps(_vllm()), "r.json")
    assert run.point(tp=8, isl=5).tp == 1 and run.point(isl=5).isl == 1000


def test_genai_perf_units():
    d = {
        "output_token_throughput": {"unit": "tokens/sec", "avg": 812.0},
        "time_to_first_token": {"avg": 45_000_000.0},  # no unit: ns (older genai-perf)
        "inter_token_latency": {"unit": "ms", "avg": 12.0},
        "request_throughput": {"unit": "requests/sec", "avg": 3.2},
        "input_sequence_length": {"unit": "tokens", "avg": 200.0},
        "output_sequence_length": {"unit": "tokens", "avg": 256.0},
        "input_config": {"perf_analyzer": {"stimulus": {"concurrency": 16}}},
    }
    (run,) = parse_serving_text(json.dumps(d), "profile_export_genai_perf.json")
    assert run.format == "genai-perf"
    assert run.ttft_ms == pytest.approx(45.0) and run.tpot_ms == 12.0
    assert run.concurrency == 16 and (run.isl, run.osl) == (200.0, 256.0)
    d["time_to_first_token"]["unit"] = "furlongs"
    with pytest.raises(StudioError, match=r"time_to_first_token.unit.*allowed: ns"):
        parse_serving_text(json.dumps(d), "g.json")


def test_trtllm_bench_report():
    (run,) = read_serving_file(TRT_REPORT)
    assert run.format == "trtllm-bench"
    assert run.output_tok_s == 185.8351 and run.request_per_s == 1.4439
    assert run.isl == pytest.approx(411.6) and run.osl == pytest.approx(128.7)
    assert run.concurrency == pytest.approx(5.3019)
    assert (run.tp, run.pp, run.num_prompts) == (1, 1, 10)
    p = run.point()
    assert (p.isl, p.osl, p.concurrency) == (412, 129, 5)


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ("", "empty"),
        ("{}", "output_throughput.*output_token_throughput"),
        ('{"output_throughput": "fast"}', "field 'output_throughput' must be a number"),
        ('{"output_throughput": 10, "tp": 0}', "field 'tp' must be a whole number"),
        ('{"output_throughput": 10, "input_lens": [1, "x"]}', "input_lens"),
        ('{"output_throughput": -1}', "finite number > 0"),
        ("[]", "no results"),
        ('{"output_throughput": 10}\n{"output_throughput": oops}', "line 2"),
        ("Total Output Throughput (tokens/sec): lots", "line 1.*not a number"),
        ("hello world", "Total Output Throughput"),
        ("[" * 5000, "nest|deep|JSON"),
    ],
)
def test_malformed_input_names_file_and_field(text, pattern):
    with pytest.raises(StudioError, match=pattern) as err:
        parse_serving_text(text, "bad.json")
    assert "bad.json" in str(err.value)


def test_size_limit(tmp_path):
    from studio.io.importers import serving_bench

    p = tmp_path / "big.json"
    p.write_bytes(b" " * (serving_bench.MAX_BYTES + 1))
    with pytest.raises(StudioError, match="at most"):
        read_serving_file(p)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(
        st.sampled_from(["output_throughput", "completed", "total_input_tokens", "max_concurrency", "tp",
                         "input_lens", "output_token_throughput", "avg", "unit", "time_to_first_token",
                         "input_config", "concurrency", "request_rate", "num_prompts", "x"]),
        kids, max_size=6),
    max_leaves=20,
)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_values)
def test_arbitrary_json_only_raises_studio_error(value):
    try:
        runs = parse_serving_text(json.dumps(value), "fuzz.json")
    except StudioError:
        return
    for r in runs:
        try:
            r.point(tp=1, isl=1, osl=1)
        except StudioError:
            pass


@settings(max_examples=examples(300), deadline=None)
@given(st.text(max_size=300))
def test_arbitrary_text_only_raises_studio_error(text):
    try:
        parse_serving_text(text, "fuzz.txt")
    except StudioError:
        pass
