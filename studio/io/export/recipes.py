"""Launch recipes and how they are written: commands to paste, each under the node it runs on, or
one bash script (``launch.sh NODE_INDEX [RECIPE]``) that reads the node addresses from ``HOST_i``
variables and refuses to start while one is unset."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from studio.io.export.deployment import Deployment
from studio.io.export.shell import comment, one_line


@dataclass(frozen=True)
class Step:
    """One command of a launch recipe and the node it runs on (``None``: any machine)."""

    node: int | None  # index into ``Deployment.nodes``
    text: str  # shell text, ending in a newline
    blocking: bool = True  # a server that stays in the foreground (vs. ``ray start``)
    note: str = ""


@dataclass(frozen=True)
class Recipe:
    """A named way to launch the plan (e.g. "multiprocessing", "Ray")."""

    key: str  # short name used by the script's RECIPE argument
    title: str
    steps: tuple[Step, ...]


def node_label(dep: Deployment, index: int) -> str:
    n = dep.nodes[index]
    if dep.script and dep.multi_node:
        host = f", address $HOST_{index}"
    elif dep.hosts_given or dep.multi_node:
        host = f", host {n.host}"
    else:
        host = ""
    return f"node {index} ({n.gpus} GPUs): {n.name}{host}"


def render_commands(head: Sequence[str], dep: Deployment, recipes: Sequence[Recipe]) -> str:
    """Commands to paste, one block per recipe, each command under the node it runs on."""
    out = [comment(head)]
    for rec in recipes:
        out.append("\n" + comment([f"=== {rec.title} ==="]))
        for step in rec.steps:
            where = "on any machine" if step.node is None else f"on {node_label(dep, step.node)}"
            out.append(comment([where] + ([step.note] if step.note else [])))
            out.append(step.text)
    return "".join(out)


def render_script(head: Sequence[str], dep: Deployment, recipes: Sequence[Recipe]) -> str:
    """A bash script: ``launch.sh NODE_INDEX [RECIPE]`` runs this node's part of a recipe."""
    keys = [r.key for r in recipes]
    lines = [
        "#!/usr/bin/env bash\n",
        comment(head),
        comment(
            [
                "",
                "Usage: launch.sh NODE_INDEX [RECIPE]",
                f"  NODE_INDEX: 0..{len(dep.nodes) - 1} (the node this script runs on)",
                f"  RECIPE: {' | '.join(keys)} (default {keys[0]})",
            ]
            + [f"  {node_label(dep, i)}" for i in range(len(dep.nodes))]
        ),
        "set -euo pipefail\n\n",
        'NODE_INDEX="${1:?usage: launch.sh NODE_INDEX [RECIPE]}"\n',
        f'RECIPE="${{2:-{keys[0]}}}"\n\n',
    ]
    if any("${HOST_" in s.text for r in recipes for s in r.steps):
        lines.append(host_variables(dep))
    for rec in recipes:
        lines.append(comment([rec.title]))
        lines.append(f"recipe_{rec.key}() {{\n")
        lines.append('    case "$1" in\n')
        per_node: list[list[Step]] = [[] for _ in dep.nodes]  # in recipe order, "any machine" steps on all
        for step in rec.steps:
            for steps in per_node if step.node is None else [per_node[step.node]]:
                steps.append(step)
        for i, steps in enumerate(per_node):
            lines.append(f"    {i})\n")
            servers = sum(s.blocking for s in steps)
            for s in steps:
                text = s.text.rstrip("\n")
                if s.blocking and servers > 1:
                    text += " &"
                lines.append(text + "\n")
            if servers > 1:
                lines.append("        wait\n")
            if not steps:
                lines.append("        :  # this recipe starts nothing on this node\n")
            lines.append("        ;;\n")
        lines.append(
            f'    *) echo "NODE_INDEX must be 0..{len(dep.nodes) - 1}, got $1" >&2; exit 2 ;;\n'
        )
        lines.append("    esac\n}\n\n")
    lines.append('case "$RECIPE" in\n')
    for k in keys:
        lines.append(f'    {k}) recipe_{k} "$NODE_INDEX" ;;\n')
    lines.append(f'    *) echo "RECIPE must be one of: {" ".join(keys)}; got $RECIPE" >&2; exit 2 ;;\n')
    lines.append("esac\n")
    return "".join(lines)


def host_variables(dep: Deployment) -> str:
    """The block of a launch script that holds the node addresses: one ``HOST_i`` variable per
    used node (from the environment, else the value written here) and a check that stops the
    script, before anything starts, while one is unset or not a host name."""
    names = " ".join(f"HOST_{n.index}" for n in dep.nodes)
    out = [
        comment(
            [
                "Addresses of the nodes (host names or IPs): set them here, or in the environment",
                "(e.g. HOST_0=10.0.0.1 HOST_1=10.0.0.2 ./launch.sh 0).",
            ]
        )
    ]
    for n in dep.nodes:
        value = n.host if dep.hosts_given else ""
        out.append(f'HOST_{n.index}="${{HOST_{n.index}:-{value}}}"  # {one_line(n.name)}, {n.gpus} GPUs\n')
    out.append(
        f"for var in {names}; do\n"
        '    value="${!var}"\n'
        '    if [ -z "$value" ]; then\n'
        '        echo "launch.sh: $var is not set; write the address of its node at the top of this script or export $var" >&2\n'
        "        exit 2\n"
        "    fi\n"
        '    if ! [[ "$value" =~ ^[A-Za-z0-9]([A-Za-z0-9.:-]*[A-Za-z0-9])?$ ]] || [[ "$value" == *..* ]]; then\n'
        '        echo "launch.sh: $var is not a host name or IP address" >&2\n'
        "        exit 2\n"
        "    fi\n"
        "done\n\n"
    )
    return "".join(out)
