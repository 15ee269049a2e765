"""Validated presets kept on disk between processes (issue 14: start fast): an entry is used only
for the very bytes and code it was made from, and anything wrong with it means loading as usual."""

from __future__ import annotations

import pickle
import shutil
from pathlib import Path

import pytest

from studio.core.errors import StudioError
from studio.core.project import Project
from studio.io import preset_cache, presets
from studio.io.presets import Catalog, example_paths, load_example, presets_root
from studio.io.project_file import project_from_json


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch) -> Path:
    """Every test gets an empty cache folder of its own."""
    monkeypatch.setenv(preset_cache.CACHE_DIR_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(preset_cache.NO_CACHE_ENV, raising=False)
    return tmp_path / "cache" / "presets"


def uncached(monkeypatch, load):
    """``load()`` with the cache turned off."""
    with monkeypatch.context() as m:
        m.setenv(preset_cache.NO_CACHE_ENV, "1")
        return load()


def no_validation(monkeypatch):
    """Make validating a preset fail: what loads after this came from the cache."""

    def refuse(*args, **kwargs):
        raise AssertionError("validated again")

    monkeypatch.setattr(presets, "_validate", refuse)
    monkeypatch.setattr(presets, "_model_from_data", refuse)


def test_a_second_process_reads_the_validated_presets_back(cache, monkeypatch):
    fresh = Catalog()
    gpus, model = fresh.gpus, fresh.model("llama-3.1-8b")
    assert sorted(p.name.split("-")[0] for p in cache.glob("*.pickle")) == ["gpus", "model"]
    no_validation(monkeypatch)
    again = Catalog()  # a new process's catalogue: nothing in memory
    assert again.gpus == gpus and list(again.gpus) == list(gpus)
    assert again.model("llama-3.1-8b") == model
    assert again.gpus is not gpus  # read back, not shared


def test_cached_values_equal_the_ones_validated_without_a_cache(monkeypatch):
    Catalog().links  # noqa: B018 - fills the cache
    cached = Catalog()
    plain = uncached(monkeypatch, Catalog)
    assert cached.links == uncached(monkeypatch, lambda: plain.links)
    assert cached.nodes == uncached(monkeypatch, lambda: plain.nodes)
    for mid in ("deepseek-v3", "gpt-oss-120b"):
        Catalog().model(mid)
        assert Catalog().model(mid) == uncached(monkeypatch, lambda mid=mid: Catalog().model(mid))


@pytest.mark.parametrize("garbage", [b"", b"not a pickle", b"layout-studio preset cache\n\x80\x05trunc",
                                     b"layout-studio preset cache\n" + pickle.dumps(["a list"])])
def test_a_corrupt_entry_falls_back_to_normal_loading_and_is_written_again(cache, garbage):
    expected = Catalog().gpus
    (entry,) = cache.glob("gpus-*.pickle")
    entry.write_bytes(garbage)
    assert Catalog().gpus == expected
    assert entry.read_bytes().startswith(b"layout-studio preset cache\n") and entry.stat().st_size > 1000


def test_an_entry_of_other_objects_is_not_used(cache):
    Catalog().gpus  # noqa: B018 - fills the cache
    (entry,) = cache.glob("gpus-*.pickle")
    entry.write_bytes(b"layout-studio preset cache\n" + pickle.dumps({"h100-sxm": "not a GpuSpec"}))
    assert Catalog().gpu("h100-sxm").memory_gb == 80


def test_a_cache_that_cannot_be_written_is_only_slower(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("in the way", encoding="utf-8")
    monkeypatch.setenv(preset_cache.CACHE_DIR_ENV, str(blocker))  # <file>/presets cannot be made
    assert Catalog().gpu("h100-sxm").memory_gb == 80
    assert blocker.read_text(encoding="utf-8") == "in the way"


def test_no_cache_reads_and_writes_nothing(cache, monkeypatch):
    monkeypatch.setenv(preset_cache.NO_CACHE_ENV, "1")
    assert Catalog().gpu("h100-sxm").memory_gb == 80
    assert not cache.exists()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    dst = tmp_path / "presets"
    shutil.copytree(Path(str(presets_root())), dst)
    return dst


def test_an_edited_preset_is_never_answered_from_an_old_entry(root, cache):
    assert Catalog(root=root).gpu("h100-sxm").memory_gb == 80
    path = root / "gpus.json"
    path.write_text(path.read_text(encoding="utf-8").replace('"memory_gb": 80,', '"memory_gb": 81,', 1),
                    encoding="utf-8")
    assert Catalog(root=root).gpus["a100-sxm-80g"].memory_gb == 81  # the first GPU of the file
    assert len(list(cache.glob("gpus-*.pickle"))) == 1  # the entry for the old bytes is gone


def test_a_broken_preset_is_refused_every_time_and_never_stored(root, cache):
    (root / "nodes.json").write_text("{ not json", encoding="utf-8")
    for _ in range(2):
        with pytest.raises(StudioError, match="cannot read node templates"):
            Catalog(root=root).nodes  # noqa: B018
    bad = root / "links.json"
    bad.write_text(bad.read_text(encoding="utf-8").replace('"bandwidth_gbps": ', '"bandwidth_gbps": -', 1),
                   encoding="utf-8")
    for _ in range(2):
        with pytest.raises(StudioError, match=r"presets/links.json\[0\]"):
            Catalog(root=root).links  # noqa: B018
    assert not list(cache.glob("nodes-*")) and not list(cache.glob("links-*"))


def test_the_bundled_example_is_read_back_equal(cache, monkeypatch):
    node = next(iter(example_paths().values()))
    first = load_example(node, f"bundled example {node.name}")
    assert first == project_from_json(node.read_text(encoding="utf-8"), "x")
    monkeypatch.setattr("studio.io.project_file.project_from_json", None)  # not decoded again
    again = load_example(node, f"bundled example {node.name}")
    assert isinstance(again, Project) and again == first and again is not first
    assert again.model_dump() == first.model_dump()
