"""Interchangeable parts of a link graph, so a route costed on one part stands for its copies.

Remove the cluster-level switches (the *hubs*: a network fabric, a rack NVLink switch) from the link
graph and it falls apart into *blocks*: a node with its GPUs, PCIe switches, CPUs and NICs, say.
Two blocks are *alike* when one is the other renamed: the same links in the same order (kinds,
lanes, local ends), the same links to the same hubs, the same GPUs at the same places, and their
vertices' names in the same order among themselves and against every hub's name. Swapping alike
blocks maps the graph onto itself and keeps every tie a path search breaks by name or by link
order, so the widest route between two GPUs, the links it shares with other routes and the slowest
of a set of flows come out the same, renamed, for every placement of the same pattern of GPUs on
alike blocks. :meth:`Symmetry.key` names such a pattern; :meth:`Symmetry.gpu_at` and
:meth:`Symmetry.link_at` put a figure found on one placement back on another. A 1,024-GPU cluster of
128 alike nodes behind one fabric switch then routes a handful of patterns instead of ~130,000 GPU
pairs.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable

from studio.engine.fabric.topology import Topology
from studio.engine.step.identity_cache import cached_by_identity

#: Where a GPU or a link sits: (ordinal of its block among the blocks of a pattern, local index);
#: a link between hubs keeps its own index (block ``-1``).
Place = tuple[int, int]


class Symmetry:
    """Blocks of one :class:`Topology`'s link graph and which of them are alike.

    Attributes
    ----------
    gpu_block, gpu_local:
        Block of every GPU and its index among the block's vertices.
    link_block, link_local:
        Block of every link (``-1`` between hubs) and its index among the block's links.
    block_class:
        Class of every block: alike blocks share it.
    """

    def __init__(self, topo: Topology) -> None:
        hubs = topo.hubs
        ends = topo.link_ends
        parent: dict[str, str] = {}

        def find(v: str) -> str:
            root = v
            while parent.get(root, root) != root:
                root = parent[root]
            while parent.get(v, v) != root:
                parent[v], v = root, parent[v]
            return root

        for a, b in ends:
            if a in hubs or b in hubs:
                continue
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[rb] = ra
        block_of: dict[str, int] = {}
        members: list[list[str]] = []  # vertices of each block, in order of first appearance
        links: list[list[int]] = []  # links of each block, in cluster order

        def block(v: str) -> int:
            r = find(v)
            k = block_of.get(r)
            if k is None:
                k = block_of[r] = len(members)
                members.append([])
                links.append([])
            return k

        local: dict[str, int] = {}

        def note(v: str) -> None:
            if v not in hubs and v not in local:
                k = block(v)
                local[v] = len(members[k])
                members[k].append(v)

        self.link_block: list[int] = []
        self.link_local: list[int] = []
        for li, (a, b) in enumerate(ends):
            note(a)
            note(b)
            inner = a if a not in hubs else (b if b not in hubs else None)
            if inner is None:
                self.link_block.append(-1)
                self.link_local.append(li)
                continue
            k = block(inner)
            self.link_block.append(k)
            self.link_local.append(len(links[k]))
            links[k].append(li)
        for g in topo.gpu_ids:  # a GPU without links is a block of its own
            note(g)
        self.gpu_block: dict[str, int] = {g: block_of[find(g)] for g in topo.gpu_ids}
        self.gpu_local: dict[str, int] = {g: local[g] for g in topo.gpu_ids}
        self.members = members
        self.links = links
        hub_names = sorted(hubs)
        classes: dict[tuple, int] = {}
        self.block_class: list[int] = []
        for k, verts in enumerate(members):

            def end(v: str) -> object:
                return ("hub", v) if v in hubs else local[v]

            sig = (
                tuple(
                    (end(ends[li][0]), end(ends[li][1]), topo.link_kind[li], topo.link_lanes[li])
                    for li in links[k]
                ),
                tuple(v in topo.gpu_set for v in verts),
                tuple(topo.gpu_type.get(v) for v in verts),
                tuple(sorted(range(len(verts)), key=verts.__getitem__)),  # their names' order
                tuple(tuple(v < h for h in hub_names) for v in verts),
            )
            self.block_class.append(classes.setdefault(sig, len(classes)))
        self._parts: dict[tuple[str, ...], tuple[tuple[int, ...], tuple]] = {}

    def key(self, gpus: Iterable[str]) -> tuple[tuple[int, int, int], ...]:
        """The pattern of ``gpus`` (in order): each GPU's (block class, ordinal of its block in
        order of first appearance, local index). Two sequences with the same key are one
        renaming of alike blocks apart."""
        seen: dict[int, int] = {}
        out = []
        gb, gl, bc = self.gpu_block, self.gpu_local, self.block_class
        for g in gpus:
            b = gb[g]
            o = seen.setdefault(b, len(seen))
            out.append((bc[b], o, gl[g]))
        return tuple(out)

    def part(self, gpus: tuple[str, ...]) -> tuple[tuple[int, ...], tuple]:
        """(blocks in order of first appearance, pattern) of one worker's ``gpus``, kept: the
        pattern is each GPU's (ordinal of its block, local index) and the blocks' classes."""
        hit = self._parts.get(gpus)
        if hit is None:
            gb, gl = self.gpu_block, self.gpu_local
            seen: dict[int, int] = {}
            pat = tuple((seen.setdefault(gb[g], len(seen)), gl[g]) for g in gpus)
            blocks = tuple(seen)
            hit = self._parts[gpus] = (blocks, (pat, tuple(self.block_class[b] for b in blocks)))
        return hit

    def pair(self, a: tuple[str, ...], b: tuple[str, ...]) -> tuple[tuple, list[int]]:
        """(key, blocks) of the GPUs ``a`` then ``b`` (two workers): the key is one-to-one with
        :meth:`key` of ``a + b`` and the blocks are :meth:`blocks` of it, built from the two
        workers' kept parts."""
        ba, pa = self.part(a)
        bb, pb = self.part(b)
        blocks = list(ba)
        where = {blk: k for k, blk in enumerate(ba)}
        shared = tuple(where.get(blk, -1) for blk in bb)
        blocks += [blk for blk, w in zip(bb, shared, strict=True) if w < 0]
        return (pa, pb, shared), blocks

    def blocks(self, gpus: Iterable[str]) -> list[int]:
        """Blocks of ``gpus`` in order of first appearance (the ordinals of :meth:`key`)."""
        return list(dict.fromkeys(self.gpu_block[g] for g in gpus))

    def gpu_place(self, blocks: list[int], gpu: str) -> Place:
        """``gpu`` as (ordinal of its block in ``blocks``, local index)."""
        return blocks.index(self.gpu_block[gpu]), self.gpu_local[gpu]

    def gpu_at(self, blocks: list[int], place: Place) -> str:
        """The GPU at ``place`` when the pattern's blocks are ``blocks``."""
        return self.members[blocks[place[0]]][place[1]]

    def link_place(self, blocks: list[int], li: int) -> Place:
        """Link ``li`` as (ordinal of its block in ``blocks``, local index), or (-1, li) between
        hubs. A link of a block outside ``blocks`` cannot be on a route between their GPUs."""
        b = self.link_block[li]
        if b < 0:
            return -1, li
        return blocks.index(b), self.link_local[li]

    def link_at(self, blocks: list[int], place: Place) -> int:
        """The link at ``place`` when the pattern's blocks are ``blocks``."""
        if place[0] < 0:
            return place[1]
        return self.links[blocks[place[0]]][place[1]]


_SYMMETRIES: OrderedDict[int, tuple[Topology, Symmetry]] = OrderedDict()


def symmetry_of(topo: Topology) -> Symmetry:
    """The (cached) :class:`Symmetry` of ``topo``."""
    return cached_by_identity(_SYMMETRIES, topo, 4, Symmetry)
