"""Short forms of engine messages for places with room for one line."""

from __future__ import annotations

#: Where a long engine message turns from the reason into a list of options.
_CUTS = ("; choose ", " (e.g. ", "; allowed: ", "; e.g. ")


def one_line(message: str, limit: int = 140) -> str:
    """The reason part of ``message`` on one line: the list of alternatives that follows it
    ("; choose tp×pp×dp = 24 (e.g. …)") is dropped, and the rest is cut at ``limit`` characters."""
    text = " ".join(message.split())
    for cut in _CUTS:
        i = text.find(cut)
        if i > 0:
            text = text[:i]
    if len(text) > limit:
        text = text[: limit - 1].rsplit(" ", 1)[0] + "…"
    return text
