"""Match user-supplied regular expressions in time polynomial in the input, never exponential.

Inference engines let a checkpoint name modules with ``re:`` patterns (for example in
``quantization_config.ignored_layers``). Python's :mod:`re` backtracks, so a pattern such as
``(.*)*X`` takes exponential time on a 40-character module name. :class:`SafePattern` parses the
pattern with Python's own regex parser (so the syntax and meaning are the same) and matches it by
computing, for every sub-pattern and start position, the *set* of end positions it can reach —
memoised, so each (sub-pattern, position) pair is worked out once. The cost is bounded by
``len(pattern) × len(subject)²`` steps, whatever the pattern.

Supported: literals, ``.``, classes (``[a-z]``, ``\\d``, ``\\w``, ``\\s`` and negations), groups
(capturing or not), alternation, greedy and lazy repeats (``* + ? {m,n}``; the match set is the
same), anchors ``^ $ \\A \\Z \\b \\B`` and a global ``(?i)``. Back-references, look-arounds,
atomic groups, possessive repeats and local flags are refused with :class:`UnsafePattern`:
they either cannot be matched this way or would change the meaning.
"""

from __future__ import annotations

import re
from typing import Any

try:  # Python 3.11+
    from re import _constants as _c
    from re import _parser as _p
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _c  # type: ignore[no-redef]
    import sre_parse as _p  # type: ignore[no-redef]

#: Longest pattern accepted (characters).
MAX_PATTERN_CHARS = 1000
#: Longest subject matched (characters); module names are far shorter.
MAX_SUBJECT_CHARS = 1000
#: Largest bounded repeat count (``x{0,5000}`` is refused).
MAX_REPEAT = 1000


class UnsafePattern(ValueError):
    """A pattern that is invalid, too long, or uses a construct this matcher does not support."""


_WORD = re.compile(r"\w")
_DIGIT = re.compile(r"\d")
_SPACE = re.compile(r"\s")


def _category(cat: Any, ch: str) -> bool:
    name = str(cat)
    if "NOT_DIGIT" in name:
        return not _DIGIT.match(ch)
    if "DIGIT" in name:
        return bool(_DIGIT.match(ch))
    if "NOT_WORD" in name:
        return not _WORD.match(ch)
    if "WORD" in name:
        return bool(_WORD.match(ch))
    if "NOT_SPACE" in name:
        return not _SPACE.match(ch)
    if "SPACE" in name:
        return bool(_SPACE.match(ch))
    if "NOT_LINEBREAK" in name:
        return ch != "\n"
    if "LINEBREAK" in name:
        return ch == "\n"
    raise UnsafePattern(f"unsupported character category {name}")


def _in_class(items: list[tuple[Any, Any]], ch: str) -> bool:
    negate = False
    hit = False
    code = ord(ch)
    for op, av in items:
        if op is _c.NEGATE:
            negate = True
        elif op is _c.LITERAL:
            hit = hit or code == av
        elif op is _c.RANGE:
            hit = hit or av[0] <= code <= av[1]
        elif op is _c.CATEGORY:
            hit = hit or _category(av, ch)
        else:
            raise UnsafePattern(f"unsupported class item {op}")
    return hit != negate


def _check(seq: Any, depth: int = 0) -> None:
    """Refuse what the position-set matcher cannot do (or would change)."""
    if depth > 100:
        raise UnsafePattern("pattern nests deeper than 100 groups")
    for op, av in seq:
        if op in (_c.LITERAL, _c.NOT_LITERAL, _c.ANY):
            continue
        if op is _c.IN:
            for item_op, item_av in av:
                if item_op is _c.CATEGORY:
                    _category(item_av, "a")
                elif item_op not in (_c.NEGATE, _c.LITERAL, _c.RANGE):
                    raise UnsafePattern(f"unsupported class item {item_op}")
        elif op is _c.AT:
            if av not in (_c.AT_BEGINNING, _c.AT_BEGINNING_STRING, _c.AT_END, _c.AT_END_STRING,
                          _c.AT_BOUNDARY, _c.AT_NON_BOUNDARY):
                raise UnsafePattern(f"unsupported anchor {av}")
        elif op is _c.BRANCH:
            for branch in av[1]:
                _check(branch, depth + 1)
        elif op is _c.SUBPATTERN:
            _group, add_flags, del_flags, sub = av
            if add_flags or del_flags:
                raise UnsafePattern("local flags such as (?i:...) are not supported")
            _check(sub, depth + 1)
        elif op in (_c.MAX_REPEAT, _c.MIN_REPEAT):
            lo, hi, sub = av
            if lo > MAX_REPEAT or (hi is not _c.MAXREPEAT and hi > MAX_REPEAT):
                raise UnsafePattern(f"repeat counts above {MAX_REPEAT} are not supported")
            _check(sub, depth + 1)
        else:
            raise UnsafePattern(f"{str(op).lower().replace('_', ' ')} is not supported")


