"""Node labels in the exported commands and launch scripts: a template's name already carries its GPUs
in brackets ("DGX/HGX H100 (8× H100 SXM)"), so the label must not wrap it in a second pair
("… (8× H100 SXM) (8 GPUs)" read as nested brackets in the report's appendix)."""

from __future__ import annotations

import pytest

from studio.io.export.deployment import Deployment, NodeUse
from studio.io.export.recipes import node_label
from studio.io.presets import load_catalog

TEMPLATES = sorted(load_catalog().nodes.values(), key=lambda t: t.id)


def _depth(text: str) -> int:
    deepest = level = 0
    for ch in text:
        level += ch == "("
        level -= ch == ")"
        deepest = max(deepest, level)
    return deepest


def _dep(name: str, gpus: int, **kw: object) -> Deployment:
    node = NodeUse(index=0, name=name, host="<HOST_0>", gpus=gpus, first_rank=0)
    return Deployment(nodes=(node,), rank_node=(0,) * gpus, rank_slot=tuple(range(gpus)), hosts_given=False, **kw)


@pytest.mark.parametrize("template", TEMPLATES, ids=[t.id for t in TEMPLATES])
@pytest.mark.parametrize("script", [False, True])
def test_label_has_no_brackets_side_by_side(template, script):
    gpus = template.gpus_per_node
    for name in (template.name, f"{template.name} #0"):
        label = node_label(_dep(name, gpus, script=script), 0)
        after = label[label.index(name) + len(name):]
        assert "(" not in after and _depth(label) <= 1, label  # nothing bracketed follows the name
        assert f"{gpus} GPUs" in label


def test_launch_script_host_lines_name_the_gpus_after_a_comma():
    from studio.io.export.recipes import host_variables

    for template in TEMPLATES:
        text = host_variables(_dep(template.name, template.gpus_per_node, script=True))
        line = next(ln for ln in text.splitlines() if ln.startswith("HOST_0="))
        assert line.endswith(f"# {template.name}, {template.gpus_per_node} GPUs"), line
