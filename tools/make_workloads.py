"""Write the trace-derived length distributions of ``presets/workloads/`` from local copies of
public per-request token counts::

    python tools/make_workloads.py PATH/TO/AzurePublicDataset [PATH/TO/vidur]

* chat and code completion: the Azure LLM inference trace 2023 (github.com/Azure/AzurePublicDataset,
  CC-BY; the data behind the Splitwise paper, ISCA 2024), columns ``ContextTokens`` and
  ``GeneratedTokens``;
* long-document summarisation: arXiv papers and their abstracts (the arXiv summarisation dataset of
  Cohan et al., NAACL 2018) as the Vidur simulator ships them (github.com/microsoft/vidur, MIT;
  Agrawal et al., MLSys 2024), columns ``num_prefill_tokens`` and ``num_decode_tokens`` counted with
  the Llama-2 tokenizer, requests of at most 4,096 tokens in all.

Each distribution keeps the source's shape in 24 quantile bins (5 % steps to the 90th percentile,
then 90-95, 95-98, 98-99, 99-99.5 and 99.5-100 %), each bin at the mean length of the requests in
it and weighted by its share of requests, so the histogram's mean is the source's mean and its tail
keeps the longest requests. Input and output lengths are binned separately (the engine draws them
independently). Without the second path only the Azure files are written.
"""

from __future__ import annotations

import csv
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

EDGES = [*range(0, 95, 5), 95, 98, 99, 99.5, 100]


@dataclass(frozen=True)
class Source:
    """One public file of per-request token counts and how to cite it."""

    repo: str  # "azure" or "vidur": which of the command-line paths holds it
    path: str  # inside that repository
    commit: str  # the commit the bundled file was derived from
    input_col: str
    output_col: str
    title: str
    about: str
    cite: str  # repository, license and paper


AZURE_COMMIT = "b469a113cedca53ddc3bdea71a143dc4b7d8700c"
VIDUR_COMMIT = "7d47513363ec447a741ac5e47241580b47724fbf"
SOURCES = {
    "azure-conv-2023": Source(
        "azure", "data/AzureLLMInferenceTrace_conv.csv", AZURE_COMMIT, "ContextTokens", "GeneratedTokens",
        "Chat (Azure conversation trace, 2023)",
        "Production chat requests of an Azure LLM inference service (19,366 requests on 2023-11-16): "
        "ShareGPT-style multi-turn conversation, prompts with history",
        "Azure/AzurePublicDataset {path} @ {commit} (CC-BY; Patel et al., 'Splitwise', ISCA 2024)"),
    "azure-code-2023": Source(
        "azure", "data/AzureLLMInferenceTrace_code.csv", AZURE_COMMIT, "ContextTokens", "GeneratedTokens",
        "Code completion (Azure code trace, 2023)",
        "Production code-completion requests of an Azure LLM inference service (8,819 requests on 2023-11-16): "
        "long prompts (the code around the cursor), short completions",
        "Azure/AzurePublicDataset {path} @ {commit} (CC-BY; Patel et al., 'Splitwise', ISCA 2024)"),
    "arxiv-summarization-4k": Source(
        "vidur", "data/processed_traces/arxiv_summarization_stats_llama2_tokenizer_filtered_v2.csv", VIDUR_COMMIT,
        "num_prefill_tokens", "num_decode_tokens",
        "Long-document summarisation (arXiv papers, up to 4K tokens)",
        "Summarise a scientific paper into its abstract: the arXiv summarisation dataset (Cohan et al., NAACL "
        "2018) as the Vidur simulator ships it, 28,257 requests counted with the Llama-2 "
        "tokenizer and kept to at most 4,096 tokens in all (input + output): long prompts, short outputs",
        "microsoft/vidur {path} @ {commit} (MIT; Agrawal et al., 'Vidur', MLSys 2024; documents and abstracts of "
        "Cohan et al., 'A Discourse-Aware Attention Model for Abstractive Summarization of Long Documents', "
        "NAACL 2018)"),
}


def quantile_histogram(values: np.ndarray) -> list[list[float]]:
    """``[[length, weight], ...]``: one bin per quantile band of ``EDGES``, at its mean length."""
    v = np.sort(values)
    out: list[list[float]] = []
    n = len(v)
    lo_idx = 0
    for q_hi in EDGES[1:]:
        hi_idx = int(round(n * q_hi / 100.0))
        band = v[lo_idx:hi_idx]
        lo_idx = hi_idx
        if band.size:
            out.append([int(round(float(band.mean()))), round(band.size / n, 6)])
    merged: dict[int, float] = {}
    for length, w in out:
        merged[length] = round(merged.get(length, 0.0) + w, 6)
    return [[k, merged[k]] for k in sorted(merged)]


def _stats(name: str, v: np.ndarray) -> str:
    return f"{name} mean {v.mean():.0f}, median {np.median(v):.0f}, p99 {np.percentile(v, 99):.0f}"


def document(wid: str, src: Source, rows: list[dict[str, str]]) -> dict:
    """The preset file of one source's rows."""
    isl = np.array([int(r[src.input_col]) for r in rows])
    osl = np.array([int(r[src.output_col]) for r in rows])
    cite = src.cite.format(path=src.path, commit=src.commit[:10])
    return {
        "id": wid,
        "name": src.title,
        "description": src.about,
        "source": f"{cite}: {len(rows):,} requests; {_stats('input', isl)}; {_stats('output', osl)} tokens",
        "derived": "tools/make_workloads.py: 24 quantile bins per length, each at its mean length, weighted by its "
                   "share of requests",
        "isl": {"kind": "histogram", "histogram": quantile_histogram(isl)},
        "osl": {"kind": "histogram", "histogram": quantile_histogram(osl)},
    }


def main(azure: str, vidur: str | None = None) -> int:
    here = Path(__file__).resolve().parents[1] / "presets" / "workloads"
    roots = {"azure": azure, "vidur": vidur}
    for wid, src in SOURCES.items():
        root = roots[src.repo]
        if root is None:
            continue
        with (Path(root) / src.path).open(newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        doc = document(wid, src, rows)
        text = json.dumps(doc, indent=1)
        text = re.sub(r"\[\s+(\d+),\s+([\d.e-]+)\s+\]", r"[\1, \2]", text)  # one [length, weight] per line
        (here / f"{wid}.json").write_text(text + "\n", encoding="utf-8")
        print(f"{wid}: {doc['source']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else ".", sys.argv[2] if len(sys.argv) > 2 else None))
