"""Derive the engine's measured kernel tables from NVIDIA's ``aiconfigurator-core`` package.

``aiconfigurator-core`` (PyPI, Apache-2.0, NVIDIA) ships kernel timings measured on real GPUs as
parquet tables (``systems/data/<gpu>/<op>/<engine>/<version>/*.parquet``). This script reads them
once, at build time, and writes small numpy tables the installed application loads lazily
(``studio/engine/step/kernels.py``), so the app itself never imports pandas, pyarrow or
aiconfigurator:

* ``gemm_<dtype>``: latency (ms) on the measured (m, n, k) grid, float32;
* ``gen_<kv dtype>``: paged decode attention, achieved KV read bandwidth (GB/s) against the KV bytes
  one call reads (median of the measured shapes in each log2 bin);
* ``ctx_<dtype>``: causal prefill attention, achieved TFLOP/s against the FLOPs of one call;
* ``moe_<dtype>``: the fused MoE op (routing, permute, two grouped GEMMs, finalize), its fraction of
  the roofline (touched expert weights at the memory bandwidth, or the FLOPs at the tensor-core
  peak, whichever binds) against the tokens per expert, balanced routing; where a table times several
  fused-MoE backends for one format (TensorRT-LLM on B200/GB200 NVFP4), ``moe_<dtype>`` keeps the
  fastest and ``moe_<dtype>_cutlass`` the CUTLASS backend's rows alone (TensorRT-LLM 1.0's default);
* ``ar_nccl`` / ``ar_custom`` / ``a2a_nccl``: all-reduce and all-to-all latency (ms) by group size
  (2, 4, 8) and message size, as the package counts it: in elements (half / bfloat16 rows, 2 bytes
  each; ``studio.engine.step.kernels.COLLECTIVE_ELEMENT_BYTES`` converts to bytes on load).

Every table of ``presets/kernels/manifest.json`` names the package, its version and the source file.

Usage (needs the ``kernels`` dev extra: ``pip install ".[kernels]"``)::

    python tools/derive_kernel_tables.py            # writes presets/kernels/
    python tools/derive_kernel_tables.py --check    # only prints what it would write
"""

from __future__ import annotations

import argparse
import json
import sys
from importlib import metadata
from pathlib import Path

import numpy as np

PACKAGE = "aiconfigurator-core"
OUT = Path(__file__).resolve().parents[1] / "presets" / "kernels"
#: Our GPU preset ids (presets/gpus.json) -> the silicon of aiconfigurator's tables. ``measured``
#: False: the package has no tables for this exact part; the engine scales the named silicon's
#: efficiency by the part's own peaks (a roofline with the nearest measured silicon's efficiency).
GPU_MAP: dict[str, tuple[str, bool, str]] = {
    "a100-sxm-80g": ("a100_sxm", True, "NVIDIA A100 SXM (systems/a100_sxm.yaml)"),
    "a100-pcie-80g": ("a100_sxm", False, "A100 PCIe has no kernel tables in the package; same GA100 silicon as A100 SXM"),
    "h100-sxm": ("h100_sxm", True, "NVIDIA H100 SXM (systems/h100_sxm.yaml)"),
    "h100-pcie": ("h100_sxm", False, "H100 PCIe has no kernel tables in the package; same GH100 silicon as H100 SXM"),
    "h200-sxm": ("h200_sxm", True, "NVIDIA H200 SXM (systems/h200_sxm.yaml)"),
    "b200": ("b200_sxm", True, "NVIDIA B200 SXM (systems/b200_sxm.yaml)"),
    "gb200": ("gb200", True, "NVIDIA GB200 (systems/gb200.yaml)"),
    "l40s": ("l40s", True, "NVIDIA L40S (systems/l40s.yaml)"),
    "l4": ("l40s", False, "L4 has no kernel tables in the package; nearest measured silicon: L40S (Ada AD10x)"),
    "rtx-pro-6000": ("rtx_pro_6000_server", True, "NVIDIA RTX PRO 6000 Blackwell Server (systems/rtx_pro_6000_server.yaml)"),
    "mi300x": ("h200_sxm", False, "no AMD tables in the package; nearest measured silicon by memory bandwidth and peak: H200"),
}
#: Engine directory names -> the version whose GEMM table we ship (the package's newest per engine).
ENGINES = ("trtllm", "vllm", "sglang")
GEMM_DTYPES = {"bfloat16": "bf16", "fp8": "fp8", "fp8_block": "fp8_block", "nvfp4": "fp4"}
MOE_DTYPES = {"bfloat16": ("bf16", 2.0), "fp8": ("fp8", 1.0), "fp8_block": ("fp8_block", 1.0),
              "nvfp4": ("fp4", 0.5625), "w4a8_mxfp4_mxfp8": ("fp4", 0.53125),
              "w4a16_mxfp4": ("w4a16", 0.53125)}
