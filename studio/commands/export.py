"""``layout-studio export``: write what vLLM, TensorRT-LLM or SGLang needs to run the plan's layout
(commands, a config YAML, a launch script, or a Kubernetes LeaderWorkerSet manifest)."""

from __future__ import annotations

import argparse
from pathlib import Path

from studio.commands.options.project_args import project_from_args
from studio.commands.options.project_flags import add_project_args


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``export`` command."""
    from studio.io.export import ENGINES, FORMATS

    p = subparsers.add_parser(
        "export",
        help="serving-engine commands, config YAML, launch script or Kubernetes manifest for a layout",
        description="Evaluate one layout and export it for a serving engine. Flags override the "
        "PROJECT file's values; without a PROJECT file the bundled example is the starting point.",
    )
    add_project_args(p, layout=True)
    g = p.add_argument_group("export")
    from studio.commands.options.project_flags import add_lengths_arg

    add_lengths_arg(g)
    g.add_argument("--engine", choices=ENGINES,
                   help="serving engine (default: the project's runtime, serving.runtime); another engine "
                   "than the project's is planned again with that engine, and the export says so")
    g.add_argument("--format", dest="fmt", default="command", choices=FORMATS,
                   help="command: commands to paste (default); yaml: engine config file plus commands; "
                   "script: one bash launch script; k8s: LeaderWorkerSet manifest (vllm, sglang)")
    g.add_argument("-o", "--output", metavar="DIR", help="write the files into DIR (default: print them)")
    g.add_argument("--model-path", metavar="PATH_OR_HF_ID",
                   help="checkpoint folder or Hugging Face id (default: the model's Hugging Face id)")
    g.add_argument("--hosts", metavar="H1,H2,...",
                   help="host name or IP address of each node the layout uses, in order "
                   "(default: <HOST_i> placeholders; a launch script reads HOST_i variables)")
    g.add_argument("--slurm-nodes", metavar="N1,N2,...",
                   help="Slurm node name of each node the layout uses, in order, for srun -w (TensorRT-LLM "
                   "multi-node; default: no -w, srun runs on the allocation's nodes)")
    g.add_argument("--check", nargs="?", const=True, default=None, metavar="CONFIG",
                   help="instead of writing the files, check the recipe against the engine's run-time "
                   "rules (and its own argument classes when the engine is installed); with CONFIG, "
                   "check that engine config file (e.g. an edited vllm-serve.yaml). Exit 0 when it "
                   "passes, 2 when the engine would refuse it")
    g.add_argument("--engine-python", metavar="PATH",
                   help="with --check: the Python interpreter of an environment that has the engine "
                   "installed, which runs the engine's own argument parser and config validators "
                   "(default: $LAYOUT_STUDIO_ENGINE_PYTHON, else this Python when the engine is installed here)")
    from studio.commands.options.arg_types import positive_float

    g.add_argument("--engine-timeout", metavar="SECONDS", type=positive_float, default=None,
                   help="with --check: seconds the engine's own validation may take (default 180)")
    from studio.commands.options.disagg_args import add_disagg_args

    add_disagg_args(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Build the project, evaluate the layout, export it."""
    from studio.engine import evaluate
    from studio.io.export import export_plan
    from studio.io.export.checks.safety import escape_for_terminal
    from studio.io.export.write import write_files

    project = project_from_args(args)
    hosts = None
    if args.hosts is not None:
        hosts = [h.strip() for h in args.hosts.split(",")]
    project, replanned = engine_project(project, args.engine)
    args.engine = project.serving.runtime
    from studio.commands.options.disagg_args import serving_mode

    mode = serving_mode(args, project)
    if mode.disaggregated:
        from studio.commands.options.disagg_args import run_export

        return run_export(args, project.replace(serving_mode=mode), hosts)
    plan = evaluate(project)
    slurm = [n.strip() for n in args.slurm_nodes.split(",")] if args.slurm_nodes is not None else None
    bundle = export_plan(project, plan, engine=args.engine, fmt=args.fmt,
                         model_path=args.model_path, hosts=hosts, slurm_nodes=slurm,
                         notes=[replanned] if replanned else [])
    if args.check is not None:
        return _check(bundle, None if args.check is True else args.check, replanned,
                      python=args.engine_python, timeout_s=args.engine_timeout)
    if args.output:
        for path in write_files(bundle.files, Path(args.output)):
            print(escape_for_terminal(str(path)))
    else:
        many = len(bundle.files) > 1
        for name, text in bundle.files.items():
            if many:
                print(f"# ===== {name} =====")
            print(escape_for_terminal(text, keep="\n\t"), end="" if text.endswith("\n") else "\n")
    return 0


def engine_project(project, engine: str | None):
    """The project as planned for ``engine``: the project itself when the engine is its runtime (or
    none is given), else the project with that runtime, and the sentence that says so."""
    from studio.io.export import ENGINE_VERSIONS

    if engine is None or engine == project.serving.runtime:
        return project, None
    from studio.engine.runtime import engine_setup
    from studio.service.project_edits.engine_choice import with_engine

    before = project.serving.runtime
    fraction = project.serving.gpu_memory_utilization
    # A fraction left at the old engine's default follows the new engine's default, as the window's
    # engine selector does; a fraction the user chose is kept. The old engine's version means
    # nothing to the new engine: its newest profile is used.
    own_fraction = abs(fraction - engine_setup(project).default_fraction) > 1e-9
    moved = with_engine(project, engine, None, keep_fraction=own_fraction)
    new_fraction = moved.serving.gpu_memory_utilization
    memory = (f" its memory fraction {new_fraction:g} is that engine's default (was {fraction:g})"
              if new_fraction != fraction else f" the memory fraction {fraction:g} is kept")
    return moved, (f"The project plans for {ENGINE_VERSIONS.get(before, before)}; this export re-plans the layout "
                   f"with {ENGINE_VERSIONS[engine]} (serving.runtime {engine}), so its figures are that engine's;"
                   f"{memory}.")


def _check(bundle, config_file: str | None, replanned: str | None = None, *, python: str | None = None,
           timeout_s: float | None = None) -> int:
    """Print the check report of the bundle's recipe (or of ``config_file``), the verdict first and
    the re-planning sentence after it; 0 when the rules and (where it ran) the engine accept it, 2
    when either refuses it, or when the engine named by ``python`` gave no verdict."""
    from studio.commands.options.check_output import print_check
    from studio.io.export.checks.check import check, recipe_with_config_file

    recipe = bundle.recipe
    if config_file is not None:
        recipe = recipe_with_config_file(recipe, config_file)
    report = check(recipe, python=python, timeout_s=timeout_s)
    print_check(report.lines(), replanned)
    if python is not None and report.engine_checked is None:
        return 2  # the engine's validation was asked for and gave no verdict: not a pass
    return 0 if report.ok else 2
