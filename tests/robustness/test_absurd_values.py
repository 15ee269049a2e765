"""Absurd values (0 GPUs, more GPUs than a cluster holds, negative bandwidth, ISL 10^9) are validation errors, fast."""

from __future__ import annotations

import json

import pytest

from studio.core.errors import StudioError
from studio.core.hardware import MAX_CLUSTER_GPUS
from studio.io.project_file import project_from_json
from tests.robustness.golden_files import GOLDEN


@pytest.fixture(scope="module")
def good() -> dict:
    return json.loads((GOLDEN / "v1" / "dgx-h100-2node.json").read_text(encoding="utf-8"))


def _err(data: dict) -> str:
    with pytest.raises(StudioError) as info:
        project_from_json(json.dumps(data), "absurd.json")
    return info.value.message


def _with(good: dict, path: str, value: object) -> dict:
    data = json.loads(json.dumps(good))
    *head, last = path.split(".")
    node = data
    for part in head:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return data


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        ("workload.isl", 10**9, "field 'workload.isl': Input should be less than or equal to 10000000"),
        ("workload.osl", 0, "field 'workload.osl': Input should be greater than or equal to 1"),
        ("workload.batch", 0, "batch must be 'auto' or an integer"),
        ("cluster.link_kinds.nvlink4.bandwidth_gbps", -450, "bandwidth_gbps': Input should be greater than or equal to 0.001"),
        ("cluster.link_kinds.nvlink4.latency_us", -1, "latency_us': Input should be greater than or equal to 0"),
        ("cluster.gpu_specs.h100-sxm.memory_gb", 0, "memory_gb': Input should be greater than or equal to 0.001"),
        ("cluster.gpu_specs.h100-sxm.tflops_bf16", 1e-300, "tflops_bf16': Input should be greater than or equal to 0.001"),
        ("layout.tp", 0, "field 'layout.tp': Input should be greater than or equal to 1"),
        ("layout.dp", 10**6, "field 'layout.dp': Input should be less than or equal to 100000"),
        ("cluster.nodes.0.slots", 0, "slots': Input should be greater than or equal to 1"),
        ("model.num_layers", 10**9, "num_layers': Input should be less than or equal to 10000"),
        ("model.hidden_size", -1, "hidden_size': Input should be greater than or equal to 1"),
        ("serving.gpu_memory_utilization", 2, "gpu_memory_utilization': Input should be less than or equal to 1"),
    ],
)
def test_absurd_value_is_a_validation_error(good, path, value, expected):
    assert expected in _err(_with(good, path, value))


def test_world_size_beyond_any_cluster(good):
    data = _with(good, "layout", {"tp": 4096, "pp": 4096, "dp": 1})
    assert "tp × pp × dp = 16,777,216 GPUs; a cluster holds at most 65,536" in _err(data)


def test_gpus_past_the_limit_are_refused_before_any_is_validated(good):
    node = good["cluster"]["nodes"][0]
    gpu = node["gpus"][0]
    # 66 nodes of 1,000 GPUs each (66,000, just past the limit), every GPU id invalid ("g 1" has a
    # space): if the items were validated first there would be 66,000 errors; the size check, which
    # counts the GPUs in O(nodes), answers before that. A bigger file takes only longer to parse
    # (a million GPUs: 10 s of JSON for the same message and the same code path).
    big_node = {**node, "slots": 1000, "gpus": [{**gpu, "id": f"g {i}", "slot": i} for i in range(1000)]}
    nodes = [{**big_node, "id": f"n{k}"} for k in range(66)]
    assert len(nodes) * len(big_node["gpus"]) > MAX_CLUSTER_GPUS
    data = {**good, "cluster": {**good["cluster"], "nodes": nodes, "links": []}}
    with pytest.raises(StudioError) as info:
        project_from_json(json.dumps(data), "huge.json")
    assert info.value.message == (
        f"field 'cluster': 66,000 GPUs; a cluster holds at most {MAX_CLUSTER_GPUS:,}"
    )


def test_zero_gpu_layout_cannot_be_built(good):
    assert "Input should be greater than or equal to 1" in _err(_with(good, "layout.pp", 0))
    # An empty cluster is a valid (new) document: the engine reports that nothing fits.
    empty = {**good, "cluster": {"name": "empty"}, "pinned": [], "layout": {}}
    assert project_from_json(json.dumps(empty)).cluster.num_gpus == 0
