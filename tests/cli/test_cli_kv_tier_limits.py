"""Impossible prompt-reuse settings are refused with a message naming the field: a hit rate above 1,
a KV tier larger than the node's host memory or NVMe, and a tier on an engine version without the
setting (each engine, from the versions its profiles cover and presets/engines/rules.json)."""

from __future__ import annotations

import json

import pytest

from studio.cli import build_parser
from studio.commands.options.project_args import project_from_args
from studio.core.errors import StudioError
from studio.core.settings.reuse import KVTiers
from studio.service.kv_tiers import checked_tiers
from studio.service.project_edits.engine_choice import with_engine


@pytest.fixture(scope="module")
def chat():
    ns = build_parser(["studio.commands.plan"]).parse_args(
        ["plan", "--node-template", "dgx-h100", "--model", "llama-3.1-70b", "--tp", "4", "--isl", "8000",
         "--system-prompt-tokens", "2000"])
    return project_from_args(ns)


# (engine, a version its profiles cover without the tier, the first version with it)
HOST = [("vllm", "0.20.0", "0.33.0"), ("trtllm", "1.0.0", "1.4.0"), ("sglang", "0.5.10", "0.5.23")]


@pytest.mark.parametrize(("engine", "old", "new"), HOST, ids=[h[0] for h in HOST])
def test_host_tier_needs_an_engine_version_with_it(chat, engine, old, new):
    tiers = KVTiers(host_gib=100)
    with pytest.raises(StudioError, match=rf"^kv_tiers\.host_gib: .* {old} has no .*set it to 0 or choose a newer"):
        checked_tiers(with_engine(chat, engine, old), tiers)
    ok = checked_tiers(with_engine(chat, engine, new), tiers)
    assert ok.host_gib == 100 and ok.host_link_gbps == 63.0  # the DGX H100 template's PCIe 5.0 x16


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_nvme_tier_only_on_an_engine_with_one(chat, engine):
    with pytest.raises(StudioError, match=r"^kv_tiers\.disk_gib: .* has no setting for an NVMe KV tier"):
        checked_tiers(with_engine(chat, engine, None), KVTiers(disk_gib=100))
    with pytest.raises(StudioError, match=r"kv_tiers\.disk_gib: .* 1\.0\.0 has no kv_cache_config\.disk_cache_size"):
        checked_tiers(with_engine(chat, "trtllm", "1.0.0"), KVTiers(disk_gib=100))
    assert checked_tiers(with_engine(chat, "trtllm", None), KVTiers(disk_gib=100)).disk_gib == 100


def test_a_tier_larger_than_the_node(chat):
    with pytest.raises(StudioError, match=r"^kv_tiers\.host_gib 4000 GiB is more than the node's host memory \(1906\.7 GiB"):
        checked_tiers(chat, KVTiers(host_gib=4000))
    with pytest.raises(StudioError, match=r"^kv_tiers\.disk_gib 40000 GiB is more than the node's local NVMe \(28610 GiB"):
        checked_tiers(with_engine(chat, "trtllm", None), KVTiers(disk_gib=40_000))


def test_project_files_with_impossible_settings_name_the_field(cli, tmp_path):
    base = json.loads(cli("examples", "dgx-h100-llama-70b-multiturn-chat").out)
    cases = {
        "hit rate": (("workload", "reuse", "hit_rate"), 1.5, "field 'workload.reuse.hit_rate': Input should be less "
                                                             "than or equal to 1 (got 1.5)"),
        "host": (("serving", "kv_tiers", "host_gib"), 4000, "kv_tiers.host_gib 4000 GiB is more than the node's host memory"),
        "version": (("serving", "runtime_version"), "0.20.0", "kv_tiers.host_gib: vLLM 0.20.0 has no kv-offloading-size"),
    }
    for name, (path, value, message) in cases.items():
        doc = json.loads(json.dumps(base))
        node = doc
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
        f = tmp_path / f"{name}.json"
        f.write_text(json.dumps(doc))
        r = cli("plan", str(f))
        assert r.code == 2 and message in r.err and "Traceback" not in r.err, (name, r.err)
