"""Print the concept card's figures next to what the engine computes from the bundled presets.

Run ``python benchmarks/seed_figures.py`` (after ``pip install .``, or from a checkout). Every line
is computed; nothing here is typed in except the card's own claims, quoted for comparison.
"""

from __future__ import annotations

import sys
from pathlib import Path

# this checkout's code, not an installed copy (`pip install .` leaves one in site-packages)
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from studio.core.building.builders import build_cluster
from studio.core.layout import Layout
from studio.core.precision import DType
from studio.core.project import Project
from studio.core.workload import ServingConfig, Workload
from studio.engine import evaluate, sweep
from studio.io.presets import load_catalog

GIB = 2**30


def project(template: str, nodes: int, model: str, layout: Layout, **kw) -> Project:
    cat = load_catalog()
    t = cat.node(template)
    cluster = build_cluster(t, nodes, cat.gpu(t.gpu_type), cat.links)
    return Project(cluster=cluster, model=cat.model(model).architecture, model_ref=model, layout=layout, **kw)


def figures() -> list[tuple[str, str, str]]:
    """(figure, the concept card's claim, what the engine computes) for every row; the README's
    "How close to reality" table is made from these (``benchmarks/readme_figures.py``)."""
    cat = load_catalog()
    rows: list[tuple[str, str, str]] = []

    pp4 = evaluate(project("dgx-h100", 1, "llama-3.1-70b", Layout(tp=2, pp=4, micro_batches=8)))
    rows.append(("bubble, P=4, M=8 (TP2×PP4 on one DGX H100)", "27%", f"{pp4.bubble_fraction:.1%}"))

    m70 = cat.model("llama-3.1-70b").architecture
    rows.append(("Llama-3.1-70B weights in FP16", "~140 GB", f"{m70.num_params * 2 / 1e9:.1f} GB"))

    l8 = cat.model("llama-3.1-8b").architecture
    mha = l8.replace(num_kv_heads=l8.num_attention_heads)
    rows.append((
        "KV bytes/token, card formula vs engine (kv heads = heads)",
        f"{mha.card_kv_bytes_per_token(DType.BF16):,.0f} B",
        f"{mha.kv_bytes_per_token(DType.BF16):,.0f} B",
    ))
    rows.append((
        "KV bytes/token, Llama-3.1-70B (GQA: 8 of 64 heads)",
        f"{m70.card_kv_bytes_per_token(DType.BF16):,.0f} B (card formula)",
        f"{m70.kv_bytes_per_token(DType.BF16):,.0f} B (8× less)",
    ))

    fits16 = evaluate(project("dgx-h100", 2, "llama-3.1-405b", Layout(tp=8, pp=2, micro_batches=2)))
    fits8 = evaluate(project("dgx-h100", 1, "llama-3.1-405b", Layout(tp=8)))
    rows.append((
        "Llama-3.1-405B BF16: TP8×PP2 on 16 H100 / TP8 on 8 H100",
        "fits / does not fit",
        f"{'fits' if fits16.fits else 'no'} ({fits16.peak_memory.total / GIB:.1f} GiB) / "
        f"{'fits' if fits8.fits else 'does not fit'} ({fits8.peak_memory.weights / GIB:.1f} GiB weights)",
    ))

    one = evaluate(project("dgx-h100", 1, "llama-3.1-70b", Layout(tp=8), workload=Workload(batch=1)))
    rows.append(("AllReduce per layer, TP8 NVLink H100, decode message", "~5 µs",
                 f"{one.allreduce_us_per_layer_decode:.1f} µs"))

    w = Workload(isl=2048, osl=256)
    nv = evaluate(project("dgx-h100", 1, "llama-3.1-70b", Layout(tp=8), workload=w))
    # the same DGX H100 box with its NVSwitch taken out: the GPUs talk over the PCIe tree only
    t = cat.node("dgx-h100").replace(fabric="pcie", scale_up_link=None)
    no_nvlink = build_cluster(t, 1, cat.gpu("h100-sxm"), cat.links)
    pc = evaluate(Project(cluster=no_nvlink, model=m70, layout=Layout(tp=8), workload=w))
    rows.append((
        "TP8, Llama-70B, ISL 2048: DGX H100 over PCIe only vs over NVSwitch",
        "TTFT +30-50%, throughput −60-80%",
        f"TTFT {pc.ttft_ms / nv.ttft_ms - 1:+.0%}, throughput {pc.output_tokens_per_s / nv.output_tokens_per_s - 1:+.0%}",
    ))

    s = sweep(project("dgx-h100", 2, "llama-3.1-405b", Layout(tp=8, pp=2)))
    rows.append(("405B on 2× DGX H100: recommended for throughput", "TP=8 × PP=2", s.label(s.recommended)))

    l40 = sweep(project("l40s-8x-pcie", 1, "llama-3.1-70b", Layout(tp=8),
                        serving=ServingConfig(weight_dtype=DType.FP8)))
    rows.append(("70B FP8 on 8× L40S PCIe: recommended (card: TP8 over PCIe is an anti-pattern)",
                 "not TP=8", l40.label(l40.recommended)))

    return rows


def main() -> None:
    rows = figures()
    width = max(len(r[0]) for r in rows)
    print(f"{'figure':<{width}}  {'concept card':<34}  engine")
    for name, card, ours in rows:
        print(f"{name:<{width}}  {card:<34}  {ours}")


if __name__ == "__main__":
    main()
