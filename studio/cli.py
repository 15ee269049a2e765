"""``layout-studio``: the headless command line, a contract other tools script against.

Each sub-command lives in its own module under :mod:`studio.commands` and exposes
``register(subparsers) -> None``, which adds its parser and sets ``func`` (``args -> int``) with
``parser.set_defaults(func=...)``. To add a command, write ``studio/commands/<name>.py`` and add
its name and module path to :data:`COMMANDS` — that one line is all the wiring there is. Commands
that work on one project reuse :mod:`studio.commands.options.project_flags` (``add_project_args``) and
:mod:`studio.commands.options.project_args` (``project_from_args``).

Start-up cost: :func:`main` imports only the module of the command on the line (``sweep`` never
loads the exporters, ``--version`` loads no command at all); ``--help``, an unknown command or an
option before the command load every module so the help and the error list every command.

Exit codes: 0 success; 2 a usage error or a :class:`~studio.core.errors.StudioError` (bad input,
unknown id, a layout that cannot exist), printed as ``layout-studio: error: ...`` without a
traceback; 1 an unexpected failure (traceback only with ``--debug``); 130 interrupted.

Importing this module loads no Qt: the GUI commands import :mod:`studio.gui` inside their functions.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from studio.core.errors import StudioError

PROG = "layout-studio"

#: Each command's name and the module that registers it, in the order ``--help`` lists them. Add new
#: commands here (``tests/cli/test_cli_lazy.py`` checks that every module registers exactly its names).
COMMANDS: dict[str, str] = {
    "open": "studio.commands.gui_cmd",
    "snapshot": "studio.commands.gui_cmd",
    "plan": "studio.commands.plan",
    "sweep": "studio.commands.sweep",
    "simulate": "studio.commands.simulate",
    "capacity": "studio.commands.capacity",
    "presets": "studio.commands.presets_cmd",
    "examples": "studio.commands.examples_cmd",
    "export": "studio.commands.export",
    "import-topo": "studio.commands.import_topo",
    "calibrate": "studio.commands.calibrate",
    "report": "studio.commands.report",
}

#: The command modules, each once, in :data:`COMMANDS` order.
COMMAND_MODULES: list[str] = list(dict.fromkeys(COMMANDS.values()))


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("layout-studio")
    except PackageNotFoundError:  # not installed: run from a checkout
        return "0.1.0 (source checkout)"


class _VersionAction(argparse.Action):
    """``--version``: looks the installed version up only when asked (the lookup costs ~30 ms)."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object, option_string: str | None = None) -> None:
        print(f"{parser.prog} {_version()}")
        parser.exit()


def modules_for(argv: Sequence[str]) -> list[str]:
    """The command modules a command line needs registered to be parsed.

    Parameters
    ----------
    argv:
        The arguments after the program name (``--debug`` already removed).

    Returns
    -------
    list of str
        None for an empty line (the studio opens) or one starting with ``--version``; the one module
        of a known command; otherwise (``--help``, an unknown command or option) every module, so
        that the help and the error message list every command.
    """
    if not argv or argv[0] == "--version":
        return []
    if argv[0] in COMMANDS:
        return [COMMANDS[argv[0]]]
    return list(COMMAND_MODULES)


