"""The engines' start-up rules as data: ``startup`` in ``presets/engines/rules.json``.

Each record names the engine, the versions it holds for, what it says and where it was read (file
and line of the engine's code at a version or commit). The exporters write what these rules require
(:func:`rule` gives them the record and its parameters) and ``export --check`` evaluates the same
records (:mod:`.startup`), so a rule lives once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from studio.core.errors import StudioError

RULES_FILE = "engines/rules.json"

_CMP = re.compile(r"^(>=|<=|==|!=|>|<)\s*([0-9][0-9a-z.]*)$")


@dataclass(frozen=True)
class Where:
    """One place a rule was read: a file (and line) of the engine's code at a version or commit."""

    file: str
    at: str
    line: int | None = None
    symbol: str | None = None

    def text(self) -> str:
        """``file:line`` (or ``file (symbol)``) at its version, for a finding."""
        place = f"{self.file}:{self.line}" if self.line else self.file
        if self.symbol:
            place += f" ({self.symbol})"
        return f"{place} @ {self.at}"


@dataclass(frozen=True)
class StartupRule:
    """One start-up rule of one engine."""

    id: str
    engine: str
    versions: str
    says: str
    source: tuple[Where, ...]
    params: dict[str, Any] = field(default_factory=dict)

    def applies(self, version: str | None) -> bool:
        """Whether the rule holds for engine ``version`` (``None``: the version the exports target)."""
        if version is None:
            return True
        return version_in(version, self.versions)

    def cite(self) -> str:
        """The rule's id and where it was read, for a finding."""
        return f"{self.id}: " + "; ".join(w.text() for w in self.source)


def _key(version: str) -> tuple[int, ...]:
    """A release as numbers: ``1.4.0rc0`` → (1, 4, 0, -1, 0); pre-releases sort before the release."""
    m = re.match(r"^(\d+(?:\.\d+)*)(?:(a|b|rc)(\d+))?", version.strip().lower().lstrip("v"))
    if m is None:
        raise StudioError(f"'{version}' is not an engine version (e.g. 0.13.0 or 1.4.0rc0)")
    nums = [int(x) for x in m.group(1).split(".")] + [0] * 3
    pre = {"a": -3, "b": -2, "rc": -1}.get(m.group(2) or "", 0)
    return (*nums[:3], pre, int(m.group(3) or 0))


def version_in(version: str, spec: str) -> bool:
    """Whether ``version`` satisfies ``spec`` (comparisons joined by commas: ``>=0.10.1,<0.13.0``)."""
    v = _key(version)
    for part in filter(None, (p.strip() for p in spec.split(","))):
        m = _CMP.match(part)
        if m is None:
            raise StudioError(f"version range '{spec}' is not comparisons such as >=0.13.0", RULES_FILE)
        op, bound = m.group(1), _key(m.group(2))
        ok = {">=": v >= bound, "<=": v <= bound, "==": v == bound, "!=": v != bound,
              ">": v > bound, "<": v < bound}[op]
        if not ok:
            return False
    return True


def _where(d: Any, rid: str) -> Where:
    if not isinstance(d, dict) or not isinstance(d.get("file"), str) or not isinstance(d.get("at"), str):
        raise StudioError(f"startup rule '{rid}': every source needs 'file' and 'at'", RULES_FILE)
    line = d.get("line")
    if line is not None and (not isinstance(line, int) or line < 1):
        raise StudioError(f"startup rule '{rid}': source line must be a positive whole number", RULES_FILE)
    return Where(file=d["file"], at=d["at"], line=line, symbol=d.get("symbol"))


def _parse(d: Any) -> StartupRule:
    if not isinstance(d, dict):
        raise StudioError("every entry of 'startup' must be a mapping", RULES_FILE)
    rid = d.get("id")
    for key in ("id", "engine", "versions", "says"):
        if not isinstance(d.get(key), str) or not d[key]:
            raise StudioError(f"startup rule '{rid}': field '{key}' must be text", RULES_FILE)
    sources = d.get("source")
    if not isinstance(sources, list) or not sources:
        raise StudioError(f"startup rule '{rid}': 'source' must list where the rule was read", RULES_FILE)
    version_in("0.0.1", d["versions"])  # a malformed range is refused at load
    return StartupRule(id=d["id"], engine=d["engine"], versions=d["versions"], says=d["says"],
                       source=tuple(_where(s, d["id"]) for s in sources), params=dict(d.get("params") or {}))


@lru_cache(maxsize=1)
def startup_rules() -> dict[str, StartupRule]:
    """Every start-up rule by id.

    Raises
    ------
    StudioError
        The bundled rules file is missing or a record is malformed (the message names the field).
    """
    from studio.io.presets import presets_root, read_json

    data = read_json(presets_root().joinpath(*RULES_FILE.split("/")), RULES_FILE)
    entries = data.get("startup")
    if not isinstance(entries, list):
        raise StudioError("field 'startup' is missing or not a list", RULES_FILE)
    out: dict[str, StartupRule] = {}
    for d in entries:
        r = _parse(d)
        if r.id in out:
            raise StudioError(f"startup rule '{r.id}' is listed twice", RULES_FILE)
        out[r.id] = r
    return out


def rule(rule_id: str) -> StartupRule:
    """The start-up rule ``rule_id``.

    Raises
    ------
    StudioError
        No such rule in the bundled file.
    """
    table = startup_rules()
    if rule_id not in table:
        raise StudioError(f"startup rule '{rule_id}' is missing", RULES_FILE)
    return table[rule_id]
