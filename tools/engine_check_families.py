"""Run ``layout-studio export --check`` over the recipe families of issue 30 and print a Markdown
table of the verdicts, for docs/export.md.

    python tools/engine_check_families.py --vllm-python PY --sglang-python PY [--trtllm-python PY] [--only ENGINE]

Each ``--ENGINE-python`` names the interpreter of an environment where that engine is installed
(its own argument parser and config validators then run, see docs/export.md); an engine without
one is checked against the rules only and the table says so. Each row runs one command line (shown
in the table) in a fresh process; rows run one at a time.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys

#: (family, engine, export arguments without --engine/--check).
FAMILIES: list[tuple[str, str, list[str]]] = [
    ("single node, TP8 (Llama-3.1-70B, DGX H100)", "vllm", ["--model", "llama-3.1-70b", "--node-template", "dgx-h100"]),
    ("single node, TP8", "sglang", ["--model", "llama-3.1-70b", "--node-template", "dgx-h100"]),
    ("single node, TP8", "trtllm", ["--model", "llama-3.1-70b", "--node-template", "dgx-h100"]),
    ("multi-node TP8×PP2 (Llama-3.1-405B, 2 nodes; bundled example)", "vllm", []),
    ("multi-node TP8×PP2", "sglang", []),
    ("multi-node TP8×PP2", "trtllm", []),
    ("MoE TP8 EP8 + EPLB 32 + DBO + all2all deepep_low_latency (DeepSeek-V3, 2 nodes)", "vllm",
     ["--model", "deepseek-v3", "--node-template", "hgx-h200", "--nodes", "2", "--tp", "8", "--dp", "2",
      "--ep", "16", "--eplb", "32", "--dbo", "--all2all-backend", "deepep_low_latency"]),
    ("MoE TP8 EP16 + EPLB + DBO + moe-a2a deepep", "sglang",
     ["--model", "deepseek-v3", "--node-template", "hgx-h200", "--nodes", "2", "--tp", "8", "--dp", "2",
      "--ep", "16", "--eplb", "32", "--dbo", "--all2all-backend", "deepep"]),
    ("DP4 × TP2, hybrid load balancing, 4 API servers, 64 GiB KV offload (Llama-3.1-8B)", "vllm",
     ["--model", "llama-3.1-8b", "--node-template", "dgx-h100", "--tp", "2", "--dp", "4", "--load-balance",
      "hybrid", "--api-server-count", "4", "--kv-offload-gib", "64"]),
    ("external load balancing, one process per DP rank (Mixtral-8x7B TP4 DP2 EP8)", "vllm",
     ["--model", "mixtral-8x7b", "--gpu", "h100-sxm", "--tp", "4", "--dp", "2", "--ep", "8", "--load-balance",
      "external"]),
    ("hybrid load balancing, an API server per node (DeepSeek-V3 TP8 DP2 EP16, 2 nodes)", "vllm",
     ["--model", "deepseek-v3", "--node-template", "hgx-h200", "--nodes", "2", "--tp", "8", "--dp", "2",
      "--ep", "16", "--load-balance", "hybrid"]),
    ("prefill CP 2 (family 4; Llama-3.1-70B TP4, GQA 8 KV heads)", "vllm",
     ["--model", "llama-3.1-70b", "--node-template", "dgx-h100", "--tp", "4", "--cp", "2", "--cp-mode", "prefill"]),
    ("decode CP 2 (DeepSeek-V3 MLA, TP8, 2 nodes)", "vllm",
     ["--model", "deepseek-v3", "--node-template", "hgx-h200", "--nodes", "2", "--tp", "8", "--cp", "2",
      "--cp-mode", "decode"]),
    ("decode CP 2 (DeepSeek-V3 MLA)", "sglang",
     ["--model", "deepseek-v3", "--node-template", "hgx-h200", "--nodes", "2", "--tp", "8", "--cp", "2",
      "--cp-mode", "decode"]),
    ("disaggregated 1P TP2 + 1D TP2, NIXL (Llama-3.1-8B)", "vllm",
     ["--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--disagg", "1P:tp2,1D:tp2"]),
    ("disaggregated, Mooncake (family 1)", "vllm",
     ["--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--disagg", "1P:tp2,1D:tp2", "--kv-transfer-backend",
      "mooncake"]),
    ("disaggregated, Mooncake, ib-device mlx5_0", "sglang",
     ["--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--disagg", "1P:tp2,1D:tp2", "--kv-transfer-backend",
      "mooncake", "--ib-device", "mlx5_0"]),
    ("disaggregated, NIXL", "trtllm",
     ["--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--disagg", "1P:tp2,1D:tp2"]),
    ("EAGLE-3 (family 2; Llama-3.1-8B)", "trtllm",
     ["--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--spec", "eagle3"]),
    ("EAGLE-3", "vllm", ["--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--spec", "eagle3"]),
    ("EAGLE-3", "sglang", ["--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--spec", "eagle3"]),
    ("decode CP / Helix (family 3)", "trtllm",
     ["--model", "deepseek-v3", "--node-template", "hgx-h200", "--nodes", "2", "--tp", "8", "--cp", "2",
      "--cp-mode", "decode"]),
    ("prefill CP / RING (families 5, 6)", "trtllm",
     ["--model", "deepseek-v3", "--node-template", "hgx-h200", "--nodes", "2", "--tp", "8", "--cp", "2",
      "--cp-mode", "prefill"]),
    # TensorRT-LLM families checked against its llm_args source (docs/export.md, "TensorRT-LLM from source")
    ("MoE TP8 EP8 (DeepSeek-V3, HGX H200)", "trtllm",
     ["--model", "deepseek-v3", "--node-template", "hgx-h200", "--tp", "8", "--ep", "8"]),
    ("MoE attention DP: TP8 DP2 EP16 + load balancer (32 redundant: 288 slots) + attention_dp_config balance "
     "(DeepSeek-V3, 2 nodes)",
     "trtllm", ["--model", "deepseek-v3", "--node-template", "hgx-h200", "--nodes", "2", "--tp", "8", "--dp", "2",
                "--ep", "16", "--eplb", "32", "--attention-dp-balance"]),
    ("MoE load balancer, 7 redundant experts over EP16: 263 slots (DeepSeek-V3, 2 nodes)", "trtllm",
     ["--model", "deepseek-v3", "--node-template", "hgx-h200", "--nodes", "2", "--tp", "8", "--dp", "2",
      "--ep", "16", "--eplb", "7"]),
    ("MoE backend CUTLASS, attention DP EP16 (DeepSeek-V3, 2 nodes)", "trtllm",
     ["--model", "deepseek-v3", "--node-template", "hgx-h200", "--nodes", "2", "--tp", "8", "--dp", "2", "--ep", "16",
      "--all2all-backend", "CUTLASS"]),
    ("MoE backend WIDEEP (DeepSeek-V3, 2 nodes)", "trtllm",
     ["--model", "deepseek-v3", "--node-template", "hgx-h200", "--nodes", "2", "--tp", "8", "--dp", "2", "--ep", "16",
      "--all2all-backend", "WIDEEP"]),
    ("MoE TP8×PP2 EP8 (Qwen3-235B-A22B, 2 nodes)", "trtllm",
     ["--model", "qwen3-235b-a22b", "--node-template", "dgx-h100", "--nodes", "2", "--tp", "8", "--pp", "2",
      "--ep", "8"]),
    ("MoE TP4 EP4 (gpt-oss-120b)", "trtllm", ["--model", "gpt-oss-120b", "--gpu", "h100-sxm", "--tp", "4", "--ep", "4"]),
    ("uneven PP TP2×PP4, layers 21,21,19,19 (Llama-3.1-70B)", "trtllm",
     ["--model", "llama-3.1-70b", "--node-template", "dgx-h100", "--tp", "2", "--pp", "4", "--layers-per-stage",
      "21,21,19,19"]),
    ("FP8 weights + FP8 KV cache (Llama-3.1-70B)", "trtllm",
     ["--model", "llama-3.1-70b", "--node-template", "dgx-h100", "--kv-dtype", "fp8", "--weight-dtype", "fp8"]),
    ("KV reuse + 256 GiB host KV cache, 4-turn chat (Llama-3.1-70B)", "trtllm",
     ["--model", "llama-3.1-70b", "--node-template", "dgx-h100", "--isl", "8192", "--prefix-cache", "on",
      "--kv-host-gib", "256", "--system-prompt-tokens", "2000", "--turns", "4", "--history-tokens", "500"]),
    ("disaggregated 1P TP2 + 1D TP2, UCX (Llama-3.1-8B)", "trtllm",
     ["--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--disagg", "1P:tp2,1D:tp2", "--kv-transfer-backend", "ucx"]),
    ("disaggregated 2P TP2 + 1D TP4, Mooncake (Llama-3.1-8B)", "trtllm",
     ["--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--disagg", "2P:tp2,1D:tp4", "--kv-transfer-backend",
      "mooncake"]),
    ("disaggregated MoE 1P TP8 EP8 + 1D TP8 EP8 (DeepSeek-V3, 2 nodes)", "trtllm",
     ["--model", "deepseek-v3", "--node-template", "hgx-h200", "--nodes", "2", "--disagg", "1P:tp8ep8,1D:tp8ep8"]),
    ("disaggregated 1P TP4×PP2 + 1D TP8 (Llama-3.1-70B, 2 nodes)", "trtllm",
     ["--model", "llama-3.1-70b", "--node-template", "dgx-h100", "--nodes", "2", "--disagg", "1P:tp4pp2,1D:tp8"]),
    ("MTP 1 token (DeepSeek-V3)", "trtllm",
     ["--model", "deepseek-v3", "--node-template", "hgx-h200", "--tp", "8", "--spec", "mtp", "--spec-tokens", "1"]),
    ("NGram (Llama-3.1-8B)", "trtllm", ["--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--spec", "ngram"]),
    ("draft model Llama-3.1-8B for Llama-3.1-70B", "trtllm",
     ["--model", "llama-3.1-70b", "--node-template", "dgx-h100", "--spec", "draft", "--draft-model", "llama-3.1-8b",
      "--spec-acceptance", "0.7"]),
    ("EAGLE-1 (family 2)", "trtllm", ["--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--spec", "eagle"]),
]


def run(engine: str, args: list[str], python: str | None) -> tuple[int, list[str]]:
    """Exit code and output lines of one ``export --check``."""
    cmd = [sys.executable, "-m", "studio.cli", "export", "--engine", engine, *args, "--check"]
    if python:
        cmd += ["--engine-python", python]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    return proc.returncode, (proc.stdout + proc.stderr).splitlines()


def verdict(code: int, lines: list[str]) -> tuple[str, str]:
    """(rules + engine verdict, the engine's line or first refusal)."""
    engine = next((ln for ln in lines if ln.startswith(("checked with the engine itself",
                                                        "the engine's own validation was not run"))), "")
    refusal = next((ln for ln in lines if ln.startswith("error:") or "error:" in ln[:30]), "")
    said = refusal or engine or (lines[-1] if lines else "")
    return ("exit 0" if code == 0 else f"exit {code}"), said


def main(argv: list[str] | None = None) -> int:
    """Print the table."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for engine in ("vllm", "sglang", "trtllm"):
        p.add_argument(f"--{engine}-python", metavar="PY", help=f"interpreter that has {engine} installed")
    p.add_argument("--only", choices=("vllm", "sglang", "trtllm"), action="append",
                   help="run only this engine's rows (repeatable)")
    a = p.parse_args(argv)
    pythons = {"vllm": a.vllm_python, "sglang": a.sglang_python, "trtllm": a.trtllm_python}
    print("| family | engine | engine's own validation | exit | what it said |")
    print("|---|---|---|---|---|")
    for family, engine, args in FAMILIES:
        if a.only and engine not in a.only:
            continue
        code, lines = run(engine, args, pythons[engine])
        exit_text, said = verdict(code, lines)
        ran = "ran" if any(ln.startswith("checked with the engine itself") for ln in lines) else "not run"
        cmd = shlex.join(["export", "--engine", engine, *args, "--check"])
        print(f"| {family} (`{cmd}`) | {engine} | {ran} | {exit_text} | {said.replace('|', '/')[:400]} |",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
