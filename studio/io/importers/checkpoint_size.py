"""A checkpoint's own size hints, to check a model description against the weights it ships with.

A Hugging Face model folder says how big its weights are in two ways, both read here without
loading a single weight:

- ``model.safetensors.index.json`` (and ``pytorch_model.bin.index.json``) carry
  ``{"metadata": {"total_size": BYTES}, "weight_map": {...}}``: the bytes of all tensors.
- A ``.safetensors`` file starts with an 8-byte little-endian length and a JSON header that lists
  every tensor's dtype, shape and byte range (format: github.com/huggingface/safetensors,
  README "Format"). Only that header is read (at most :data:`MAX_HEADER_BYTES`), which gives the
  exact element count per dtype. When the index's shards are all in the folder, their headers
  are read too.

Quantised checkpoints pack several values per stored element (4-bit GPTQ/AWQ ``qweight`` and
compressed-tensors ``weight_packed`` in I32, MXFP4 ``*_blocks`` and NVFP4 weights in U8) and add
scale tensors; parameters are counted unpacked and scales are not parameters. Use
:func:`size_hint` to read a folder and :func:`check_against_size_hint` for the one-line verdict.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from studio.core.architecture import LLMArchitecture
from studio.core.errors import StudioError
from studio.core.units import decimal_bytes, whole_mib
from studio.io.importers.hf_config import read_config_json
from studio.io.safe import load_json_file, loads_json_limited, open_regular

MAX_HEADER_BYTES = 100 * 1024 * 1024
MAX_INDEX_BYTES = 64 * 1024 * 1024
MAX_SHARDS = 4096

# Bits per element of every safetensors dtype (huggingface/safetensors, ``Dtype``).
SAFETENSORS_BITS = {
    "BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8, "I16": 16, "U16": 16,
    "F16": 16, "BF16": 16, "I32": 32, "U32": 32, "F32": 32, "F64": 64, "I64": 64, "U64": 64,
    "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6,
}
_SHORT = {"BF16": "BF16", "F16": "FP16", "F32": "FP32", "F64": "FP64", "F8_E4M3": "FP8",
          "F8_E5M2": "FP8", "F4": "FP4"}
# Last name parts of tensors that are quantisation scales, zero points or buffers, not parameters.
_AUX_PARTS = {"weight_scale", "weight_scale_inv", "weight_scale_2", "input_scale", "k_scale",
              "v_scale", "q_scale", "scales", "qzeros", "g_idx", "weight_zero_point", "weight_g_idx",
              "weight_shape", "weight_global_scale", "input_global_scale", "inv_freq"}
# Verdict tolerances: exact counts, bytes of unquantised weights, bytes with 4-bit scales guessed.
TOL_EXACT, TOL_BYTES, TOL_PACKED = 0.01, 0.02, 0.04


@dataclass(frozen=True)
class SizeHint:
    """What a checkpoint folder says about its own size.

    Attributes
    ----------
    source:
        The file the hint was read from (an index or a ``.safetensors`` file).
    total_bytes:
        Bytes of all tensors (scales included).
    num_params:
        Parameters, unpacked and without scales, when the safetensors headers were read; None when
        only an index's ``total_size`` was available.
    dtype_bytes:
        Bytes per stored safetensors dtype (``{"BF16": ..., "F8_E4M3": ...}``); empty for an index.
    scale_bytes:
        Bytes of quantisation scales, zero points and buffers (included in ``total_bytes``).
    packed_bits:
        Bits per value assumed for packed integer weights (``qweight``), or None if none were found.
    """

    source: str
    total_bytes: int
    num_params: int | None = None
    dtype_bytes: dict[str, int] = field(default_factory=dict)
    scale_bytes: int = 0
    packed_bits: int | None = None

    @property
    def main_dtype(self) -> str | None:
        """The dtype that holds most bytes, as a short name (``BF16``, ``FP8``), if known."""
        if not self.dtype_bytes:
            return None
        top = max(self.dtype_bytes, key=lambda k: self.dtype_bytes[k])
        return _SHORT.get(top, top)


def size_hint(path: str | os.PathLike[str]) -> SizeHint | None:
    """Read the size hints of a Hugging Face model folder (or of the folder of a ``config.json``).

    Parameters
    ----------
    path:
        The model folder, a file in it (``config.json``), or a ``.safetensors`` file.

    Returns
    -------
    SizeHint or None
        None when the folder holds neither a safetensors file nor an index with ``total_size``.

    Raises
    ------
    StudioError
        A safetensors header that is truncated, absurdly long, not JSON, or lists a tensor whose
        dtype, shape or byte range does not add up; an index that is not JSON or whose
        ``total_size`` is not a byte count. The message names the file.
    """
    p = Path(path)
    if p.is_file() and p.suffix == ".safetensors":
        return _from_headers([p], p, _pack_bits(p.parent))
    folder = p if p.is_dir() else p.parent
    if not folder.is_dir():
        raise StudioError("no such model folder", str(folder))
    for name in ("model.safetensors.index.json", "pytorch_model.bin.index.json"):
        index = folder / name
        if index.is_file():
            hint = _from_index(index, folder)
            if hint is not None:
                return hint
    single = folder / "model.safetensors"
    if single.is_file():
        return _from_headers([single], single, _pack_bits(folder))
    return None


def read_safetensors_header(path: Path) -> tuple[dict[str, Any], int]:
    """The JSON header of a ``.safetensors`` file and the number of data bytes after it.

    Raises
    ------
    StudioError
        Shorter than 8 bytes, a header length above :data:`MAX_HEADER_BYTES` or past the end of the
        file, a header that is not a UTF-8 JSON object.
    """
    src = str(path)
    try:
        with open_regular(path, "safetensors file") as fh:
            size = os.fstat(fh.fileno()).st_size
            head = fh.read(8)
            if len(head) < 8:
                raise StudioError(
                    f"truncated safetensors file: {len(head)} bytes, the header length alone takes 8", src
                )
            (n,) = struct.unpack("<Q", head)
            if n > MAX_HEADER_BYTES:
                raise StudioError(
                    f"safetensors header length is {n:,} bytes; at most {whole_mib(MAX_HEADER_BYTES)} "
                    "is read (the file is damaged or not a safetensors file)",
                    src,
                )
            if n > size - 8:
                raise StudioError(
                    f"truncated safetensors file: the header says {n:,} bytes but only {size - 8:,} follow",
                    src,
                )
            raw = fh.read(n)
    except OSError as exc:
        raise StudioError(f"cannot read safetensors file ({exc.strerror or exc})", src) from None
    header = loads_json_limited(raw, src, what="safetensors header")
    if not isinstance(header, dict):
        raise StudioError("safetensors header must be a JSON object of tensors", src)
    return header, size - 8 - n


def _tensor(name: str, entry: Any, data_bytes: int, src: str) -> tuple[str, int, int]:
    """(dtype, elements, bytes) of one header entry, checked against the file."""
    if not isinstance(entry, dict):
        raise StudioError(f"tensor '{name:.80}': entry must be an object with dtype, shape, data_offsets", src)
    dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
    if dtype not in SAFETENSORS_BITS:
        raise StudioError(
            f"tensor '{name:.80}': dtype {dtype!r:.20} is not a safetensors dtype; allowed: "
            + ", ".join(SAFETENSORS_BITS),
            src,
        )
    if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        raise StudioError(f"tensor '{name:.80}': shape must be a list of non-negative integers", src)
    if (
        not isinstance(offsets, list) or len(offsets) != 2
        or not all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)
        or not 0 <= offsets[0] <= offsets[1]
    ):
        raise StudioError(f"tensor '{name:.80}': data_offsets must be [begin, end] with 0 ≤ begin ≤ end", src)
    elements = 1
    for d in shape:
        elements *= d
    nbytes = offsets[1] - offsets[0]
    if nbytes * 8 != elements * SAFETENSORS_BITS[dtype]:
        raise StudioError(
            f"tensor '{name:.80}': {dtype} {shape} needs {elements * SAFETENSORS_BITS[dtype] // 8:,} bytes "
            f"but data_offsets span {nbytes:,}",
            src,
        )
    if offsets[1] > data_bytes:
        raise StudioError(
            f"truncated safetensors file: tensor '{name:.80}' ends at data byte {offsets[1]:,} but the "
            f"file holds {data_bytes:,}",
            src,
        )
    return dtype, elements, nbytes


def _params(name: str, dtype: str, elements: int, bits: int | None) -> tuple[int, bool]:
    """(parameters, is_aux) of one tensor: scales are not parameters, packed weights unpack."""
    last = name.rsplit(".", 1)[-1]
    if last in _AUX_PARTS or last.endswith(("_scales", "_scale")):
        return 0, True
    if dtype in ("I32", "U32") and last in ("qweight", "weight_packed"):
        return elements * (32 // (bits or 4)), False
    if dtype == "U8" and (last.endswith("_blocks") or (last == "weight" and bits == 4)):
        return elements * 2, False  # two 4-bit values per byte (MXFP4 blocks, NVFP4 weights)
    return elements, False


def _from_headers(files: list[Path], source: Path, bits: int | None) -> SizeHint:
    dtype_bytes: dict[str, int] = {}
    params = scales = 0
    packed = False
    for f in files:
        header, data_bytes = read_safetensors_header(f)
        for name, entry in header.items():
            if name == "__metadata__":
                continue
            dtype, elements, nbytes = _tensor(name, entry, data_bytes, str(f))
            dtype_bytes[dtype] = dtype_bytes.get(dtype, 0) + nbytes
            n, aux = _params(name, dtype, elements, bits)
            params += n
            scales += nbytes if aux else 0
            packed = packed or (n != elements and not aux)
    return SizeHint(
        source=str(source),
        total_bytes=sum(dtype_bytes.values()),
        num_params=params,
        dtype_bytes=dtype_bytes,
        scale_bytes=scales,
        packed_bits=(bits or 4) if packed else None,
    )


def _from_index(index: Path, folder: Path) -> SizeHint | None:
    src = str(index)
    data = load_json_file(index, MAX_INDEX_BYTES, what="index")
    if not isinstance(data, dict):
        raise StudioError("index must be a JSON object with 'metadata' and 'weight_map'", src)
    weight_map = data.get("weight_map")
    if index.name.startswith("model.safetensors") and isinstance(weight_map, dict):
        shards = sorted({v for v in weight_map.values() if isinstance(v, str)})
        if shards and len(shards) <= MAX_SHARDS and all(
            "/" not in s and "\\" not in s and (folder / s).is_file() for s in shards
        ):
            return _from_headers([folder / s for s in shards], index, _pack_bits(folder))
    meta = data.get("metadata")
    total = meta.get("total_size") if isinstance(meta, dict) else None
    if total is None:
        return None
    if isinstance(total, float) and total.is_integer():
        total = int(total)
    if isinstance(total, bool) or not isinstance(total, int) or total <= 0:
        raise StudioError(f"field 'metadata.total_size' must be a positive byte count (got {total!r:.30})", src)
    return SizeHint(source=src, total_bytes=total)


def _pack_bits(folder: Path) -> int | None:
    """Bits per packed value from the folder's config.json quantisation settings, if stated."""
    cfg_file = folder / "config.json"
    if not cfg_file.is_file():
        return None
    try:
        cfg = read_config_json(cfg_file, "config.json")
    except StudioError:
        return None
    qc = cfg.get("quantization_config") if isinstance(cfg, dict) else None
    if not isinstance(qc, dict):
        return None
    for key in ("bits", "w_bit"):
        if isinstance(qc.get(key), int) and qc[key] in (2, 4, 8):
            return qc[key]
    if qc.get("quant_method") == "mxfp4":
        return 4
    groups = qc.get("config_groups")
    if isinstance(groups, dict):
        for g in groups.values():
            w = g.get("weights") if isinstance(g, dict) else None
            if isinstance(w, dict) and w.get("num_bits") in (2, 4, 8):
                return w["num_bits"]
    return None


