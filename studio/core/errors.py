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
    field:
        The input the user should change, by its domain name (``"gpu"``, ``"nodes"``,
        ``"hosts"``, ``"model_path"``, …), when one input is to blame or missing. The message
        names it in words and never as a command-line flag; the CLI puts the matching flag in
        front (:func:`studio.commands.options.flags.cli_message`), a window names its own control.
    """

    def __init__(
        self, message: str, source: str | None = None, *, field: str | None = None
    ) -> None:
        self.message = message
        self.source = source
        self.field = field
        super().__init__(f"{source}: {message}" if source else message)


def nearest(name: str, known: list[str] | tuple[str, ...], n: int = 3) -> list[str]:
    """Return up to ``n`` known names closest to ``name`` (for "did you mean" hints)."""
    import difflib

    hits = difflib.get_close_matches(name, list(known), n=n, cutoff=0.4)
    if not hits:
        low = name.lower()
        hits = [k for k in known if low in k.lower() or k.lower() in low][:n]
    return hits


def first_error_message(exc: Exception, quote_field: bool = False) -> str:
    """The first error of a pydantic ``ValidationError`` as ``loc: message``.

    Parameters
    ----------
    exc:
        The exception; anything without an ``errors()`` method gives ``str(exc)``.
    quote_field:
        Write the location as ``field 'a.b': message`` (the project-file style) instead of
        ``a.b: message``.

    Returns
    -------
    str
        One line naming the field and what is wrong with it.
    """
    errors = getattr(exc, "errors", None)
    if callable(errors):
        errs = errors()
        if errs:
            e = errs[0]
            loc = ".".join(str(p) for p in e.get("loc", ()))
            msg = str(e.get("msg", "")).removeprefix("Value error, ")
            if not loc:
                return msg
            return f"field '{loc}': {msg}" if quote_field else f"{loc}: {msg}"
    return str(exc)
