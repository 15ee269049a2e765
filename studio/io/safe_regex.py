"""Match user-supplied regular expressions in linear time, never exponential.

Inference engines let a checkpoint name modules with ``re:`` patterns (for example in
``quantization_config.ignored_layers``). Python's :mod:`re` backtracks, so a pattern such as
``(.*)*X`` takes exponential time on a 40-character module name. :class:`SafePattern` parses the
pattern with Python's own regex parser (so the syntax and meaning are the same), compiles it to a
Thompson automaton (one state per character test, repeats unrolled up to their bound) and runs all
threads of the automaton in lock-step over the subject: the cost is at most
``states × (len(subject) + 1)`` steps, whatever the pattern. Patterns are capped at
:data:`MAX_PATTERN_CHARS` characters and :data:`MAX_STATES` states.

Supported: literals, ``.``, classes (``[a-z]``, ``\\d``, ``\\w``, ``\\s`` and negations), groups
(capturing or not), alternation, greedy and lazy repeats (``* + ? {m,n}``; whether a match
exists does not depend on greediness), anchors ``^ $ \\A \\Z \\b \\B`` and the global flags
``(?i)`` and ``(?s)``. Back-references, look-arounds, atomic groups, possessive repeats and local
flags are refused with :class:`UnsafePattern`: they cannot be run this way or would change the
meaning.
"""

from __future__ import annotations

import re
import sys
from typing import Any

if sys.version_info >= (3, 11):
    from re import _constants as _c
    from re import _parser as _p
else:  # pragma: no cover - Python 3.10
    import sre_constants as _c
    import sre_parse as _p

#: Longest pattern accepted (characters).
MAX_PATTERN_CHARS = 1000
#: Longest subject matched (characters); module names are far shorter.
MAX_SUBJECT_CHARS = 1000
#: Largest bounded repeat count (``x{0,5000}`` is refused).
MAX_REPEAT = 1000


class UnsafePattern(ValueError):
    """A pattern that is invalid, too long, or uses a construct this matcher does not support."""


class PatternTooLarge(UnsafePattern):
    """A pattern whose automaton would need more states than allowed (its repeats are too large)."""


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


#: Most automaton states one pattern may compile to (``(a{1000}){1000}`` would need a million).
MAX_STATES = 50_000

_CHAR, _SPLIT, _ASSERT, _MATCH = 0, 1, 2, 3


