"""Sub-commands of ``layout-studio``; one module per command, each exposing ``register(subparsers)``.

See :mod:`studio.cli` for how commands are wired. What the commands share lives in one module per
idea, imported from there:

* :mod:`studio.commands.options.arg_types`: argument types (``positive_int``, ``batch_value``, ...);
* :mod:`studio.commands.options.project_flags`: the flags of a command that works on one project
  (``add_project_args``, ``add_cp_args``, ``add_load_args``);
* :mod:`studio.commands.options.layout_args`: the layout the layout flags describe;
* :mod:`studio.commands.options.project_args`: the project a command line describes
  (``project_from_args``, ``load_base_project``, ``model_size_note``);
* :mod:`studio.commands.output`: JSON and table output (``print_json``, ``fmt``, ``format_table``).

A command on one project::

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
