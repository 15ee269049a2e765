"""The checkpoint's own size hints against the parameter count of its config.json."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest

from studio.core.errors import StudioError
from studio.io.importers.checkpoint_size import check_against_size_hint, size_hint, size_note
from studio.io.importers.hf_config import load_model_config

HF = Path(__file__).parent.parent / "data" / "hf"
TINY_PARAMS = 26_784  # 2 × (attention 3,072 + MLP 6,144 + norms 64) + embed 4,096 + head 4,096 + norm 32


def test_bf16_header_gives_the_exact_count_and_agrees():
    hint = size_hint(HF / "tiny-llama-bf16")
    assert hint is not None
    assert hint.num_params == TINY_PARAMS
    assert hint.total_bytes == 2 * TINY_PARAMS
    assert hint.dtype_bytes == {"BF16": 2 * TINY_PARAMS}
    assert hint.main_dtype == "BF16"
    arch = load_model_config(HF / "tiny-llama-bf16")
    assert arch.num_params == TINY_PARAMS
    line = check_against_size_hint(arch, hint)
    assert line.endswith("— agrees")
    assert "26,784" in line and "BF16" in line


def test_a_config_path_finds_the_folder_hints():
    hint = size_hint(HF / "tiny-llama-bf16" / "config.json")
    assert hint is not None and hint.num_params == TINY_PARAMS


def test_extra_layer_in_the_checkpoint_differs():
    arch = load_model_config(HF / "tiny-llama-extra-layer")
    line = size_note(HF / "tiny-llama-extra-layer", arch)
    assert line is not None
    assert "differs by 35%" in line and "more in the checkpoint" in line
    assert "MTP layers?" in line


def test_fp8_shards_are_read_and_scales_are_not_parameters():
    hint = size_hint(HF / "tiny-llama-fp8")
    assert hint is not None
    assert hint.source.endswith("model.safetensors.index.json")
    assert hint.num_params == TINY_PARAMS
    assert hint.scale_bytes == hint.dtype_bytes["F32"] > 0
    assert hint.main_dtype == "FP8"
    # the index's own total_size agrees with the shard headers
    index = json.loads((HF / "tiny-llama-fp8" / "model.safetensors.index.json").read_text())
    assert index["metadata"]["total_size"] == hint.total_bytes
    assert check_against_size_hint(load_model_config(HF / "tiny-llama-fp8"), hint).endswith("agrees")


def test_gptq_qweight_unpacks_eight_values_per_int32():
    hint = size_hint(HF / "tiny-llama-gptq")
    assert hint is not None
    assert hint.packed_bits == 4
    assert hint.num_params == TINY_PARAMS
    line = check_against_size_hint(load_model_config(HF / "tiny-llama-gptq"), hint)
    assert "4-bit values unpacked" in line and line.endswith("agrees")


def test_index_total_size_of_llama_70b_agrees_in_bf16():
    arch = load_model_config(HF / "llama-3.1-70b-index")
    hint = size_hint(HF / "llama-3.1-70b-index")
    assert hint is not None and hint.num_params is None
    assert hint.total_bytes == 141_107_412_992
    line = check_against_size_hint(arch, hint)
    assert line == (
        "config gives 70.55 B parameters; checkpoint holds 141.11 GB in BF16 ≈ 70.55 B — agrees"
    )


def test_deepseek_v3_index_flags_the_mtp_module_and_says_it_is_approximate():
    arch = load_model_config(HF / "deepseek-v3-index")
    line = size_note(HF / "deepseek-v3-index", arch)
    assert line is not None
    assert "approximate" in line
    assert "differs by 2.3% (more in the checkpoint)" in line
    # ≈ 685 B: the 671 B model plus the 14 B multi-token-prediction module DeepSeek publishes
    assert "≈ 686.69 B" in line


def test_a_quantised_index_that_matches_agrees(tmp_path):
    """FP8 linear layers at 1 byte, embeddings and head at 2: total_size of a consistent checkpoint."""
    shutil.copy(HF / "Qwen--Qwen3-32B-FP8.config.json", tmp_path / "config.json")
    arch = load_model_config(tmp_path)
    emb = arch.embedding_params + arch.lm_head_params
    total = (arch.num_params - emb) + 2 * emb
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": total}}))
    line = size_note(tmp_path, arch)
    assert line is not None and line.endswith("— agrees") and "approximate" in line
    (tmp_path / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": int(total * 1.12)}})
    )
    assert "differs by 12%" in size_note(tmp_path, arch)


def test_no_hints_is_none(tmp_path):
    shutil.copy(HF / "tiny-llama-bf16" / "config.json", tmp_path / "config.json")
    assert size_hint(tmp_path) is None
    assert size_note(tmp_path, load_model_config(tmp_path)) is None
    (tmp_path / "pytorch_model.bin.index.json").write_text(json.dumps({"weight_map": {}}))
    assert size_hint(tmp_path) is None  # an index without total_size says nothing


def test_pytorch_bin_index_total_size_is_read(tmp_path):
    (tmp_path / "pytorch_model.bin.index.json").write_text(json.dumps({"metadata": {"total_size": 1234}}))
    hint = size_hint(tmp_path)
    assert hint is not None and hint.total_bytes == 1234 and hint.num_params is None


# ------------------------------------------------------------------------------ bad files
def _copy_tiny(tmp_path: Path) -> Path:
    shutil.copy(HF / "tiny-llama-bf16" / "config.json", tmp_path / "config.json")
    shutil.copy(HF / "tiny-llama-bf16" / "model.safetensors", tmp_path / "model.safetensors")
    return tmp_path / "model.safetensors"


def test_truncated_data_is_a_clear_error(tmp_path):
    f = _copy_tiny(tmp_path)
    f.write_bytes(f.read_bytes()[:-100])
    with pytest.raises(StudioError, match="truncated safetensors file: tensor 'lm_head.weight'"):
        size_hint(tmp_path)


def test_truncated_header_is_a_clear_error(tmp_path):
    f = _copy_tiny(tmp_path)
    raw = f.read_bytes()
    f.write_bytes(raw[:200])
    with pytest.raises(StudioError, match="the header says .* but only 192 follow") as exc:
        size_hint(tmp_path)
    assert str(f) in str(exc.value)
    f.write_bytes(raw[:5])
    with pytest.raises(StudioError, match="5 bytes, the header length alone takes 8"):
        size_hint(tmp_path)


def test_absurd_header_length_is_refused_before_reading(tmp_path):
    f = _copy_tiny(tmp_path)
    f.write_bytes(struct.pack("<Q", 2**63) + b"{}")
    with pytest.raises(StudioError, match="at most 100 MiB is read"):
        size_hint(tmp_path)


@pytest.mark.parametrize(
    ("header", "message"),
    [
        (b"[1, 2]", "JSON object of tensors"),
        (b"{not json", "not valid JSON"),
        (b"\xff\xfe", "not UTF-8"),
        (json.dumps({"w": {"dtype": "Q7", "shape": [1], "data_offsets": [0, 1]}}).encode(), "allowed: BOOL, U8"),
        (json.dumps({"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}).encode(), "shape must be"),
        (json.dumps({"w": {"dtype": "F32", "shape": [2], "data_offsets": [4, 0]}}).encode(), "data_offsets must"),
        (json.dumps({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}).encode(), "needs 12 bytes"),
        (json.dumps({"w": [1, 2]}).encode(), "entry must be an object"),
    ],
)
def test_malformed_headers_name_the_problem(tmp_path, header, message):
    f = tmp_path / "model.safetensors"
    f.write_bytes(struct.pack("<Q", len(header)) + header + bytes(64))
    with pytest.raises(StudioError, match=message):
        size_hint(tmp_path)


def test_bad_index_total_size_and_unreadable_note(tmp_path):
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": "big"}}))
    with pytest.raises(StudioError, match="'metadata.total_size' must be a positive byte count"):
        size_hint(tmp_path)
    shutil.copy(HF / "tiny-llama-bf16" / "config.json", tmp_path / "config.json")
    note = size_note(tmp_path, load_model_config(tmp_path))
    assert note is not None and note.startswith("size hints not checked:") and "total_size" in note
    (tmp_path / "model.safetensors.index.json").write_text("{")
    with pytest.raises(StudioError, match="index is not valid JSON"):
        size_hint(tmp_path)


def test_a_shard_name_cannot_leave_the_folder(tmp_path):
    """A weight_map naming '../x.safetensors' is not followed; the total_size is used instead."""
    outside = tmp_path / "x.safetensors"
    shutil.copy(HF / "tiny-llama-bf16" / "model.safetensors", outside)
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": 99}, "weight_map": {"w": "../x.safetensors"}})
    )
    hint = size_hint(folder)
    assert hint is not None and hint.total_bytes == 99 and hint.num_params is None


# ------------------------------------------------------------------------------ shown by the CLI
def test_plan_with_model_config_prints_the_verdict_under_the_model(capsys):
    from studio.cli import main

    code = main(["plan", "--model-config", str(HF / "llama-3.1-70b-index"), "--gpu", "h100-sxm", "--nodes", "2"])
    assert code == 0
    lines = capsys.readouterr().out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip().startswith("model "))
    assert lines[at + 1].split(None, 1) == [
        "checkpoint",
        "config gives 70.55 B parameters; checkpoint holds 141.11 GB in BF16 ≈ 70.55 B — agrees",
    ]


def test_plan_with_a_broken_checkpoint_still_plans(tmp_path, capsys):
    from studio.cli import main

    f = _copy_tiny(tmp_path)
    f.write_bytes(f.read_bytes()[:300])
    assert main(["plan", "--model-config", str(tmp_path), "--gpu", "h100-sxm"]) == 0
    out = capsys.readouterr().out
    assert "checkpoint  size hints not checked:" in out and "truncated safetensors file" in out