def build_parser(modules: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The argument parser with the commands of ``modules`` registered (default: every command).

    Parameters
    ----------
    modules:
        Module paths from :data:`COMMAND_MODULES` to import and register; ``None`` for all of them.
    """
    from studio.cli_parser import OneLineParser

    parser = OneLineParser(
        prog=PROG,
        allow_abbrev=False,
        description=(
            "Plan multi-GPU LLM inference: memory, latency, throughput and cost of every "
            "TP × PP × EP × DP layout of a cluster. Without a command, opens the studio on the "
            "bundled example."
        ),
        epilog="Exit codes: 0 ok, 2 bad input (message on stderr), 1 unexpected failure.",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks of unexpected errors")
    parser.add_argument("--version", action=_VersionAction, help="show the version and exit")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES if modules is None else modules:
        importlib.import_module(name).register(subparsers)
    for sub in subparsers.choices.values():
        sub.allow_abbrev = False  # a script's `--tp` must never silently mean `--tpot-ms`
    return parser


def _open_default(args: argparse.Namespace) -> int:
    from studio.commands.gui_cmd import open_gui

    return open_gui(None)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit code (never raises for bad input).

    Everything written to stdout and stderr meanwhile passes through
    :class:`studio.terminal.TerminalText`: a terminal escape or bidirectional control in a
    name from a file is printed as ``\\u001b`` / ``\\u202e``, never acted on by the terminal."""
    from studio.terminal import TerminalText

    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = TerminalText(out), TerminalText(err)
    try:
        return _main(argv)
    finally:
        sys.stdout, sys.stderr = out, err


def _main(argv: Sequence[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv  # accepted anywhere on the line, before or after the command
    argv = [a for a in argv if a != "--debug"]
    try:
        parser = build_parser(modules_for(argv))
        args = parser.parse_args(argv)
        func = getattr(args, "func", _open_default)
        return int(func(args) or 0)
    except SystemExit as exc:  # argparse: --help (0) and usage errors (2)
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 2)
    except StudioError as exc:
        from studio.commands.options.flags import cli_message

        _error(cli_message(exc))
        return 2
    except KeyboardInterrupt:
        _error("interrupted")
        return 130
    except BrokenPipeError:  # output piped into `head` and closed early
        _silence_stdout()
        return 0
    except Exception as exc:  # noqa: BLE001 - the one place that reports unexpected failures
        from studio.cli_parser import data_error_message

        message = data_error_message(exc)
        if message is not None and not debug:  # bad values that slipped past a command's checks
            _error(message)
            return 2
        if debug:
            import traceback

            traceback.print_exc()
        _error(
            f"unexpected {type(exc).__name__}: {exc}"
            + ("" if debug else " (run again with --debug for the traceback)"),
            internal=True,
        )
        return 1


def _error(message: str, internal: bool = False) -> None:
    print(f"{PROG}: {'internal error' if internal else 'error'}: {message}", file=sys.stderr)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


#: Environment the command-line process sets for itself (a value already set by the user wins).
#: Pydantic looks for plugins by scanning the entry points of every installed distribution when it
#: builds its first schema (~30 ms of CPU with a hundred packages installed, a tenth of a ``sweep``);
#: the studio uses no pydantic plugin. ``PYDANTIC_DISABLE_PLUGINS=`` (empty) turns the scan back on.
PROCESS_ENV = {"PYDANTIC_DISABLE_PLUGINS": "__all__"}

#: Values of ``PYDANTIC_DISABLE_PLUGINS`` for which pydantic's ``get_plugins()`` returns no plugin
#: without looking at any distribution (``pydantic/plugin/_loader.py``).
_ALL_PLUGINS_OFF = ("__all__", "1", "true")

#: Pydantic's plugin loader, which :func:`skip_plugin_loader` stands in for.
_PLUGIN_LOADER = "pydantic.plugin._loader"


def skip_plugin_loader() -> None:
    """With every pydantic plugin turned off (:data:`PROCESS_ENV`), stand in for pydantic's plugin
    loader until someone turns them back on.

    Pydantic imports ``pydantic.plugin._loader`` when it builds its first validator, and that module
    imports ``importlib.metadata`` (with ``email``, ``calendar``, ...: ~10 ms of a ``sweep``'s CPU)
    at its top, even though its ``get_plugins()`` then returns no plugin at all when the variable
    says so. The stand-in's ``get_plugins()`` answers the same ``()`` without that import; if the
    variable no longer turns every plugin off, or anything else of the loader is asked for, it puts
    pydantic's own module in its place and hands over to it, so plugins load exactly as before.
    Does nothing when the loader is already imported or the variable lets plugins load.
    """
    if os.environ.get("PYDANTIC_DISABLE_PLUGINS") not in _ALL_PLUGINS_OFF or _PLUGIN_LOADER in sys.modules:
        return
    import types

    stand_in = types.ModuleType(_PLUGIN_LOADER, "Stand-in for pydantic's plugin loader (studio.cli.skip_plugin_loader).")

    def real_loader() -> types.ModuleType:
        if sys.modules.get(_PLUGIN_LOADER) is stand_in:
            del sys.modules[_PLUGIN_LOADER]
        return importlib.import_module(_PLUGIN_LOADER)

    def get_plugins():
        if os.environ.get("PYDANTIC_DISABLE_PLUGINS") in _ALL_PLUGINS_OFF:
            return ()
        return real_loader().get_plugins()

    def __getattr__(name: str):  # a module's attribute hook (PEP 562)
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(real_loader(), name)

    stand_in.get_plugins = get_plugins  # type: ignore[attr-defined]
    stand_in.__getattr__ = __getattr__  # type: ignore[method-assign]
    sys.modules[_PLUGIN_LOADER] = stand_in


#: Commands that open a Qt window (no command at all opens one too): their process ends the usual
#: way, with Qt's objects torn down (see :func:`entry_point`).
WINDOW_COMMANDS = frozenset({"open", "snapshot"})

#: Allocations (less deallocations) of container objects after which the cyclic garbage collector
#: looks at the youngest objects, in a headless command's process (see :func:`collect_less_often`);
#: CPython's default is 700.
HEADLESS_GC_THRESHOLD = 100_000


def headless(argv: Sequence[str]) -> bool:
    """Whether ``argv`` (the arguments after the program name) runs a command that opens no window:
    not an empty line (the studio opens) nor one of :data:`WINDOW_COMMANDS`."""
    argv = [a for a in argv if a != "--debug"]
    return bool(argv) and argv[0] not in WINDOW_COMMANDS


def collect_less_often(argv: Sequence[str]) -> None:
    """Start the cyclic garbage collector's young-object passes less often in a headless command.

    A ``sweep`` allocates ~60,000 long-lived objects while it imports numpy, pydantic and the
    studio and builds its pydantic schemas (modules, classes, functions, schemas: all kept until
    the process ends) and few short-lived cycles: with CPython's threshold of 700 the collector runs
    ~90 passes that free almost nothing (~500 objects) and cost ~13 ms of CPU, 4 % of the command.
    Reference counting frees everything else as before; a command that does make cyclic garbage
    (a long ``simulate``) still has it collected, every :data:`HEADLESS_GC_THRESHOLD` allocations
    instead of every 700, and the older generations keep their thresholds. Not for the window
    commands (the same ones :func:`fast_exit_allowed` refuses), whose process lives on for hours.
    """
    if not headless(argv):
        return
    import gc

    _, older, oldest = gc.get_threshold()
    gc.set_threshold(HEADLESS_GC_THRESHOLD, older, oldest)


#: The variables OpenBLAS takes its thread count from when numpy loads it, first set first.
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")


def one_blas_thread(argv: Sequence[str]) -> None:
    """In a headless command, have numpy's OpenBLAS run in the calling thread only
    (``OPENBLAS_NUM_THREADS=1``), unless the user set its thread count.

    When numpy is imported, the OpenBLAS of its wheels starts a worker thread for every further core,
    and each worker spins waiting for work for a while before it sleeps: ~90 ms of CPU in a
    ``sweep`` on two cores (a third of the command, ~0.12 s wall from import to exit), more with
    more cores, for nothing: the engine's arrays hold tens of numbers, far below the sizes at which
    OpenBLAS splits a product over threads (the calibration fit's small matrices included), so every
    figure is the same. Does nothing when numpy is already imported (the count is read only then),
    when ``OPENBLAS_NUM_THREADS``, ``GOTO_NUM_THREADS`` or ``OMP_NUM_THREADS`` is set, and for the
    window commands. Processes the command starts inherit the variable, as they do
    :data:`PROCESS_ENV`.
    """
    if not headless(argv) or "numpy" in sys.modules:
        return
    if any(os.environ.get(name) for name in BLAS_THREAD_VARIABLES):
        return
    os.environ["OPENBLAS_NUM_THREADS"] = "1"


def fast_exit_allowed(argv: Sequence[str]) -> bool:
    """Whether a ``layout-studio`` process for ``argv`` may skip the interpreter's teardown.

    Not for the window commands (nor, decided at exit, a command that loaded Qt), nor where someone
    watches the process's end: a tracer or profiler (coverage, ``cProfile``), warnings asked for
    (``-W``, ``-X dev``: exit-time ``ResourceWarning``).
    """
    if not headless(argv):
        return False
    if sys.gettrace() is not None or sys.getprofile() is not None or "coverage" in sys.modules:
        return False
    return not (sys.warnoptions or sys.flags.dev_mode)


def _exit_now(code: list[int]) -> None:
    """Exit handler of :func:`entry_point`: flush the standard streams and end the process with
    ``code[0]`` without the interpreter's teardown. It returns instead, and the interpreter ends the
    usual way (reporting what it always reported), when no code was set, when the command drew with
    Qt (``report``: Qt's objects are torn down as usual) or when a flush fails (a closed pipe)."""
    if not code or "PySide6.QtCore" in sys.modules:
        return
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        return
    os._exit(code[0])


def entry_point() -> None:
    """Console-script wrapper that exits with :func:`main`'s code (see :data:`PROCESS_ENV`).

    A headless command's process ends without the interpreter's teardown (:func:`fast_exit_allowed`):
    freeing every module, class and pydantic schema one by one costs a ``sweep`` ~0.1 s of CPU,
    more than the sweep itself, and nothing of it reaches the user. The exit handler that does this
    is registered before the command runs, so handlers registered after it (``logging``'s flush,
    ``weakref.finalize`` and ``tempfile`` clean-ups, anything a command registers) still run first;
    the non-daemon threads have been joined before exit handlers run. Its garbage collector also
    runs less often (:func:`collect_less_often`) and numpy's OpenBLAS starts no idle worker threads
    (:func:`one_blas_thread`).
    """
    for key, value in PROCESS_ENV.items():
        os.environ.setdefault(key, value)
    skip_plugin_loader()
    collect_less_often(sys.argv[1:])
    one_blas_thread(sys.argv[1:])
    code: list[int] = []
    if fast_exit_allowed(sys.argv[1:]):
        import atexit

        atexit.register(_exit_now, code)
    code.append(main())
    sys.exit(code[0])


if __name__ == "__main__":
    entry_point()
