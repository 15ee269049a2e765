"""Sub-commands of ``layout-studio``; one module per command, each exposing ``register(subparsers)``.

See :mod:`studio.cli` for how commands are wired and :mod:`studio.commands.common` for the shared
project arguments.
"""
