"""Run ``layout-studio export --check`` over the recipe families of issue 30 and print a Markdown
table of the verdicts, for docs/export.md.

    python tools/engine_check_families.py --vllm-python PY --sglang-python PY [--trtllm-python PY]

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
    a = p.parse_args(argv)
    pythons = {"vllm": a.vllm_python, "sglang": a.sglang_python, "trtllm": a.trtllm_python}
    print("| family | engine | engine's own validation | exit | what it said |")
    print("|---|---|---|---|---|")
    for family, engine, args in FAMILIES:
        code, lines = run(engine, args, pythons[engine])
        exit_text, said = verdict(code, lines)
        ran = "ran" if any(ln.startswith("checked with the engine itself") for ln in lines) else "not run"
        cmd = shlex.join(["export", "--engine", engine, *args, "--check"])
        print(f"| {family} (`{cmd}`) | {engine} | {ran} | {exit_text} | {said.replace('|', '/')[:400]} |",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
