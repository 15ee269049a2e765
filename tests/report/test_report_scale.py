"""The report of a big cluster stays small: nodes that run the same thing share one table row, and
the cluster picture is a node map of bounded size instead of a drawing that grows with the GPUs
(issue 16: 512 nodes took 110 s and 3.3 GB, the picture alone 72 MB). Timings are in
``benchmarks/max_cluster.py --report``, not here."""

from __future__ import annotations

import pytest

from studio.cli import build_parser
from studio.commands.options.project_args import project_from_args
from studio.service.report.report_nodes import (
    CANVAS_MAX_GPUS,
    CANVAS_MAX_NODES,
    describe,
    draws_links,
    node_groups,
    node_names,
    spans,
)

NODES = 40  # 320 GPUs: past the canvas limits, quick to sweep


def _project(nodes: int, *extra: str):
    args = build_parser().parse_args(
        ["plan", "--gpu", "h100-sxm", "--nodes", str(nodes), "--model", "llama-3.1-70b", *extra]
    )
    return project_from_args(args)


@pytest.fixture(scope="module")
def big():
    from studio.engine import evaluate

    project = _project(NODES, "--tp", "8", "--pp", "2")
    return project, evaluate(project)


def test_spans():
    assert spans((0, 1, 2, 5, 7, 8)) == "0–2, 5, 7–8"
    assert spans((3,)) == "3" and spans(()) == ""


def test_nodes_doing_the_same_work_share_a_row(big):
    project, plan = big
    groups = node_groups(project.cluster, plan)
    assert [g.count for g in groups] == [NODES // 2, NODES // 2]
    assert sum(g.count for g in groups) == len(project.cluster.nodes)
    first, second = groups
    assert first.stages == (0,) and second.stages == (1,)
    assert first.tp_ranks == tuple(range(8)) and first.replicas == 1 and first.idle == 0
    layers = plan.stages[0].layers
    assert describe(first, plan) == f"stage 0 (layers 1–{layers}), TP ranks 0–7 of 1 replica"
    assert describe(second, plan).startswith(
        f"stage 1 (layers {layers + 1}–{layers + plan.stages[1].layers})"
    )
    names = [n.name for n in project.cluster.nodes]
    assert first.names == tuple(names[0::2]) and node_names(first) == f"{names[0]}, {names[2]}, …"
    assert first.busiest.total == max(m.total for m in plan.memory if m.stage == 0)


def test_a_tp_group_over_two_nodes_makes_two_kinds_of_node():
    from studio.engine import evaluate

    project = _project(4, "--tp", "16", "--pp", "1")
    plan = evaluate(project)
    groups = node_groups(project.cluster, plan)
    assert [(g.count, g.tp_ranks) for g in groups] == [
        (2, tuple(range(8))),
        (2, tuple(range(8, 16))),
    ]


def test_big_clusters_get_the_node_map():
    assert draws_links(_project(2).cluster)
    assert not draws_links(_project(CANVAS_MAX_NODES + 1).cluster)
    assert CANVAS_MAX_GPUS // 8 <= CANVAS_MAX_NODES  # 8-GPU nodes: the GPU limit comes first


@pytest.mark.parametrize(
    ("nodes", "slots"), [(1, 8), (33, 8), (512, 8), (64, 1024), (65_536, 1), (8_192, 8), (72, 4)]
)
def test_node_map_fits_its_bounds_up_to_the_largest_cluster(nodes, slots):
    from studio.gui.report.node_map import MAX_CELL, MAX_HEIGHT, layout_grid

    width = 778
    g = layout_grid(nodes, slots, width)
    assert g.height(nodes) <= MAX_HEIGHT
    assert g.width(nodes) <= width + 1e-6
    assert 1.0 <= g.cell <= MAX_CELL
    assert g.gpu_cols * g.gpu_rows >= slots


def _pixels(img):
    import numpy as np
    from PySide6.QtGui import QImage

    rgb = img.convertToFormat(QImage.Format.Format_RGB32)
    arr = np.frombuffer(
        rgb.constBits(), dtype=np.uint32, count=rgb.bytesPerLine() * rgb.height() // 4
    )
    return arr & 0xFFFFFF


def test_node_map_colours_each_gpu_by_its_stage(big, qtbot):
    from PySide6.QtGui import QColor

    from studio.gui.canvas.style import stage_color
    from studio.gui.report import charts
    from studio.gui.report.node_map import IDLE_COLOR, node_map_image

    project, plan = big
    img = node_map_image(project.cluster, plan, charts.CHART_WIDTH, charts.SCALE)
    assert img.width() == charts.CHART_WIDTH * charts.SCALE
    px = _pixels(img)

    def count(color: QColor) -> int:
        return int((px == (color.rgb() & 0xFFFFFF)).sum())

    s0, s1 = count(stage_color(0)), count(stage_color(1))
    # every GPU is a cell of its stage's colour: as many stage-0 GPUs as stage-1 ones (the legend
    # swatches add the same few pixels to each)
    assert s0 > 160 * 16 and abs(s0 - s1) <= 0.02 * s0
    assert count(QColor(IDLE_COLOR)) == 0  # no GPU is idle


def test_the_report_of_a_big_cluster_lists_node_kinds_not_gpus(big, qtbot):
    from studio.gui.report import charts, gather
    from studio.gui.report.document import Images, build_html

    project, _plan = big
    data = gather(project)
    assert charts.cluster_image(data).height() < 2_100  # the canvas picture of 40 nodes: ~5,000 px
    html = build_html(data, Images(src=lambda name: name, width=900))
    assert "The cluster as a map" in html and f"{NODES} nodes" in html
    assert html.count("TP ranks 0–7 of 1 replica") == 2
    assert "Each bar is the busiest GPU of one pipeline stage" in html


def test_appendix_shows_the_first_nodes_commands_and_counts_the_rest():
    from studio.service.report.report_content import abridge_nodes

    text = "\n".join(
        [
            "# What vLLM runs differently:",
            "# === Multiprocessing backend: one command per node ===",
            *(
                line
                for n in range(6)
                for line in (f"# on node {n}: node #{n}", f"vllm serve m --node-rank {n}")
            ),
            "# === Ray backend ===",
            "# on node 0: node #0",
            "ray start --head",
            "# on node 5: node #5",
            "ray start --address h0",
            "# on node 0: node #0",
            "vllm serve m",
        ]
    )
    out = abridge_nodes(text, "vllm", keep=2)
    assert "--node-rank 1" in out and "--node-rank 2" not in out and "--node-rank 5" not in out
    assert "# … and 4 more nodes: the same commands with each node's own rank and host" in out
    assert "`layout-studio export --engine vllm` writes every one" in out
    ray = out[out.index("# === Ray backend ===") :]
    assert (
        ray.count("# on node 0") == 2 and "ray start --address h0" in ray
    )  # node 5 is the 2nd here
    assert abridge_nodes("vllm serve m", "vllm") == "vllm serve m"


def test_the_appendix_of_a_big_cluster_stays_short(big):
    from studio.service.report.report_content import MAX_NODES_SHOWN, _exports

    project, plan = big
    for title, text in _exports(project, plan):
        assert "# on node 39:" not in text, title
        assert "more nodes: the same commands" in text or "cannot run" in text, title
        assert len(text.splitlines()) < 40 * MAX_NODES_SHOWN, title