# --------------------------------------------------------------------------- verdict
def expected_bytes(arch: LLMArchitecture) -> float:
    """Bytes the weights of ``arch`` take in its own checkpoint format (4-bit scales included as
    :attr:`DType.bytes` counts them; FP8 block scales, a few bytes per 16k values, left out)."""
    pr = arch.precision
    total = arch.embedding_params * pr.embeddings.bytes + arch.lm_head_params * pr.lm_head.bytes
    total += arch.hidden_size * pr.embeddings.bytes  # final norm, kept in the base format
    for i in range(arch.num_layers):
        lp = arch.layer_params(i)
        total += lp["attention"] * pr.attention.bytes + lp["mlp"] * pr.mlp.bytes
        total += lp["experts"] * pr.experts.bytes + lp["shared"] * pr.mlp.bytes
        total += lp["norms"] * pr.embeddings.bytes
    return total


def _count(n: float) -> str:
    """Parameters as ``8.03 B``, ``26.8 M`` or ``26,784``."""
    if n >= 1e9:
        return f"{n / 1e9:,.2f} B"
    if n >= 1e6:
        return f"{n / 1e6:,.1f} M"
    return f"{n:,.0f}"


def _dtypes(hint: SizeHint) -> str:
    """The stored dtypes, most bytes first: ``FP8 + BF16 + FP32``."""
    order = sorted(hint.dtype_bytes, key=lambda k: -hint.dtype_bytes[k])[:3]
    return " + ".join(_SHORT.get(d, d) for d in order)


