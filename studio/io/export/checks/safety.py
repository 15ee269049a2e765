"""What user text may become in a recipe: a model argument, a host name, a word on a terminal.

Quoting (:func:`studio.io.export.common.quote`) keeps a value one shell word; these checks keep it
from meaning something else once it is that word: a model argument that starts with ``-`` is
parsed as an option (``vllm serve --trust-remote-code``), a host entry with ``,`` or ``:`` adds
hosts or slots to ``mpirun -H`` / ``srun -w``, and bidirectional-control or terminal-escape
characters make a line read differently from what runs.
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from collections.abc import Sequence

from studio.core.errors import StudioError

#: Bidirectional embedding/override/isolate controls and marks (Trojan Source, CVE-2021-42574).
BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")

_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?")


def first_unsafe_char(text: str) -> str | None:
    """The first character of ``text`` that must not reach a script or a terminal raw, described
    as ``U+XXXX (NAME)``; ``None`` when there is none.

    Unsafe: control characters (C0, C1, DEL: terminal escapes start with ESC or CSI), format
    characters (bidirectional controls, zero-width characters), line/paragraph separators and
    lone surrogates.
    """
    for ch in text:
        if ch in BIDI_CONTROLS or unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp", "Cs"):
            name = unicodedata.name(ch, "control character")
            return f"U+{ord(ch):04X} ({name})"
    return None


def check_model_argument(model: str, name: str, field: str | None = None) -> str:
    """``model`` when it is safe as the model argument of a launch line.

    ``name`` says where the value came from in the message (``"the model path"``,
    ``"model.hf_model_id"``); ``field`` is the input to blame (:class:`StudioError`).

    Raises
    ------
    StudioError
        Empty, starting with ``-`` (the engine would read it as an option), or holding a control,
        format or bidirectional character.
    """
    if not model.strip():
        raise StudioError(f"{name} is empty; give a local folder or a Hugging Face id", field=field)
    if model.lstrip().startswith("-"):
        raise StudioError(
            f"{name} '{escape_for_terminal(model)}' starts with '-', which the engine reads as an "
            "option; give a folder (e.g. ./" + escape_for_terminal(model.lstrip()) + ") or a Hugging Face id",
            field=field,
        )
    bad = first_unsafe_char(model)
    if bad is not None:
        raise StudioError(
            f"{name} holds {bad}; control, format and bidirectional characters are not allowed "
            "in a model path",
            field=field,
        )
    return model


def is_host_name(text: str) -> bool:
    """Whether ``text`` is a host name (RFC 1123 labels joined by dots, at most 253 characters),
    an IPv4 address or an IPv6 address."""
    try:
        ipaddress.ip_address(text)
        return True
    except ValueError:
        pass
    if not text or len(text) > 253:
        return False
    return all(_LABEL.fullmatch(label) for label in text.rstrip(".").split("."))


def check_host(host: str) -> str:
    """``host`` when it is a host name or IP address.

    Raises
    ------
    StudioError
        Anything else (a leading ``-``, ``,``, ``:``, ``@``, spaces, quotes, control characters):
        such an entry would add hosts or options to ``mpirun -H`` or ``srun -w``.
    """
    if not is_host_name(host):
        # a long entry is shown by its start and length, not echoed whole
        shown = f"'{escape_for_terminal(host)}'" if len(host) <= 64 else (
            f"'{escape_for_terminal(host[:60])}…' ({len(host):,} characters)")
        raise StudioError(
            f"{shown} is not a host name or IP address (allowed: "
            "letters, digits, '-' and '.' in dot-separated labels that do not start or end with "
            "'-', or an IPv4/IPv6 address)",
            field="hosts",
        )
    return host


def check_hosts(hosts: Sequence[str]) -> list[str]:
    """``hosts`` when each is a host name or IP address (:func:`check_host`) and none is given
    twice (names compared without case and a trailing dot, as DNS does; addresses by value).

    Raises
    ------
    StudioError
        A bad entry, or one naming the same host as an earlier one: two nodes of one layout
        cannot be one machine, and ``mpirun -H a,a`` would start both nodes' ranks there.
    """
    seen: dict[str, int] = {}
    for i, host in enumerate(hosts):
        check_host(host)
        try:
            key = str(ipaddress.ip_address(host))
        except ValueError:
            key = host.rstrip(".").lower()
        if key in seen:
            raise StudioError(
                f"'{escape_for_terminal(host)}' (node {i + 1}) names the same host as node {seen[key] + 1} "
                f"('{escape_for_terminal(hosts[seen[key]])}'); give each node its own host, none twice",
                field="hosts",
            )
        seen[key] = i
    return list(hosts)


def host_port(host: str, port: int | str) -> str:
    """``host:port``, with an IPv6 address in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def escape_for_terminal(text: str, keep: str = "") -> str:
    """``text`` with every unsafe character (see :func:`first_unsafe_char`) but those in ``keep``
    (e.g. ``"\\n\\t"`` for a whole file) written as an escape such as ``\\x1b`` or ``\\u202e``, so
    printing it cannot move the cursor, recolour the terminal or reorder the line."""
    out = []
    for ch in str(text):
        if ch in keep:
            out.append(ch)
        elif ch in BIDI_CONTROLS or unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp", "Cs"):
            out.append(ch.encode("unicode_escape", "backslashreplace").decode("ascii"))
        else:
            out.append(ch)
    return "".join(out)
