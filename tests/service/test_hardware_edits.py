"""A hardware edit keeps a live plan: the layout follows the GPUs (studio.service.project_edits.hardware_edits)."""

from __future__ import annotations

from pathlib import Path

from studio.core import edits
from studio.core.layout import Layout
from studio.core.parallelism import layout_reason
from studio.engine import evaluate
from studio.io.presets import load_catalog
from studio.io.project_file import load_project
from studio.service.project_edits.hardware_edits import follow_cluster

CAT = load_catalog()
EXAMPLE = Path(__file__).resolve().parents[2] / "presets" / "examples" / "dgx-h100-2node-llama-405b.json"


def _add(cluster, template_id: str, x: float = 2000.0):
    t = CAT.node(template_id)
    names = {t.pcie_switch_link, t.host_link, t.socket_link, t.scale_up_link, t.nic_kind} - {None}
    c, ids = edits.add_template_node(cluster, t, CAT.gpu(t.gpu_type), [CAT.links[k] for k in names], x=x)
    return c, ids


def test_adding_a_server_joins_the_fabric_with_the_existing_link_kind():
    p = load_project(EXAMPLE)
    c, ids = _add(p.cluster, "hgx-h200")
    c, joined = edits.join_fabric(c, ids)
    assert joined == 8
    new_nics = {x.id for n in c.nodes if n.id in ids for x in n.nics}
    fabric_links = [lk for lk in c.links if lk.a in new_nics and lk.b == "fabric"]
    assert len(fabric_links) == 8 and {lk.kind for lk in fabric_links} == {"ib-ndr"}
    assert edits.join_fabric(c, ids) == (c, 0)  # already joined: nothing to add


def test_a_roce_server_is_not_wired_to_an_infiniband_fabric():
    p = load_project(EXAMPLE)
    c, ids = _add(p.cluster, "l40s-8x-pcie")
    assert edits.join_fabric(c, ids) == (c, 0)


def test_adding_a_server_re_splits_the_layout_and_the_plan_fits():
    p = load_project(EXAMPLE)  # TP8×PP2 on 16 GPUs
    c, ids = _add(p.cluster, "hgx-h200")
    c, _ = edits.join_fabric(c, ids)
    new, note = follow_cluster(p, c)
    assert new.cluster is c
    assert layout_reason(new.model, new.layout, 24) is None
    assert (new.layout.tp, new.layout.pp, new.layout.dp) == (8, 3, 1)
    assert note == "layout re-split to TP8×PP3"
    assert evaluate(new).fits


def test_dp_follows_the_gpu_count_when_tp_x_pp_still_divides_it():
    p = load_project(EXAMPLE)
    c, _ = _add(p.cluster, "dgx-h100")
    c, ids = _add(c, "dgx-h100", x=3000.0)
    new, note = follow_cluster(p, c)
    assert (new.layout.tp, new.layout.pp, new.layout.dp) == (8, 2, 2)
    assert note == "DP follows the GPUs: layout TP8×PP2×DP2"


def test_deleting_one_gpu_keeps_a_plan_the_engine_computes():
    p = load_project(EXAMPLE)
    c = edits.remove_items(p.cluster, {p.cluster.gpus[3].id})
    new, note = follow_cluster(p, c)
    assert note.startswith("layout re-split to")
    r = evaluate(new)
    assert r.status.ok and r.ttft_ms > 0
    # issue 34 case 6: 15 GPUs allow only TP1 when every one is used; the re-split may leave GPUs
    # idle when that serves more (the project's objective), and then names them
    every = evaluate(new.replace(layout=Layout(tp=1, pp=15, micro_batches=15)))
    assert r.output_tokens_per_s >= every.output_tokens_per_s
    idle = 15 - new.layout.world_size
    assert len(r.idle_gpus) == idle and (note.endswith(f"{idle} idle") if idle else True)
    assert ("GPUS_IDLE" in [w.code for w in r.warnings]) == bool(idle)


def test_a_move_or_a_link_edit_leaves_the_layout_alone():
    p = load_project(EXAMPLE)
    moved = edits.move_nodes(p.cluster, {p.cluster.nodes[0].id: (10.0, 20.0)})
    new, note = follow_cluster(p, moved)
    assert new.layout is p.layout and note == ""


def test_a_placement_naming_a_removed_gpu_is_reset():
    p = load_project(EXAMPLE)
    ids = tuple(g.id for g in p.cluster.gpus)
    p = p.replace(layout=p.layout.replace(placement=ids[::-1]))
    c, _ = _add(p.cluster, "dgx-h100")
    c, _ = _add(c, "dgx-h100", x=3000.0)
    new, _ = follow_cluster(p, c)
    assert new.layout.placement is None
