"""``layout-studio plan``: the JSON contract (golden key list), figures that hang together, and
the readable table."""

from __future__ import annotations

import math

import pytest

from .conftest import dot_paths, golden_lines

H100_2N = ("--gpu", "h100-sxm", "--nodes", "2", "--model", "llama-3.1-405b", "--weight-dtype", "bf16")


@pytest.fixture(scope="module")
def plan_json():
    import json
    from contextlib import redirect_stdout
    from io import StringIO

    from studio.cli import main

    buf = StringIO()
    with redirect_stdout(buf):
        code = main(["plan", *H100_2N, "--tp", "8", "--pp", "2", "--isl", "2048", "--osl", "512", "--json"])
    assert code == 0
    return json.loads(buf.getvalue())


def test_plan_json_has_every_contract_key(plan_json):
    missing = set(golden_lines("plan_json_keys.txt")) - dot_paths(plan_json)
    assert not missing, f"plan --json lacks {sorted(missing)}"


def test_warning_entries_have_contract_keys(cli):
    r = cli("plan", *H100_2N, "--tp", "16", "--pp", "1", "--json")  # TP across InfiniBand warns
    assert r.code == 0, r.err
    data = r.json()
    assert data["warnings"], "TP=16 over two nodes must raise a warning"
    for w in data["warnings"]:
        assert set(golden_lines("warning_keys.txt")) <= set(w)
        assert w["severity"] in ("error", "warning", "info")
    assert "TP_CROSSES_NODE" in {w["code"] for w in data["warnings"]}


def test_plan_json_figures_hang_together(plan_json):
    lay = plan_json["layout"]
    assert (lay["tp"], lay["pp"], lay["dp"], lay["gpus"]) == (8, 2, 1, 16)
    assert sum(lay["layers_per_stage"]) == 126  # Llama-3.1-405B has 126 layers
    mem = plan_json["memory"]["per_gpu_gib"]
    parts = mem["weights"] + mem["kv_cache"] + mem["activations"] + mem["overhead"]
    assert math.isclose(mem["total"], parts, rel_tol=1e-9)
    assert 0 < mem["weights"] < mem["capacity"]
    # 405B in BF16 over 16 GPUs: ~47 GiB of weights each (810 GB / 16, embeddings on the ends)
    assert 40 < mem["weights"] < 55
    assert plan_json["fits"] is True
    assert 0 <= plan_json["pipeline"]["bubble_fraction"] < 1
    lat = plan_json["latency_ms"]
    assert 0 < lat["ttft"] < lat["request"]
    tp = plan_json["throughput"]
    assert math.isclose(tp["output_tokens_per_s_per_gpu"] * 16, tp["output_tokens_per_s"], rel_tol=1e-6)
    assert plan_json["cost"]["usd_per_million_output_tokens"] > 0


def test_eight_gpus_do_not_fit_405b_bf16(cli):
    r = cli("plan", "--gpu", "h100-sxm", "--nodes", "1", "--model", "llama-3.1-405b",
            "--weight-dtype", "bf16", "--tp", "8", "--pp", "1", "--json")
    assert r.code == 0, r.err
    data = r.json()
    assert data["fits"] is False
    assert "DOES_NOT_FIT" in {w["code"] for w in data["warnings"]}


def test_flags_change_the_plan(cli):
    a = cli("plan", *H100_2N, "--tp", "8", "--pp", "2", "--batch", "8", "--json").json()
    b = cli("plan", *H100_2N, "--tp", "8", "--pp", "2", "--batch", "8", "--kv-dtype", "fp8", "--json").json()
    assert a["batch"] == b["batch"] == 8
    assert b["kv_cache"]["bytes_per_token_per_gpu"] == pytest.approx(a["kv_cache"]["bytes_per_token_per_gpu"] / 2)


def test_plan_table_is_readable(cli):
    r = cli("plan", *H100_2N, "--tp", "8", "--pp", "2")
    assert r.code == 0, r.err
    for heading in ("Plan", "Memory per GPU", "KV cache", "Communication", "Pipeline", "Latency",
                    "Throughput", "Cost", "Warnings"):
        assert f"\n{heading}" in "\n" + r.out
    assert "TP8×PP2" in r.out
    assert "GiB" in r.out and "TTFT" in r.out and "bottleneck" in r.out
    assert "Traceback" not in r.err


def test_explain_prints_every_explanation(cli):
    from studio.cli import build_parser
    from studio.commands.options.project_args import project_from_args
    from studio.engine import evaluate

    argv = ["plan", *H100_2N, "--tp", "8", "--pp", "2"]
    plan = evaluate(project_from_args(build_parser().parse_args(argv)))
    r = cli(*argv, "--explain")
    assert r.code == 0
    assert plan.explanations
    for e in plan.explanations.values():
        assert f"{e.figure} = " in r.out
    data = cli(*argv, "--explain", "--json").json()
    assert set(data["explanations"]) == set(plan.explanations)


def test_impossible_layout_exits_2(cli):
    r = cli("plan", *H100_2N, "--tp", "8", "--pp", "3")
    assert r.code == 2
    assert "does not divide" in r.err and "16 GPUs" in r.err
    assert r.out == ""


def test_unknown_model_exits_2_with_nearest_ids(cli):
    r = cli("plan", "--model", "llama-3.1-406b", "--json")
    assert r.code == 2
    assert "unknown model 'llama-3.1-406b'" in r.err and "llama-3.1-405b" in r.err
    assert "Traceback" not in r.err and r.out == ""
