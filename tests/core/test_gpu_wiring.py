"""Issue 34 case 4: a GPU dropped into a node is wired as the node's template wires the GPU of that
slot, so deleting a GPU and dropping it back gives the same cluster and a plan that runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from studio.core import edits
from studio.core.building.builders import build_cluster
from studio.io.presets import load_catalog
from studio.io.project_file import load_project

EXAMPLES = Path(__file__).resolve().parents[2] / "presets" / "examples"


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


@pytest.mark.parametrize("template", ["dgx-h100", "gb200-nvl72", "h100-pcie-8x-bridge", "mi300x-8x", "l40s-8x-pcie"])
def test_a_gpu_dropped_back_gets_the_links_it_lost(catalog, template):
    t = catalog.node(template)
    cluster = build_cluster(t, 1, catalog.gpu(t.gpu_type), catalog.links)
    node = cluster.nodes[0]
    gpu = node.gpus[3]
    gone = edits.remove_items(cluster, {gpu.id})
    assert len(gone.links) < len(cluster.links)
    back, gid = edits.add_gpu(gone, node.id, catalog.gpu(t.gpu_type), gpu.slot, t, list(catalog.links.values()))
    assert gid == gpu.id
    assert set(back.links) == set(cluster.links)


def test_without_its_template_a_node_gets_a_bare_gpu(catalog):
    t = catalog.node("dgx-h100")
    cluster = build_cluster(t, 1, catalog.gpu(t.gpu_type), catalog.links)
    gone = edits.remove_items(cluster, {cluster.nodes[0].gpus[0].id})
    back, _ = edits.add_gpu(gone, cluster.nodes[0].id, catalog.gpu("h100-sxm"))
    assert len(back.links) == len(gone.links)


def test_the_bundled_example_runs_again_after_a_gpu_is_dropped_back(catalog):
    from studio.engine import evaluate
    from studio.service.project_edits.hardware_edits import follow_cluster

    p = load_project(EXAMPLES / "dgx-h100-2node-llama-405b.json")
    node = p.cluster.nodes[0]
    gone = edits.remove_items(p.cluster, {node.gpus[3].id})
    p15, _ = follow_cluster(p, gone)
    back, _ = edits.add_gpu(gone, node.id, catalog.gpu("h100-sxm"), None, catalog.node(node.template),
                            list(catalog.links.values()))
    p16, _ = follow_cluster(p15, back)
    assert len(back.links) == len(p.cluster.links)
    assert p16.layout.world_size == 16
    assert evaluate(p16).status.ok
