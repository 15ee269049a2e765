"""One finding of ``export --check``: what would fail, or differ from the plan, when the engine starts."""

from __future__ import annotations

from dataclasses import dataclass

from studio.io.export.shell import one_line


@dataclass(frozen=True)
class Finding:
    """One thing that would fail, or differ from the plan, when the engine starts."""

    severity: str  # "error": the engine refuses it or serves another layout; "warning"
    key: str  # the config key, flag or variable concerned
    message: str
    source: str  # engine version and source file of the rule (or the engine class)

    def line(self) -> str:
        """One printable line (user text escaped)."""
        return one_line(f"{self.severity}: {self.key}: {self.message} [{self.source}]")
