"""Random hardware edits as the window's gestures make them (issue 34's property tests: the
service-layer run in tests/service/test_hardware_edit_property.py and its GUI check)."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

from studio.core import edits
from studio.core.hardware import Cluster
from studio.core.project import Project
from studio.io.presets import load_catalog
from studio.service.project_edits.link_compat import compatible_kinds

#: A GPU deleted, one dropped into a node with a free slot (wired as its template wires it), a
#: link deleted, a link given another kind that can join its ends.
KINDS = ("delete gpu", "add gpu", "delete link", "link kind")


@cache
def _catalog():
    return load_catalog()


def cluster_edit(p: Project, kind: str, pick: int) -> Callable[[Cluster], Cluster] | None:
    """The cluster change of one edit of ``kind`` on the ``pick``-th candidate of ``p`` (None when
    none applies), as the window's gestures make it."""
    c, cat = p.cluster, _catalog()
    if kind == "delete gpu" and c.num_gpus > 1:
        gpu = c.gpus[pick % c.num_gpus].id
        return lambda cl: edits.remove_items(cl, {gpu})
    if kind == "add gpu":
        free = [n for n in c.nodes if n.free_slots()]
        if free:
            node = free[pick % len(free)]
            spec = next(iter(c.gpu_specs.values()))
            template = cat.nodes.get(node.template) if node.template else None
            return lambda cl: edits.add_gpu(cl, node.id, spec, None, template, list(cat.links.values()))[0]
    if kind == "delete link" and c.links:
        link = c.links[pick % len(c.links)].id
        return lambda cl: edits.remove_items(cl, {link})
    if kind == "link kind" and c.links:
        lk = c.links[pick % len(c.links)]
        others = [k for k in compatible_kinds(c, dict(cat.links), lk.a, lk.b) if k.id != lk.kind]
        if others:
            kind_ = others[pick % len(others)]
            return lambda cl: edits.set_link_kind(cl, lk.id, kind_)
    return None