def check_against_size_hint(arch: LLMArchitecture, hint: SizeHint) -> str:
    """One line: the config's parameter count against what the checkpoint holds.

    With exact counts from safetensors headers the parameters are compared directly; with only an
    index's byte total the bytes are turned into parameters at the model's own storage format
    (approximate for quantised checkpoints, and the line says so).
    """
    stated = arch.num_params
    gb = decimal_bytes(hint.total_bytes)
    if hint.num_params is not None:
        held = hint.num_params
        where = f"{gb} in {_dtypes(hint)}" if hint.dtype_bytes else gb
        body = f"checkpoint holds {_count(held)} in its tensors ({where}"
        body += f", {hint.packed_bits}-bit values unpacked" if hint.packed_bits else ""
        body += ")"
        tol = TOL_EXACT
    else:
        per_param = expected_bytes(arch) / stated
        held = round(hint.total_bytes / per_param)
        pr = arch.precision
        quantised = pr != type(pr).uniform(pr.embeddings)
        fmt = pr.describe().upper() if not quantised else pr.describe()
        body = f"checkpoint holds {gb} in {fmt} ≈ {_count(held)}"
        packed = any(d.bytes < 1 for d in (pr.attention, pr.mlp, pr.experts))
        tol = TOL_PACKED if packed else TOL_BYTES
        if quantised:
            body += " (approximate: quantisation scales estimated)"
    diff = (held - stated) / stated
    head = f"config gives {_count(stated)} parameters; {body}"
    if abs(diff) <= tol:
        return f"{head} — agrees"
    more = "more" if diff > 0 else "fewer"
    pct = abs(diff) * 100
    return (
        f"{head} — differs by {pct:.{0 if pct >= 10 else 1}f}% ({more} in the checkpoint); the config may not "
        "describe this checkpoint (vision tower? MTP layers? quantisation scales?)"
    )


__all__ = [
    "MAX_HEADER_BYTES",
    "SizeHint",
    "check_against_size_hint",
    "expected_bytes",
    "read_safetensors_header",
    "size_hint",
    "size_note",
]


def size_note(path: str | os.PathLike[str], arch: LLMArchitecture) -> str | None:
    """The verdict line for the model folder of ``path`` (a folder or its ``config.json``), a line
    saying why the hints could not be read, or None when the folder has no size hints."""
    try:
        hint = size_hint(path)
    except StudioError as exc:
        return f"size hints not checked: {exc}"
    return None if hint is None else check_against_size_hint(arch, hint)
