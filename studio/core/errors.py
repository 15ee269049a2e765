"""Errors that carry a user-facing message (file, field, what is allowed)."""

from __future__ import annotations


class StudioError(Exception):
    """An error a user can act on; the message is shown as is (no traceback).

    Parameters
    ----------
    message:
        One or more sentences naming the problem, the place (file, field) and what is allowed.
    source:
        The file or input the problem was found in, if any.
    """

    def __init__(self, message: str, source: str | None = None) -> None:
        self.message = message
        self.source = source
        super().__init__(f"{source}: {message}" if source else message)


def nearest(name: str, known: list[str] | tuple[str, ...], n: int = 3) -> list[str]:
    """Return up to ``n`` known names closest to ``name`` (for "did you mean" hints)."""
    import difflib

    hits = difflib.get_close_matches(name, list(known), n=n, cutoff=0.4)
    if not hits:
        low = name.lower()
        hits = [k for k in known if low in k.lower() or k.lower() in low][:n]
    return hits
