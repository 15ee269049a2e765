"""Where a new node goes: where it is dropped, moved right until nothing else is there."""

from __future__ import annotations

from PySide6.QtCore import QRectF

from studio.core.hardware import Cluster
from studio.gui.canvas.geometry import node_geometry

#: Cluster-level switch box (``ClusterSwitchItem``), centred on its position.
SWITCH_W, SWITCH_H = 180.0, 40.0
MARGIN = 24.0
STEP = 40.0


def _rects(cluster: Cluster, ids: set[str], inside: bool) -> list[QRectF]:
    """Scene rectangles of the nodes and cluster-level switches whose id is (``inside``) or is not in ``ids``."""
    out = []
    for n in cluster.nodes:
        if (n.id in ids) == inside:
            out.append(node_geometry(n).size.translated(n.x, n.y))
    for s in cluster.switches:
        if (s.id in ids) == inside:
            out.append(QRectF(s.x - SWITCH_W / 2, s.y - SWITCH_H / 2, SWITCH_W, SWITCH_H))
    return out


def free_offset(cluster: Cluster, new_ids: set[str]) -> float:
    """How far right the items ``new_ids`` must move so that none overlaps another item (0 when
    they already sit on free canvas)."""
    new = _rects(cluster, new_ids, True)
    old = [r.adjusted(-MARGIN, -MARGIN, MARGIN, MARGIN) for r in _rects(cluster, new_ids, False)]
    if not new or not old:
        return 0.0
    right = max(r.right() for r in old)
    dx = 0.0
    while dx <= right - min(r.left() for r in new) + STEP:
        if not any(r.translated(dx, 0).intersects(o) for r in new for o in old):
            return dx
        dx += STEP
    return right - min(r.left() for r in new)
