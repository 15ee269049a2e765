"""KV-cache capacity against the engines' own start-up logs (issue 29): every bundled case of
benchmarks/validation/kv-capacity-cases.json within 5 % of the log, or marked with the reason
it cannot be (docs/calibration.md, 'KV capacity against engine logs')."""

from __future__ import annotations

import pytest

from benchmarks.validation.kv_capacity import (
    TOLERANCE,
    capacity_tokens,
    error,
    load_bounds,
    load_cases,
    predict,
)

CASES = load_cases()
BOUNDS = load_bounds()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case_within_tolerance_of_the_engine_log(case) -> None:
    ours = predict(case)
    if case.unreached:
        assert len(case.unreached) > 40, "an unreached case says exactly why"
        return
    assert abs(error(case, ours)) <= TOLERANCE, (
        f"{case.id}: plan {ours:,.2f} against the log's {case.reported:,.2f} {case.metric} "
        f"({error(case, ours):+.1%}); source {case.record['source']}")


def test_every_case_cites_its_log_and_setup() -> None:
    for c in CASES:
        r = c.record
        assert r["source"] and r["log"] and r["settings"] and r["role"], c.id
        assert r["engine"] in ("vllm", "sglang", "trtllm") and r["version"], c.id
    assert {c.record["engine"] for c in CASES} >= {"vllm", "sglang"}


@pytest.mark.parametrize("bound", BOUNDS, ids=[b.id for b in BOUNDS])
def test_engine_starts_where_the_log_started_and_refuses_where_it_refused(bound) -> None:
    """memory.md M6: vLLM 0.5.4 starts only if its KV cache holds max_model_len tokens."""
    tokens = capacity_tokens(bound.record)
    assert (tokens >= bound.context) == bound.serves, (
        f"{bound.id}: plan holds {tokens:,} tokens at context {bound.context:,}; the log "
        f"{'served' if bound.serves else 'refused'} it ({bound.record['source']})")