class SafePattern:
    """A regular expression matched in polynomial time (see the module docstring).

    Parameters
    ----------
    pattern:
        Python regex syntax, at most :data:`MAX_PATTERN_CHARS` characters.

    Raises
    ------
    UnsafePattern
        Invalid, too long, or using an unsupported construct.
    """

    def __init__(self, pattern: str) -> None:
        if len(pattern) > MAX_PATTERN_CHARS:
            raise UnsafePattern(f"pattern is {len(pattern)} characters; at most {MAX_PATTERN_CHARS}")
        try:
            parsed = _p.parse(pattern)
        except (re.error, RecursionError, OverflowError) as exc:
            raise UnsafePattern(f"invalid pattern: {exc}") from None
        flags = parsed.state.flags
        if flags & (re.MULTILINE | re.VERBOSE | re.LOCALE):
            raise UnsafePattern("only the (?i) and (?s) flags are supported")
        self.ignorecase = bool(flags & re.IGNORECASE)
        self.dotall = bool(flags & re.DOTALL)
        _check(parsed)
        self.pattern = pattern
        self._tree = parsed

    # ------------------------------------------------------------------ matching
    def _prep(self, subject: str) -> str:
        if len(subject) > MAX_SUBJECT_CHARS:
            raise UnsafePattern(f"subject is {len(subject)} characters; at most {MAX_SUBJECT_CHARS}")
        return subject.lower() if self.ignorecase else subject

    def fullmatch(self, subject: str) -> bool:
        """Whether the whole of ``subject`` matches."""
        s = self._prep(subject)
        return len(s) in _Run(self, s).seq(self._tree, 0)

    def search(self, subject: str) -> bool:
        """Whether the pattern matches anywhere in ``subject``."""
        s = self._prep(subject)
        run = _Run(self, s)
        return any(run.seq(self._tree, start) for start in range(len(s) + 1))


class _Run:
    """One subject: memoised end-position sets per (sub-pattern, start)."""

    def __init__(self, pat: SafePattern, s: str) -> None:
        self.pat = pat
        self.s = s
        self.memo: dict[tuple[int, int], frozenset[int]] = {}

    def _char(self, op: Any, av: Any, ch: str) -> bool:
        ic = self.pat.ignorecase
        if op is _c.LITERAL:
            return ch == (chr(av).lower() if ic else chr(av))
        if op is _c.NOT_LITERAL:
            return ch != (chr(av).lower() if ic else chr(av))
        if op is _c.ANY:
            return self.pat.dotall or ch != "\n"
        if ic:
            return _in_class(av, ch) or _in_class(av, ch.upper())
        return _in_class(av, ch)

    def _word_at(self, i: int) -> bool:
        return 0 <= i < len(self.s) and bool(_WORD.match(self.s[i]))

    def seq(self, seq: Any, start: int) -> frozenset[int]:
        """End positions of the sequence ``seq`` matched from ``start``."""
        key = (id(seq), start)
        hit = self.memo.get(key)
        if hit is not None:
            return hit
        positions = {start}
        for item in list(seq):
            nxt: set[int] = set()
            for pos in positions:
                nxt.update(self.item(item, pos))
            positions = nxt
            if not positions:
                break
        out = frozenset(positions)
        self.memo[key] = out
        return out

    def item(self, item: tuple[Any, Any], pos: int) -> frozenset[int] | set[int]:
        op, av = item
        s = self.s
        if op in (_c.LITERAL, _c.NOT_LITERAL, _c.ANY, _c.IN):
            return {pos + 1} if pos < len(s) and self._char(op, av, s[pos]) else set()
        if op is _c.AT:
            ok = {
                _c.AT_BEGINNING: pos == 0,
                _c.AT_BEGINNING_STRING: pos == 0,
                _c.AT_END: pos == len(s) or (pos == len(s) - 1 and s.endswith("\n")),
                _c.AT_END_STRING: pos == len(s),
                _c.AT_BOUNDARY: self._word_at(pos - 1) != self._word_at(pos),
                _c.AT_NON_BOUNDARY: self._word_at(pos - 1) == self._word_at(pos),
            }[av]
            return {pos} if ok else set()
        if op is _c.BRANCH:
            out: set[int] = set()
            for branch in av[1]:
                out.update(self.seq(branch, pos))
            return out
        if op is _c.SUBPATTERN:
            return self.seq(av[3], pos)
        lo, hi, sub = av  # MAX_REPEAT / MIN_REPEAT: lazy or greedy reach the same end positions
        limit = max(lo, len(s) + 1) + 1 if hi is _c.MAXREPEAT else hi
        frontier = {pos}
        reached = {pos} if lo == 0 else set()
        seen_after_lo: set[int] = set(reached)
        count = 0
        while frontier and count < limit:
            count += 1
            nxt: set[int] = set()
            for p in frontier:
                nxt.update(self.seq(sub, p))
            if count >= lo:
                nxt -= seen_after_lo  # past the minimum only new positions can lead anywhere new
                seen_after_lo |= nxt
                reached |= nxt
            frontier = nxt
            if count >= lo and hi is _c.MAXREPEAT and not frontier:
                break
        return reached


def safe_search_or_fullmatch(pattern: str, subject: str) -> bool:
    """``re.fullmatch(pattern, subject) or re.search(pattern, subject)`` in polynomial time.

    Raises
    ------
    UnsafePattern
        See :class:`SafePattern`.
    """
    return SafePattern(pattern).search(subject)
