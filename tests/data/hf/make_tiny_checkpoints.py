"""Write the tiny synthetic checkpoint folders under ``tests/data/hf/`` (run from the repo root).

Each folder is a miniature Llama (hidden 32, 2 layers, vocab 128) with a ``config.json`` and
safetensors files of zero tensors, written byte by byte after the format of
github.com/huggingface/safetensors (8-byte little-endian header length, JSON header of
``dtype``/``shape``/``data_offsets``, then the data). This writer is independent of the reader in
``studio/io/importers/checkpoint_size.py`` so the tests check one against the other.

- ``tiny-llama-bf16``: one ``model.safetensors`` in BF16 that matches its config exactly.
- ``tiny-llama-extra-layer``: the same config, but the checkpoint holds 3 decoder layers.
- ``tiny-llama-fp8``: block-FP8 linear weights with ``weight_scale_inv``, two shards + index.
- ``tiny-llama-gptq``: 4-bit GPTQ (``qweight``/``qzeros``/``scales``/``g_idx``, group 16).
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

HERE = Path(__file__).parent
HIDDEN, LAYERS, HEADS, KV_HEADS, HEAD_DIM, FFN, VOCAB = 32, 2, 4, 2, 8, 64, 128
BITS = {"BF16": 16, "F16": 16, "F32": 32, "I32": 32, "F8_E4M3": 8}


def config(**extra) -> dict:
    cfg = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": HIDDEN,
        "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS,
        "num_key_value_heads": KV_HEADS,
        "head_dim": HEAD_DIM,
        "intermediate_size": FFN,
        "vocab_size": VOCAB,
        "max_position_embeddings": 4096,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    }
    cfg.update(extra)
    return cfg


def linears() -> list[tuple[str, int, int]]:
    """(name, out_features, in_features) of every linear layer of one decoder layer."""
    q, kv = HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM
    return [
        ("self_attn.q_proj", q, HIDDEN), ("self_attn.k_proj", kv, HIDDEN), ("self_attn.v_proj", kv, HIDDEN),
        ("self_attn.o_proj", HIDDEN, q), ("mlp.gate_proj", FFN, HIDDEN), ("mlp.up_proj", FFN, HIDDEN),
        ("mlp.down_proj", HIDDEN, FFN),
    ]


def tensors(layers: int, linear, base: str = "BF16") -> list[tuple[str, str, list[int]]]:
    """(name, dtype, shape) of a tiny Llama; ``linear(prefix, out, in)`` gives a linear's tensors."""
    out = [("model.embed_tokens.weight", base, [VOCAB, HIDDEN])]
    for i in range(layers):
        p = f"model.layers.{i}"
        out += [(f"{p}.input_layernorm.weight", base, [HIDDEN]),
                (f"{p}.post_attention_layernorm.weight", base, [HIDDEN])]
        for name, o, n in linears():
            out += linear(f"{p}.{name}", o, n)
    out += [("model.norm.weight", base, [HIDDEN]), ("lm_head.weight", base, [VOCAB, HIDDEN])]
    return out


def write_safetensors(path: Path, items: list[tuple[str, str, list[int]]]) -> None:
    header: dict = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, dtype, shape in items:
        n = 1
        for d in shape:
            n *= d
        size = n * BITS[dtype] // 8
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)  # the reference writer pads the header to 8 bytes with spaces
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(offset))


def folder(name: str, cfg: dict) -> Path:
    d = HERE / name
    d.mkdir(exist_ok=True)
    (d / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    return d


def main() -> None:
    def bf16(prefix, o, n):
        return [(f"{prefix}.weight", "BF16", [o, n])]

    write_safetensors(folder("tiny-llama-bf16", config()) / "model.safetensors", tensors(LAYERS, bf16))
    write_safetensors(folder("tiny-llama-extra-layer", config()) / "model.safetensors", tensors(LAYERS + 1, bf16))

    def fp8(prefix, o, n):
        return [(f"{prefix}.weight", "F8_E4M3", [o, n]), (f"{prefix}.weight_scale_inv", "F32", [-(-o // 16), -(-n // 16)])]

    qc = {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": [16, 16]}
    d = folder("tiny-llama-fp8", config(quantization_config=qc))
    items = tensors(LAYERS, fp8)
    half = len(items) // 2
    shards = {"model-00001-of-00002.safetensors": items[:half], "model-00002-of-00002.safetensors": items[half:]}
    weight_map = {}
    for shard, part in shards.items():
        write_safetensors(d / shard, part)
        weight_map.update({name: shard for name, _, _ in part})
    total = sum(-(-_n(s) * BITS[t] // 8) for _, t, s in items)
    (d / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}, indent=2) + "\n"
    )

    def gptq(prefix, o, n):
        g = 16
        return [(f"{prefix}.qweight", "I32", [n // 8, o]), (f"{prefix}.qzeros", "I32", [n // g, o // 8]),
                (f"{prefix}.scales", "F16", [n // g, o]), (f"{prefix}.g_idx", "I32", [n])]

    qc = {"quant_method": "gptq", "bits": 4, "group_size": 16, "desc_act": False, "sym": True}
    d = folder("tiny-llama-gptq", config(torch_dtype="float16", quantization_config=qc))
    write_safetensors(d / "model.safetensors", tensors(LAYERS, gptq, base="F16"))


def _n(shape: list[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


if __name__ == "__main__":
    main()
