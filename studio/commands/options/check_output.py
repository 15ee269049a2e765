"""How ``export --check`` prints a check report (aggregated and disaggregated alike)."""

from __future__ import annotations

ENABLE_HINT = ("to run it: install the engine in this Python environment, or pass --engine-python PATH "
               "(or set LAYOUT_STUDIO_ENGINE_PYTHON) naming the Python of an environment that has it")


def print_check(lines: list[str], replanned: str | None = None) -> None:
    """Print a check report's lines, the re-planning sentence after the verdict, and how to run the
    engine's own validation when it did not run."""
    from studio.io.export.checks.safety import escape_for_terminal

    for line in lines[:1] + ([replanned] if replanned else []) + lines[1:]:
        print(escape_for_terminal(line))
    if lines and lines[-1].startswith("the engine's own validation was not run"):
        print(escape_for_terminal(ENABLE_HINT))