MOE_PEAK = {"bf16": "bf16", "fp8": "fp8", "fp8_block": "fp8", "fp4": "fp4", "w4a16": "bf16"}


def _vkey(v: str) -> tuple:
    import re

    parts = re.findall(r"\d+|[a-z]+", v)
    return tuple((0, int(p)) if p.isdigit() else (-1, p) for p in parts)


def _versions(base: Path, op: str, engine: str) -> list[str]:
    d = base / op / engine
    return sorted((p.name for p in d.iterdir() if p.is_dir()), key=_vkey) if d.is_dir() else []


def _pick(base: Path, op: str, engine: str, version: str, name: str) -> tuple[Path, str] | None:
    """The table ``name`` of ``op`` for ``engine``: the shipped version if measured there, else the
    newest version that has it."""
    for v in [version, *reversed(_versions(base, op, engine))]:
        f = base / op / engine / v / name
        if f.is_file():
            return f, v
    return None


def _silicon(root: Path, silicon: str) -> dict[str, float]:
    import yaml

    y = yaml.safe_load((root / f"{silicon}.yaml").read_text())
    g = y["gpu"]
    return {"mem_bw_gbps": g["mem_bw"] / 1e9, "bf16_tflops": g["bfloat16_tc_flops"] / 1e12,
            "fp8_tflops": g.get("fp8_tc_flops", 0) / 1e12, "fp4_tflops": g.get("fp4_tc_flops", 0) / 1e12,
            "intra_node_gbps": y["node"]["intra_node_bw"] / 1e9,
            "pcie_gbps": y["node"].get("pcie_bw", 0) / 1e9}


