"""Write the trace-derived length distributions of ``presets/workloads/`` from a copy of the public
Azure LLM inference trace 2023 (github.com/Azure/AzurePublicDataset, CC-BY; the data behind the
Splitwise paper, ISCA 2024)::

    python tools/make_workloads.py PATH/TO/AzurePublicDataset

Each distribution keeps the trace's shape in 24 quantile bins (5 % steps to the 90th percentile,
then 90-95, 95-98, 98-99, 99-99.5 and 99.5-100 %), each bin at the mean length of the requests in
it and weighted by its share of requests, so the histogram's mean is the trace's mean and its tail
keeps the longest requests. Input and output lengths are binned separately (the engine draws them
independently).
"""

from __future__ import annotations

import csv
import json
import re
import sys
from pathlib import Path

import numpy as np

#: The commit of AzurePublicDataset the bundled files were derived from.
COMMIT = "b469a113cedca53ddc3bdea71a143dc4b7d8700c"
EDGES = [*range(0, 95, 5), 95, 98, 99, 99.5, 100]
TRACES = {
    "azure-conv-2023": ("AzureLLMInferenceTrace_conv.csv", "Chat (Azure conversation trace, 2023)",
                        "Production chat requests of an Azure LLM inference service (19,366 requests on "
                        "2023-11-16): ShareGPT-style multi-turn conversation, prompts with history"),
    "azure-code-2023": ("AzureLLMInferenceTrace_code.csv", "Code completion (Azure code trace, 2023)",
                        "Production code-completion requests of an Azure LLM inference service (8,819 "
                        "requests on 2023-11-16): long prompts (the code around the cursor), short completions"),
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


def main(root: str) -> int:
    here = Path(__file__).resolve().parents[1] / "presets" / "workloads"
    for wid, (name, title, about) in TRACES.items():
        path = Path(root) / "data" / name
        with path.open(newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        isl = np.array([int(r["ContextTokens"]) for r in rows])
        osl = np.array([int(r["GeneratedTokens"]) for r in rows])
        doc = {
            "id": wid,
            "name": title,
            "description": about,
            "source": (f"Azure/AzurePublicDataset data/{name} @ {COMMIT[:10]} (CC-BY; Patel et al., 'Splitwise', "
                       f"ISCA 2024): {len(rows):,} requests; input mean {isl.mean():.0f}, median "
                       f"{np.median(isl):.0f}, p99 {np.percentile(isl, 99):.0f}; output mean {osl.mean():.0f}, "
                       f"median {np.median(osl):.0f}, p99 {np.percentile(osl, 99):.0f} tokens"),
            "derived": "tools/make_workloads.py: 24 quantile bins per length, each at its mean length, weighted by its "
                       "share of requests",
            "isl": {"kind": "histogram", "histogram": quantile_histogram(isl)},
            "osl": {"kind": "histogram", "histogram": quantile_histogram(osl)},
        }
        text = json.dumps(doc, indent=1)
        text = re.sub(r"\[\s+(\d+),\s+([\d.e-]+)\s+\]", r"[\1, \2]", text)  # one [length, weight] per line
        (here / f"{wid}.json").write_text(text + "\n", encoding="utf-8")
        print(f"{wid}: input mean {isl.mean():.1f}, output mean {osl.mean():.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