class SafePattern:
    """A regular expression matched in linear time (see the module docstring).

    Parameters
    ----------
    pattern:
        Python regex syntax, at most :data:`MAX_PATTERN_CHARS` characters.
    max_states:
        Most automaton states the pattern may compile to (at most :data:`MAX_STATES`); a caller
        compiling many patterns passes what is left of its own budget.

    Raises
    ------
    UnsafePattern
        Invalid, too long, or using an unsupported construct; :class:`PatternTooLarge` when it
        would compile to more than ``max_states`` states.
    """

    def __init__(self, pattern: str, max_states: int = MAX_STATES) -> None:
        self._max_states = min(max_states, MAX_STATES)
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
        # The automaton: kind, argument and successor states of each state.
        self._kind: list[int] = []
        self._arg: list[Any] = []
        self._out: list[list[int]] = []
        match = self._new(_MATCH, None, [])
        self._start = self._seq(parsed, match)
        self._match = match

    # ------------------------------------------------------------------ compiling
    def _new(self, kind: int, arg: Any, out: list[int]) -> int:
        if len(self._kind) >= self._max_states:
            raise PatternTooLarge(f"pattern compiles to more than {self._max_states:,} states (repeats too large)")
        self._kind.append(kind)
        self._arg.append(arg)
        self._out.append(out)
        return len(self._kind) - 1

    def _seq(self, seq: Any, nxt: int) -> int:
        for item in reversed(list(seq)):
            nxt = self._item(item, nxt)
        return nxt

    def _item(self, item: tuple[Any, Any], nxt: int) -> int:
        op, av = item
        if op in (_c.LITERAL, _c.NOT_LITERAL, _c.ANY, _c.IN):
            return self._new(_CHAR, (op, av), [nxt])
        if op is _c.AT:
            return self._new(_ASSERT, av, [nxt])
        if op is _c.BRANCH:
            return self._new(_SPLIT, None, [self._seq(branch, nxt) for branch in av[1]])
        if op is _c.SUBPATTERN:
            return self._seq(av[3], nxt)
        lo, hi, sub = av  # MAX_REPEAT / MIN_REPEAT
        if hi is _c.MAXREPEAT:
            loop = self._new(_SPLIT, None, [])
            self._out[loop] = [self._seq(sub, loop), nxt]
            cur = loop
        else:
            cur = nxt
            for _ in range(hi - lo):
                cur = self._new(_SPLIT, None, [self._seq(sub, cur), nxt])
        for _ in range(lo):
            cur = self._seq(sub, cur)
        return cur

    @property
    def states(self) -> int:
        """How many states the automaton has (a match costs at most this per subject character)."""
        return len(self._kind)

    # ------------------------------------------------------------------ matching
    def _prep(self, subject: str) -> str:
        if len(subject) > MAX_SUBJECT_CHARS:
            raise UnsafePattern(f"subject is {len(subject)} characters; at most {MAX_SUBJECT_CHARS}")
        return subject.lower() if self.ignorecase else subject

    def _char(self, arg: tuple[Any, Any], ch: str) -> bool:
        op, av = arg
        ic = self.ignorecase
        if op is _c.LITERAL:
            return ch == (chr(av).lower() if ic else chr(av))
        if op is _c.NOT_LITERAL:
            return ch != (chr(av).lower() if ic else chr(av))
        if op is _c.ANY:
            return self.dotall or ch != "\n"
        if ic:
            return _in_class(av, ch) or _in_class(av, ch.upper())
        return _in_class(av, ch)

    def _at(self, kind: Any, s: str, pos: int) -> bool:
        n = len(s)
        if kind in (_c.AT_BEGINNING, _c.AT_BEGINNING_STRING):
            return pos == 0
        if kind is _c.AT_END:
            return pos == n or (pos == n - 1 and s.endswith("\n"))
        if kind is _c.AT_END_STRING:
            return pos == n
        before = pos > 0 and bool(_WORD.match(s[pos - 1]))
        after = pos < n and bool(_WORD.match(s[pos]))
        if kind is _c.AT_BOUNDARY:
            return n > 0 and before != after
        return n > 0 and before == after  # AT_NON_BOUNDARY: like re, never on an empty string

    def _closure(self, states: list[int], s: str, pos: int) -> set[int]:
        """Every state reachable from ``states`` without reading a character at ``pos``."""
        seen: set[int] = set()
        stack = list(states)
        kind, out, arg = self._kind, self._out, self._arg
        while stack:
            st = stack.pop()
            if st in seen:
                continue
            seen.add(st)
            k = kind[st]
            if k == _SPLIT:
                stack.extend(out[st])
            elif k == _ASSERT and self._at(arg[st], s, pos):
                stack.extend(out[st])
        return seen

    def _run(self, subject: str, anywhere: bool) -> bool:
        s = self._prep(subject)
        kind, out, arg = self._kind, self._out, self._arg
        current = self._closure([self._start], s, 0)
        for i, ch in enumerate(s):
            if anywhere and self._match in current:
                return True
            nxt = [out[st][0] for st in current if kind[st] == _CHAR and self._char(arg[st], ch)]
            if anywhere:
                nxt.append(self._start)  # a match may also start after this character
            current = self._closure(nxt, s, i + 1)
        return self._match in current

    def fullmatch(self, subject: str) -> bool:
        """Whether the whole of ``subject`` matches."""
        return self._run(subject, anywhere=False)

    def search(self, subject: str) -> bool:
        """Whether the pattern matches anywhere in ``subject``."""
        return self._run(subject, anywhere=True)


