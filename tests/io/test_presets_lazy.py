"""The preset catalogue reads each kind on first use, once (issue 14: start fast)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from studio.core.errors import StudioError
from studio.io.presets import Catalog, presets_root


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A copy of the bundled presets whose node templates and one model file are broken."""
    dst = tmp_path / "presets"
    shutil.copytree(Path(str(presets_root())), dst)
    (dst / "nodes.json").write_text("{ not json", encoding="utf-8")
    (dst / "models" / "mistral-7b.json").write_text("[", encoding="utf-8")
    return dst


def test_a_gpu_lookup_reads_only_the_gpus(root):
    cat = Catalog(root=root)
    assert cat.gpu("h100-sxm").memory_gb == 80
    with pytest.raises(StudioError, match="node templates"):
        cat.nodes  # noqa: B018 - the broken file is read only now


def test_a_model_lookup_reads_only_its_file(root):
    cat = Catalog(root=root)
    arch = cat.model("llama-3.1-8b").architecture
    assert arch.num_layers == 32
    with pytest.raises(StudioError, match="mistral-7b.json"):
        cat.models  # noqa: B018 - listing every model reads the broken one


def test_each_kind_is_validated_once(root):
    cat = Catalog(root=root)
    assert cat.gpus is cat.gpus
    assert cat.model("llama-3.1-8b") is cat.model("llama-3.1-8b")
    (root / "gpus.json").write_text("[", encoding="utf-8")  # not read again
    assert "h100-sxm" in cat.gpus


def test_models_listing_reuses_models_already_read():
    cat = Catalog()
    one = cat.model("qwen2.5-72b")
    assert cat.models["qwen2.5-72b"] is one
    assert list(cat.models) == sorted(cat.models)  # file-name order, as before


def test_unknown_model_still_gets_a_hint():
    with pytest.raises(StudioError, match="did you mean 'llama-3.1-8b'"):
        Catalog().model("llama-3.1-8")
    with pytest.raises(StudioError, match="unknown model '../llama-3.1-8b'"):
        Catalog().model("../llama-3.1-8b")


def test_given_kinds_are_used_as_they_are(root):
    cat = Catalog(gpus={}, root=root)
    with pytest.raises(StudioError, match="unknown GPU 'h100-sxm'"):
        cat.gpu("h100-sxm")
