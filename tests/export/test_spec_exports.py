"""Speculative decoding in the exports (vLLM, SGLang, TensorRT-LLM) and their run-time checks, and
the CLI flags that set it."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest
import yaml

from studio.cli import main
from studio.core.layout import Layout
from studio.core.workload import ServingConfig, SpeculativeConfig
from studio.io.export import export_plan
from studio.io.export.checks.check import check_recipe

from .conftest import DATA, LLAMA_70B, plan, project

FIELDS = {e: (DATA / f"{e}-{kind}-fields.txt") for e, kind in
          (("vllm", "engineargs"), ("sglang", "serverargs"), ("trtllm", "llmargs"))}


def _bundle(engine: str, spec: SpeculativeConfig, model=LLAMA_70B, fmt: str = "yaml"):
    proj = project(model, 1, Layout(tp=8), serving=ServingConfig(kv_dtype="fp8", speculative=spec))
    return export_plan(proj, plan(proj), engine=engine, fmt=fmt)


def _errors(recipe) -> list[str]:
    return [f.line() for f in check_recipe(recipe) if f.severity == "error"]


EAGLE3 = SpeculativeConfig(method="eagle3", num_tokens=3, draft_checkpoint="yuhuili/EAGLE3-LLaMA3.1-Instruct-70B")


def test_vllm_speculative_config_json():
    b = _bundle("vllm", EAGLE3)
    cfg = yaml.safe_load(b.files["vllm-serve.yaml"])
    sc = json.loads(cfg["speculative-config"])
    assert sc == {"method": "eagle3", "num_speculative_tokens": 3, "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-70B"}
    assert not _errors(b.recipe)
    flags = _bundle("vllm", EAGLE3, fmt="command").files["vllm-commands.sh"]
    assert "--speculative-config '{\"method\": \"eagle3\"" in flags
    broken = replace(b.recipe, config=b.recipe.config | {"speculative-config": json.dumps({"method": "ngram", "num_speculative_tokens": 3})})
    assert any("needs prompt_lookup_max" in e for e in _errors(broken))
    no_model = replace(b.recipe, config=b.recipe.config | {"speculative-config": json.dumps({"method": "eagle", "num_speculative_tokens": 2})})
    assert any("needs 'model'" in e for e in _errors(no_model))


def test_vllm_ngram_writes_prompt_lookup():
    b = _bundle("vllm", SpeculativeConfig(method="ngram", num_tokens=5, ngram_max=4, ngram_min=2))
    sc = json.loads(b.recipe.config["speculative-config"])
    assert sc == {"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_max": 4, "prompt_lookup_min": 2}
    assert not _errors(b.recipe)


def test_sglang_chain_drafting_flags_and_the_steps_plus_one_rule():
    b = _bundle("sglang", EAGLE3)
    cfg = b.recipe.config
    assert cfg["speculative-algorithm"] == "EAGLE3"
    assert (cfg["speculative-num-steps"], cfg["speculative-eagle-topk"], cfg["speculative-num-draft-tokens"]) == (3, 1, 4)
    assert cfg["speculative-draft-model-path"] == EAGLE3.draft_checkpoint
    assert not _errors(b.recipe)
    bad = replace(b.recipe, config=cfg | {"speculative-num-draft-tokens": 8})
    assert any("must be speculative-num-steps + 1 = 4" in e for e in _errors(bad))
    no_path = replace(b.recipe, config={k: v for k, v in cfg.items() if k != "speculative-draft-model-path"})
    assert any("needs the draft model path" in e for e in _errors(no_path))


def test_trtllm_speculative_config_in_the_llm_api_yaml():
    b = _bundle("trtllm", EAGLE3)
    sc = yaml.safe_load(b.files["trtllm-serve.yaml"])["speculative_config"]
    assert sc == {"decoding_type": "Eagle3", "max_draft_len": 3, "speculative_model": EAGLE3.draft_checkpoint}
    assert not _errors(b.recipe)
    ngram = _bundle("trtllm", SpeculativeConfig(method="ngram", num_tokens=4, ngram_max=3)).recipe.config["speculative_config"]
    assert ngram == {"decoding_type": "NGram", "max_draft_len": 4, "max_matching_ngram_size": 3}
    bad = replace(b.recipe, config=b.recipe.config | {"speculative_config": {"decoding_type": "NGram", "max_draft_len": 4}})
    assert any("max_matching_ngram_size" in e for e in _errors(bad))


def test_mtp_on_a_model_with_mtp_layers():
    ds = LLAMA_70B.replace(mtp_layers=1, id="mtp-model")
    spec = SpeculativeConfig(method="mtp", num_tokens=2)
    assert json.loads(_bundle("vllm", spec, ds).recipe.config["speculative-config"]) == {
        "method": "mtp", "num_speculative_tokens": 2}
    sg = _bundle("sglang", spec, ds).recipe.config
    assert sg["speculative-algorithm"] == "NEXTN" and "speculative-draft-model-path" not in sg
    tr = _bundle("trtllm", spec, ds)
    assert tr.recipe.config["speculative_config"] == {"decoding_type": "MTP", "num_nextn_predict_layers": 2}
    assert any("reuses" in n for n in tr.notes)


def test_missing_draft_weights_are_a_note_and_a_check_error():
    b = _bundle("sglang", SpeculativeConfig(method="eagle", num_tokens=2))
    assert any("--draft-checkpoint" in n for n in b.notes)
    assert any("needs the draft model path" in e for e in _errors(b.recipe))


@pytest.mark.parametrize("engine,keys", [
    ("vllm", ["speculative_config"]),
    ("sglang", ["speculative_algorithm", "speculative_num_steps", "speculative_eagle_topk",
                "speculative_num_draft_tokens", "speculative_draft_model_path"]),
    ("trtllm", ["speculative_config"]),
])
def test_written_keys_are_in_the_engines_field_lists(engine, keys):
    path = FIELDS[engine]
    if not path.exists():
        pytest.skip(f"{path.name} not in tests/data/engines")
    names = set(re.findall(r"^([a-z_]+)\s*:", path.read_text(encoding="utf-8"), re.M))
    for key in keys:
        assert key in names, (engine, key)


# ------------------------------------------------------------------ CLI flags
ARGS = ["--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpus-per-node", "1", "--isl", "128", "--osl", "256",
        "--batch", "1"]


def test_cli_plan_with_spec_flags(capsys):
    assert main(["plan", *ARGS, "--json"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert main(["plan", *ARGS, "--spec", "eagle3", "--spec-tokens", "3", "--spec-acceptance", "0.7", "--json"]) == 0
    fast = json.loads(capsys.readouterr().out)
    assert fast["latency_ms"]["tpot"] < 0.6 * plain["latency_ms"]["tpot"]
    assert "speculative" not in plain
    spec = fast["speculative"]
    assert spec["value"] == pytest.approx((1 - 0.7**4) / 0.3)  # tokens per step at α 0.7, k 3
    terms = {t["name"]: t["value"] for t in spec["terms"]}
    assert terms["iteration under the load"] / spec["value"] == pytest.approx(fast["latency_ms"]["tpot"], rel=1e-6)
    assert main(["plan", *ARGS, "--spec", "eagle3"]) == 0
    assert "speculative  EAGLE-3 head, k=3" in capsys.readouterr().out


@pytest.mark.parametrize("flags,message", [
    (["--spec", "eagle3", "--spec-acceptance", "1.5"], "--spec-acceptance: must be a rate in (0, 1], got 1.5"),
    (["--spec", "eagle3", "--spec-tokens", "0"], "--spec-tokens: must be a whole number 1..16"),
    (["--spec-tokens", "3"], "--spec-tokens needs a speculative method"),
    (["--spec", "mtp"], "'mtp' needs a model with multi-token-prediction layers"),
    (["--draft-model", "mistral-7b", "--spec-acceptance", "0.6"], "a draft model must share the model's tokenizer"),
    (["--spec", "draft"], "--spec draft needs --draft-model"),
    (["--spec", "ngram", "--draft-model", "llama-3.1-8b"], "--draft-model applies to --spec draft"),
])
def test_cli_bad_spec_flags_exit_2_with_one_line(capsys, flags, message):
    assert main(["plan", *ARGS, *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_cli_export_check_passes_with_spec(capsys):
    for engine in ("vllm", "sglang", "trtllm"):
        assert main(["export", *ARGS, "--spec", "eagle3", "--engine", engine, "--check"]) == 0, engine
        assert "passes the engine's run-time rules" in capsys.readouterr().out


def test_cli_simulate_with_spec_agrees_with_the_closed_form(capsys):
    argv = ["simulate", *ARGS[:-2], "--concurrency", "4", "--num-requests", "200", "--spec", "eagle3", "--json"]
    assert main(argv) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["speculative"].startswith("EAGLE-3 head, k=3")
    assert d["latency_ms"]["tpot"]["mean"] == pytest.approx(d["closed_form_ms"]["tpot"], rel=0.05)
    # tokens arrive E at a time: the gap between iterations exceeds the time per token
    assert d["latency_ms"]["itl"]["mean"] > 2 * d["latency_ms"]["tpot"]["mean"]
