"""Engine config files as YAML text, keys in the order given."""

from __future__ import annotations

import yaml


class _Dumper(yaml.SafeDumper):
    """SafeDumper that indents lists under their key (easier to read)."""

    def increase_indent(self, flow: bool = False, indentless: bool = False):
        return super().increase_indent(flow, False)


def dump_yaml(data: object) -> str:
    """YAML text of ``data`` with the keys in the order given (``safe_dump``, no sorting)."""
    return yaml.dump(
        data, Dumper=_Dumper, sort_keys=False, default_flow_style=False, allow_unicode=True, width=100
    )
