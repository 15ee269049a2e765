"""``layout-studio import-topo``: a project whose cluster is rebuilt from ``nvidia-smi topo -m``."""

from __future__ import annotations

import argparse

from studio.commands.options.arg_types import positive_int
from studio.core.errors import StudioError


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``import-topo`` command."""
    p = subparsers.add_parser(
        "import-topo",
        help="build a project from the output of `nvidia-smi topo -m`",
        description="Read `nvidia-smi topo -m` output (tab-separated or space-aligned), rebuild the node "
        "(sockets, PCIe switches, NVLink/NVSwitch, NICs), copy it --nodes times joined through a network "
        "fabric, and write a project with the bundled example's model and workload.",
    )
    p.add_argument("file", help="text file holding the topo output ('-' reads standard input), or a "
                   "bundled sample's id (`layout-studio examples`)")
    p.add_argument("--gpu", help="GPU preset id (needed unless the text holds `nvidia-smi -L` lines)")
    p.add_argument("--nodes", type=positive_int, default=1, help="identical nodes to build, 1..4,096 (default 1)")
    p.add_argument("--nic-kind", help="network link kind of the NICs (default ib-ndr)")
    p.add_argument("--model", help="model preset id (default: the bundled example's model)")
    p.add_argument("-o", "--output", required=True, help="project file to write")
    p.set_defaults(func=run)


def read_text(path: str, limit: int) -> str:
    """A topology text file (or stdin for '-') through the bounded reader: regular files only,
    refused when larger than ``limit`` bytes, UTF-8/UTF-16 (byte-order mark or not), else Latin-1."""
    import sys

    from studio.io.safe import decode_text, read_text_limited

    if path == "-":
        stream = getattr(sys.stdin, "buffer", sys.stdin)  # a text stream when stdin is replaced
        data = stream.read(limit + 1)
        if len(data) > limit:
            raise StudioError(f"input is larger than {limit // 1024} KiB", "<stdin>")
        if isinstance(data, str):
            return data
        return decode_text(data, "<stdin>", "topology text", fallback="latin-1")
    return read_text_limited(path, limit, "topology file", fallback="latin-1")


def run(args: argparse.Namespace) -> int:
    """Import the topology and write the project."""
    from studio.commands.options.project_args import load_base_project
    from studio.core.project import Project
    from studio.engine.search.defaults import default_layout, fitting_layout
    from studio.io.importers.topo import MAX_TOPO_BYTES, import_topology
    from studio.io.presets import load_catalog
    from studio.io.project_file import save_project
    from studio.service.plan_summary import plan_summary

    catalog = load_catalog()
    from studio.io.examples import input_file

    text = read_text(input_file(args.file, "topology file", "topo-"), MAX_TOPO_BYTES)
    cluster = import_topology(
        text, gpu_id=args.gpu, nodes=args.nodes, catalog=catalog, source=args.file, nic_kind=args.nic_kind
    )
    base = load_base_project(None)
    model, model_ref = base.model, base.model_ref
    if args.model:
        preset = catalog.model(args.model)
        model, model_ref = preset.architecture, preset.id
    per_node = len(cluster.nodes[0].gpus)
    layout = default_layout(model, per_node, cluster.num_gpus)
    project = Project(
        name=f"Imported: {cluster.name}",
        description=f"Cluster imported from {args.file} (nvidia-smi topo -m).",
        cluster=cluster,
        model=model,
        model_ref=model_ref,
        workload=base.workload,
        serving=base.serving,
        layout=layout,
    )
    layout, plan = fitting_layout(project)
    project = project.replace(layout=layout)
    out = save_project(project, args.output, follow_links=False)  # a link at -o is replaced, never written through
    summary = plan_summary(plan)
    fit = f"{summary.verdict} ({summary.reason})" if summary.reason else summary.verdict
    print(
        f"wrote {out}: {len(cluster.nodes)} node(s) × {per_node} {cluster.gpu_types()[0]}, "
        f"{len(cluster.links)} links; {model_ref} with layout {layout.label}, which {fit}"
    )
    return 0
