"""Hostile project files given to the command line: exit code 2, a message naming the file and
the place, no traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from studio.cli import main
from tests.robustness.golden_files import GOLDEN

ROOT = Path(__file__).resolve().parents[2]
GOOD = json.loads((GOLDEN / "v1" / "dgx-h100-2node.json").read_text(encoding="utf-8"))

CASES = {
    "nesting-bomb": ("[" * 100_000 + "]" * 100_000).encode(),
    "newer": json.dumps({**GOOD, "schema_version": 99}).encode(),
    "binary": bytes(range(256)) * 4,
    "nan": json.dumps(GOOD).replace('"isl": 2048', '"isl": NaN').encode(),
    "bad-enum": json.dumps({**GOOD, "serving": {"runtime": "ollama"}}).encode(),
    "syntax": b'{"schema_version": 1,,}',
}
EXPECT = {
    "nesting-bomb": "nests 100000 levels deep",
    "newer": "newer Layout Studio (schema_version 99)",
    "binary": "not UTF-8",
    "nan": "only finite numbers",
    "bad-enum": "field 'serving.runtime'",
    "syntax": "line 1 column 22",
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_plan_command_on_hostile_file(case, tmp_path, capsys):
    f = tmp_path / f"{case}.json"
    f.write_bytes(CASES[case])
    assert main(["plan", str(f)]) == 2
    err = capsys.readouterr().err
    assert str(f) in err and EXPECT[case] in err
    assert "Traceback" not in err


def test_real_process_exit_code(tmp_path):
    f = tmp_path / "bomb.json"
    f.write_bytes(CASES["nesting-bomb"])
    proc = subprocess.run(
        [sys.executable, "-c", "import sys; from studio.cli import main; sys.exit(main(sys.argv[1:]))", "plan", str(f)],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 2
    assert "nests 100000 levels deep" in proc.stderr and "Traceback" not in proc.stderr
