"""The command line's argument parser: argument errors are one line, not a usage dump.

:class:`OneLineParser` replaces :meth:`argparse.ArgumentParser.error` so that a bad or missing
argument prints ``layout-studio plan: error: argument --tp: ... (see --help)`` on stderr and exits
with code 2; sub-command parsers inherit the class. :func:`data_error_message` turns a validation
error that escaped a command (pydantic's ``ValidationError``) into the same kind of one line.
"""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn


class OneLineParser(argparse.ArgumentParser):
    """An :class:`argparse.ArgumentParser` whose errors are one line on stderr and exit code 2."""

    def error(self, message: str) -> NoReturn:
        """Print ``PROG: error: MESSAGE (see PROG --help)`` and exit with code 2."""
        text = " ".join(message.split())  # argparse messages may wrap; keep one line
        sys.stderr.write(f"{self.prog}: error: {text} (see `{self.prog} --help`)\n")
        raise SystemExit(2)

    def parse_args(self, args=None, namespace=None):
        """As :meth:`argparse.ArgumentParser.parse_args`, but arguments no parser took are refused
        by the sub-command that was named, so the line points at ``layout-studio plan --help``
        (that command's flags), not at the top-level help."""
        ns, extras = self.parse_known_args(args, namespace)
        if extras:
            self._named_subcommand(ns).error(f"unrecognized arguments: {' '.join(extras)}")
        return ns

    def _named_subcommand(self, ns: argparse.Namespace) -> argparse.ArgumentParser:
        """The parser of the (innermost) sub-command ``ns`` names; this parser when none was named."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                chosen = action.choices.get(getattr(ns, action.dest, None) or "")
                if isinstance(chosen, OneLineParser):
                    return chosen._named_subcommand(ns)
                if isinstance(chosen, argparse.ArgumentParser):
                    return chosen
        return self

    def _get_values(self, action: argparse.Action, arg_strings: list[str]) -> object:
        """``--flag=--`` gives the flag the text ``--``: argparse drops the ``--`` as the end of
        options and hands the flag an empty list, which skipped its type check (``--tp=--`` was
        ignored, ``--hosts=--`` an internal error). The text goes through the type and choices
        like any other value."""
        if action.nargs is None and arg_strings == ["--"]:
            value = self._get_value(action, "--")
            self._check_value(action, value)
            return value
        return super()._get_values(action, arg_strings)


def data_error_message(exc: BaseException) -> str | None:
    """One line for a validation error of user data (a pydantic ``ValidationError``: its first
    error's field and message), or ``None`` for any other exception."""
    errors = getattr(exc, "errors", None)
    if not isinstance(exc, ValueError) or not callable(errors) or type(exc).__name__ != "ValidationError":
        return None
    from studio.core.errors import first_error_message

    title = getattr(exc, "title", "")
    where = f"{title} " if title else ""
    return f"invalid {where}value: {first_error_message(exc, quote_field=True)}"
