"""``layout-studio presets``: every required id with its key figures and sources."""

from __future__ import annotations

import json

import pytest

from .conftest import GOLDEN

REQUIRED = json.loads((GOLDEN / "preset_ids.json").read_text(encoding="utf-8"))
FIELDS = json.loads((GOLDEN / "preset_fields.json").read_text(encoding="utf-8"))
KINDS = ("gpus", "models", "links", "nodes")


@pytest.mark.parametrize("kind", KINDS)
def test_presets_json_lists_required_ids_with_figures(cli, kind):
    r = cli("presets", kind, "--json")
    assert r.code == 0, r.err
    data = r.json()
    assert list(data) == [kind]
    ids = [item["id"] for item in data[kind]]
    assert set(REQUIRED[kind]) <= set(ids), sorted(set(REQUIRED[kind]) - set(ids))
    for item in data[kind]:
        assert set(FIELDS[kind]) <= set(item), (item["id"], sorted(set(FIELDS[kind]) - set(item)))
        assert item["sources"], f"{kind} preset {item['id']} cites no source"


def test_presets_model_figures(cli):
    models = {m["id"]: m for m in cli("presets", "models", "--json").json()["models"]}
    m = models["llama-3.1-405b"]
    assert 400e9 < m["params"] < 410e9
    # GQA: 126 layers × 2 (K, V) × 8 KV heads × 128 dims × 2 bytes
    assert m["kv_bytes_per_token_bf16"] == 126 * 2 * 8 * 128 * 2
    assert models["deepseek-v3"]["active_params"] < models["deepseek-v3"]["params"]


def test_presets_all_kinds_table_with_sources(cli):
    r = cli("presets")
    assert r.code == 0, r.err
    for title in ("GPUs (", "Models (", "Link kinds (", "Node templates ("):
        assert title in r.out
    for kind in KINDS:
        for ident in REQUIRED[kind]:
            assert ident in r.out
    assert r.out.count("Sources") == 5  # gpus, models, links, nodes and workloads (engine sources live in their files)
    r = cli("presets", "gpus", "--no-sources")
    assert "Sources" not in r.out and "h100-sxm" in r.out