def _bins(x: np.ndarray, y: np.ndarray, per_octave: int = 2, min_rows: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """Median of ``y`` in log2 bins of ``x`` (bin centre = geometric mean of the bin's x)."""
    lx = np.log2(x)
    idx = np.floor(lx * per_octave).astype(int)
    xs, ys = [], []
    for i in np.unique(idx):
        sel = idx == i
        if sel.sum() >= min_rows:
            xs.append(2.0 ** lx[sel].mean())
            ys.append(float(np.median(y[sel])))
    return np.array(xs, dtype=np.float32), np.array(ys, dtype=np.float32)


def _bins2(x: np.ndarray, y: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Median of ``v`` on a log2 grid of (``x``, ``y``), one bin per octave; empty cells take the
    nearest measured cell (in bins)."""
    ix = np.floor(np.log2(x)).astype(int)
    iy = np.floor(np.log2(y)).astype(int)
    xs = np.arange(ix.min(), ix.max() + 1)
    ys = np.arange(iy.min(), iy.max() + 1)
    grid = np.full((xs.size, ys.size), np.nan)
    for a in range(xs.size):
        for b in range(ys.size):
            sel = (ix == xs[a]) & (iy == ys[b])
            if sel.any():
                grid[a, b] = np.median(v[sel])
    have = np.argwhere(np.isfinite(grid))
    for a, b in np.argwhere(~np.isfinite(grid)):
        near = have[np.argmin(np.abs(have - (a, b)).sum(axis=1))]
        grid[a, b] = grid[near[0], near[1]]
    centre = 2.0 ** (np.asarray(xs, float) + 0.5), 2.0 ** (np.asarray(ys, float) + 0.5)
    return centre[0].astype(np.float32), centre[1].astype(np.float32), grid.astype(np.float32)


def _fill(grid: np.ndarray, axes: list[np.ndarray]) -> None:
    """Fill the few unmeasured cells of ``grid`` in log-log along each axis in turn, from the measured
    neighbours of the same row."""
    for ax, coords in enumerate(axes):
        g = np.moveaxis(grid, ax, -1)
        for idx in np.ndindex(g.shape[:-1]):
            col = g[idx]
            ok = np.isfinite(col) & (col > 0)
            if ok.sum() >= 2 and not ok.all():
                col[~ok] = np.exp(np.interp(np.log(coords[~ok]), np.log(coords[ok]), np.log(col[ok])))


def _gemm(pd, f: Path, out: dict[str, np.ndarray]) -> list[str]:
    df = pd.read_parquet(f, columns=["gemm_dtype", "m", "n", "k", "latency"])
    names = []
    for src, ours in GEMM_DTYPES.items():
        sub = df[df.gemm_dtype == src]
        if sub.empty:
            continue
        # the +1 rows probe tile-boundary effects; the grid keeps the tile-aligned sizes
        ms = np.array(sorted(m for m in sub.m.unique() if m <= 17 or m % 16 == 0), dtype=np.float64)
        ns = np.array(sorted(sub.n.unique()), dtype=np.float64)
        ks = np.array(sorted(sub.k.unique()), dtype=np.float64)
        grid = np.full((ms.size, ns.size, ks.size), np.nan, dtype=np.float64)
        mi = {v: i for i, v in enumerate(ms)}
        ni = {v: i for i, v in enumerate(ns)}
        ki = {v: i for i, v in enumerate(ks)}
        sub = sub[sub.m.isin(mi)]
        grid[sub.m.map(mi).to_numpy(), sub.n.map(ni).to_numpy(), sub.k.map(ki).to_numpy()] = sub.latency.to_numpy()
        _fill(grid, [ms, ns, ks])
        if not np.isfinite(grid).all():
            print(f"  {f}: {src} grid has holes after filling; skipped", file=sys.stderr)
            continue
        out[f"gemm_{ours}"] = grid.astype(np.float32)
        out[f"gemm_{ours}_m"], out[f"gemm_{ours}_n"], out[f"gemm_{ours}_k"] = (
            a.astype(np.float32) for a in (ms, ns, ks))
        names.append(ours)
    return names


def _plain(df):
    """Rows without a sliding window and without beam search (where the table has those columns)."""
    if "window_size" in df.columns:
        df = df[df.window_size == 0]
    if "beam_width" in df.columns:
        df = df[df.beam_width == 1]
    return df


def _attention(pd, f_gen: Path | None, f_ctx: Path | None, out: dict[str, np.ndarray]) -> list[str]:
    names = []
    if f_gen is not None:
        df = pd.read_parquet(f_gen)
        df = _plain(df)
        for kv, b in (("bfloat16", 2.0), ("fp8", 1.0)):
            sub = df[df.kv_cache_dtype == kv]
            if sub.empty:
                continue
            ctx = (sub.isl + sub.step).to_numpy(float)
            nbytes = sub.batch_size.to_numpy(float) * ctx * 2 * sub.num_key_value_heads.to_numpy(float) \
                * sub.head_dim.to_numpy(float) * b
            bw = nbytes / (sub.latency.to_numpy(float) * 1e-3) / 1e9
            x, y = _bins(nbytes, bw)
            key = "bf16" if kv == "bfloat16" else "fp8"
            out[f"gen_{key}_bytes"], out[f"gen_{key}_gbps"] = x, y
            names.append(f"gen_{key}")
    if f_ctx is not None:
        df = pd.read_parquet(f_ctx)
        df = _plain(df)
        for dt in ("bfloat16", "fp8"):
            sub = df[df.attn_dtype == dt]
            if sub.empty:
                continue
            s = sub.isl.to_numpy(float)
            flops = 4.0 * sub.batch_size.to_numpy(float) * sub.num_heads.to_numpy(float) \
                * sub.head_dim.to_numpy(float) * s * (s + 1) / 2
            tf = flops / (sub.latency.to_numpy(float) * 1e-3) / 1e12
            x, y = _bins(flops, tf)
            key = "bf16" if dt == "bfloat16" else "fp8"
            out[f"ctx_{key}_flops"], out[f"ctx_{key}_tflops"] = x, y
            names.append(f"ctx_{key}")
    return names


def _moe(pd, f: Path, sil: dict[str, float], out: dict[str, np.ndarray]) -> list[str]:
    df = pd.read_parquet(f)
    # balanced routing; a table measured only with skewed routing keeps its mildest skew
    dists = set(df.distribution.unique())
    one = df[df.num_tokens == 1]  # one token is routed the same under every distribution: repeats
    df = df[df.distribution == ("balanced" if "balanced" in dists else "power_law_1.01")]
    if "kernel_source" in df.columns and (df.kernel_source == "moe_torch_flow_nongated").any():
        df = df[df.kernel_source != "moe_torch_flow_nongated"]  # gated (SwiGLU) experts only
    names = []
    for src, (ours, wbytes) in MOE_DTYPES.items():
        sub = df[df.moe_dtype == src]
        if sub.empty or f"moe_{ours}_tpe" in out:
            continue
        names += _moe_table(pd, sub, one[one.moe_dtype == src], ours, ours, wbytes, sil, out)
        # the CUTLASS fused MoE on its own, where the table also times other backends (TensorRT-LLM's
        # TRTLLM-gen "min latency" kernels are 2-3x faster on Blackwell NVFP4): the backend
        # TensorRT-LLM 1.0 runs by default (llm_args.py MoeConfig.backend = 'CUTLASS')
        if "kernel_source" in sub.columns and sub.kernel_source.nunique() > 1 and \
                (sub.kernel_source == CUTLASS_MOE).any():
            cut = sub[sub.kernel_source == CUTLASS_MOE]
            one_cut = one[(one.moe_dtype == src) & (one.kernel_source == CUTLASS_MOE)]
            names += _moe_table(pd, cut, one_cut, f"{ours}_cutlass", ours, wbytes, sil, out)
    return names


#: The kernel_source of the CUTLASS fused MoE in the package's TensorRT-LLM MoE tables.
CUTLASS_MOE = "moe_torch_flow_cutlass"


def _moe_table(pd, sub, one, name: str, ours: str, wbytes: float, sil: dict[str, float],
               out: dict[str, np.ndarray]) -> list[str]:
    """The efficiency grid and measured shapes of one MoE table (``moe_<name>_*``) of format ``ours``."""
    t = sub.num_tokens.to_numpy(float)
    h = sub.hidden_size.to_numpy(float)
    inter = sub.inter_size.to_numpy(float) / sub.moe_tp_size.to_numpy(float)
    k = sub.topk.to_numpy(float)
    e = sub.num_experts.to_numpy(float)
    ep = sub.moe_ep_size.to_numpy(float)
    touched = (e / ep) * (1.0 - (1.0 - k / e) ** t)
    nbytes = touched * 3.0 * h * inter * wbytes
    flops = 2.0 * (t * k / ep) * 3.0 * h * inter
    peak = sil[f"{MOE_PEAK[ours]}_tflops"] or sil["bf16_tflops"]
    roof = np.maximum(nbytes / (sil["mem_bw_gbps"] * 1e9), flops / (peak * 1e12))
    eff = roof / (sub.latency.to_numpy(float) * 1e-3)
    x, y, grid = _bins2(t * k / e, nbytes, eff)
    out[f"moe_{name}_tpe"], out[f"moe_{name}_bytes"], out[f"moe_{name}_eff"] = x, y, grid
    _moe_shapes(pd.concat([sub[sub.num_tokens != 1], one]), name, out)
    return [f"moe_{name}"]


def _moe_shapes(sub, ours: str, out: dict[str, np.ndarray]) -> None:
    """The measured latency of every shape the table times, as it is: ``moe_<dtype>_shapes`` rows of
    (hidden, expert width per GPU, top-k, experts, EP ranks), ``moe_<dtype>_shape_tokens`` the
    token counts measured and ``moe_<dtype>_shape_ms`` (shapes × tokens, NaN where not measured).
    One token goes to the same top-k experts under every routing distribution the package measured,
    so its rows are repeats of one measurement and the fastest stands (the others carry noise)."""
    inter = sub.inter_size.to_numpy(float) / sub.moe_tp_size.to_numpy(float)
    keys = np.stack([sub.hidden_size.to_numpy(float), inter, sub.topk.to_numpy(float),
                     sub.num_experts.to_numpy(float), sub.moe_ep_size.to_numpy(float)], axis=1)
    shapes, idx = np.unique(keys, axis=0, return_inverse=True)
    tokens = np.unique(sub.num_tokens.to_numpy(float))
    ms = np.full((len(shapes), len(tokens)), np.nan)
    col = np.searchsorted(tokens, sub.num_tokens.to_numpy(float))
    lat = sub.latency.to_numpy(float)
    for i, j, v in zip(np.ravel(idx), col, lat, strict=True):  # repeats: keep the fastest
        ms[i, j] = v if np.isnan(ms[i, j]) else min(ms[i, j], v)
    out[f"moe_{ours}_shapes"] = shapes.astype(np.float32)
    out[f"moe_{ours}_shape_tokens"] = tokens.astype(np.float32)
    out[f"moe_{ours}_shape_ms"] = ms.astype(np.float32)


def _comm(pd, f: Path, op: str, key: str, out: dict[str, np.ndarray], impl: str | None = None) -> bool:
    df = pd.read_parquet(f)
    df = df[df.op_name == op]
    if "nccl_dtype" in df.columns:
        df = df[df.nccl_dtype == "half"]
    if impl is not None and "implementation" in df.columns:
        df = df[df.implementation == impl]
    if df.empty:
        return False
    sizes = np.array(sorted(df.message_size.unique()), dtype=np.float64)
    groups = np.array(sorted(df.num_gpus.unique()), dtype=np.float64)
    grid = np.full((groups.size, sizes.size), np.nan)
    for i, g in enumerate(groups):
        sub = df[df.num_gpus == g].groupby("message_size").latency.median()
        grid[i] = np.interp(np.log(sizes), np.log(sub.index.to_numpy(float)), sub.to_numpy(float),
                            left=np.nan, right=np.nan)
    grid = np.where(np.isfinite(grid), grid, np.nan)
    out[f"{key}_sizes"], out[f"{key}_groups"], out[key] = (sizes.astype(np.float32), groups.astype(np.float32),
                                                          grid.astype(np.float32))
    return True


def derive(root: Path, check: bool = False) -> dict:
    import pandas as pd

    version = metadata.version(PACKAGE)
    data = root / "data"
    manifest: dict = {
        "schema": 1,
        "description": "Kernel timings measured by NVIDIA, reduced to small numpy tables by "
                       "tools/derive_kernel_tables.py; latencies in ms, bandwidth in GB/s, TFLOP/s.",
        "package": PACKAGE, "package_version": version, "license": "Apache-2.0",
        "gpus": {g: {"silicon": s, "measured": m, "note": n} for g, (s, m, n) in GPU_MAP.items()},
        "silicon": {}, "tables": {},
    }
    sizes = 0
    for sil_dir in sorted({s for s, _, _ in GPU_MAP.values()}):
        base = data / sil_dir
        sil = _silicon(root, sil_dir)
        manifest["silicon"][sil_dir] = sil
        for engine in ENGINES:
            gv = [v for v in _versions(base, "gemm", engine)
                  if (base / "gemm" / engine / v / "gemm_perf.parquet").is_file()]
            if not gv:
                continue
            ver = gv[-1]
            out: dict[str, np.ndarray] = {}
            sources: dict[str, str] = {}

            def rel(p: Path) -> str:
                return "aiconfigurator_core/systems/" + str(p.relative_to(root))

            f_gemm = base / "gemm" / engine / ver / "gemm_perf.parquet"
            for name in _gemm(pd, f_gemm, out):
                sources[f"gemm_{name}"] = rel(f_gemm)
            gen = _pick(base, "attention", engine, ver, "generation_attention_perf.parquet")
            ctx = _pick(base, "attention", engine, ver, "context_attention_perf.parquet")
            for name in _attention(pd, gen[0] if gen else None, ctx[0] if ctx else None, out):
                src = gen if name.startswith("gen") else ctx
                assert src is not None
                sources[name] = rel(src[0])
            for v in [ver, *reversed(_versions(base, "moe", engine))]:  # newest first for each dtype
                f = base / "moe" / engine / v / "moe_perf.parquet"
                if f.is_file():
                    for name in _moe(pd, f, sil, out):
                        sources[name] = rel(f)
            nccl = sorted((base / "comm" / "nccl").glob("*/nccl_perf.parquet"), key=lambda p: _vkey(p.parent.name))
            if nccl:
                if _comm(pd, nccl[-1], "all_reduce", "ar_nccl", out):
                    sources["ar_nccl"] = rel(nccl[-1])
                if _comm(pd, nccl[-1], "alltoall", "a2a_nccl", out):
                    sources["a2a_nccl"] = rel(nccl[-1])
            car = _pick(base, "comm", engine, ver, "custom_allreduce_perf.parquet")
            if car and _comm(pd, car[0], "all_reduce", "ar_custom", out):
                sources["ar_custom"] = rel(car[0])
            name = f"{sil_dir}__{engine}_{ver}.npz"
            if not check:
                OUT.mkdir(parents=True, exist_ok=True)
                np.savez_compressed(OUT / name, **out)
                sizes += (OUT / name).stat().st_size
            manifest["tables"][f"{sil_dir}/{engine}/{ver}"] = {
                "file": name, "silicon": sil_dir, "engine": engine, "version": ver, "sources": sources,
            }
            print(f"{name}: {', '.join(sorted(sources))}")
    if not check:
        (OUT / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {len(manifest['tables'])} tables, {sizes / 1e6:.2f} MB, to presets/kernels/")
    return manifest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="print the tables without writing them")
    args = ap.parse_args(argv)
    try:
        import aiconfigurator_core
        import pandas  # noqa: F401
    except ImportError:
        print('needs the kernels dev extra: pip install ".[kernels]"', file=sys.stderr)
        return 2
    root = Path(aiconfigurator_core.__file__).parent / "systems"
    derive(root, check=args.check)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
