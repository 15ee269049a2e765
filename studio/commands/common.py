"""What the commands share, by idea, gathered under one name for the commands that import it:

* :mod:`studio.commands.arg_types`: argument types (``positive_int``, ``batch_value``, ...);
* :mod:`studio.commands.project_flags`: the flags of a command that works on one project
  (``add_project_args``, ``add_cp_args``, ``add_load_args``);
* :mod:`studio.commands.layout_args`: the layout the layout flags describe;
* :mod:`studio.commands.project_args`: the project a command line describes
  (``project_from_args``, ``load_base_project``, ``model_size_note``);
* :mod:`studio.commands.output`: JSON and table output (``print_json``, ``fmt``, ``format_table``).

Commands use it like this::

    def register(subparsers):
        p = subparsers.add_parser("export", help="...")
        add_project_args(p, layout=True)
        p.set_defaults(func=run)

    def run(args) -> int:
        project = project_from_args(args)
        ...

Precedence: a PROJECT file (else the bundled example project) gives every value; each flag given on
the command line overrides the matching value. Every problem is a :class:`StudioError` naming the
flag and the allowed values, which :func:`studio.cli.main` turns into exit code 2.
"""

from __future__ import annotations

from studio.cli_parser import bounded_int
from studio.commands.arg_types import (
    batch_value,
    int_list,
    non_negative_float,
    positive_float,
    positive_int,
)
from studio.commands.output import fmt, format_pairs, format_table, json_safe, print_json
from studio.commands.project_args import (
    apply_cp_args,
    load_base_project,
    model_size_note,
    project_from_args,
)
from studio.commands.project_flags import (
    DEFAULT_EXAMPLE,
    add_cp_args,
    add_load_args,
    add_project_args,
)

__all__ = [
    "DEFAULT_EXAMPLE", "add_cp_args", "add_load_args", "add_project_args", "apply_cp_args", "batch_value",
    "bounded_int", "fmt", "format_pairs", "format_table", "int_list", "json_safe", "load_base_project",
    "model_size_note", "non_negative_float", "positive_float", "positive_int", "print_json",
    "project_from_args",
]
