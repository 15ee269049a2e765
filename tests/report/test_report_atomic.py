"""Reports go through the one atomic writer (issue 37): a failed write of the PDF or the HTML
raises (exit 2 on the command line) and leaves the old file whole; a link at the target is
replaced; text from the project cannot reorder the report's lines."""

from __future__ import annotations

import dataclasses
import os

import pytest

from studio.core.errors import StudioError


def _full_disk(_fd):
    raise OSError(27, "File too large")


@pytest.fixture
def shared_pdf(monkeypatch, data, pictures, pdf_bytes, shared_build) -> None:
    """Writing the example's report as PDF lays out the run's one PDF of it (the session's
    ``pdf_bytes``, written by the same writer from the same figures and pictures) instead of
    laying the same pages out again (~0.3 s of CPU each); the write itself is the real one."""
    from studio.gui.report import writer

    real = writer.pdf_bytes

    def pdf(d, pics=None):
        return pdf_bytes if d is data and pics is pictures else real(d, pics)

    monkeypatch.setattr(writer, "pdf_bytes", pdf)


@pytest.mark.parametrize("suffix", [".pdf", ".html"])
def test_a_failed_report_write_keeps_the_old_file(suffix, tmp_path, monkeypatch, data, shared_pdf):
    from studio.gui.report import write_report

    out = tmp_path / f"r{suffix}"
    out.write_text("OLD", encoding="utf-8")
    monkeypatch.setattr(os, "fsync", _full_disk)
    with pytest.raises(StudioError, match="File too large"):
        write_report(data, out)
    monkeypatch.undo()
    assert out.read_text(encoding="utf-8") == "OLD"
    assert sorted(p.name for p in tmp_path.iterdir()) == [out.name]  # no temporary file left


def test_a_pdf_report_replaces_a_link_with_a_whole_pdf(tmp_path, data, shared_pdf):
    from studio.gui.report import write_report

    victim = tmp_path / "victim"
    victim.write_text("mine", encoding="utf-8")
    out = tmp_path / "r.pdf"
    out.symlink_to(victim)
    write_report(data, out)
    assert victim.read_text(encoding="utf-8") == "mine" and not out.is_symlink()
    raw = out.read_bytes()
    assert raw.startswith(b"%PDF") and raw.rstrip().endswith(b"%%EOF")


def test_bidirectional_controls_in_project_text_are_neutralised_in_html(data):
    from studio.gui.report.document import Images, build_html

    evil = "plan \u202egnp.exe\u2066 \u2028x\x1b[2J"
    project = data.project.replace(name=evil, description=evil)
    html = build_html(dataclasses.replace(data, project=project), Images(src=lambda _n: "x.png", width=100))
    for ch in ("\u202e", "\u2066", "\u2028", "\x1b"):
        assert ch not in html
    assert "\\u202egnp.exe" in html


#: The reports the size-limit test writes, one per format.
_LIMITED = (".pdf", ".html")

#: The child of the size-limit test: ``layout-studio report`` once per ``-o`` given, in one process
#: under the limit (starting Python and Qt and importing the studio twice cost ~1.5 s of CPU); the
#: exit code and stderr of each, as JSON on stdout.
_REPORT_EACH = """
import contextlib, io, json, sys
from studio.cli import main

results = []
for out in sys.argv[1:]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(["report", "--gpu", "h100-sxm", "--nodes", "1", "--model", "llama-3.1-8b", "-o", out])
    results.append((code, err.getvalue()))
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def limited_reports(tmp_path_factory):
    """Each of :data:`_LIMITED`'s reports written over an old file (alone in its folder) by the
    command line with a file size limit of 3,000 bytes: ``{suffix: (path, exit code, stderr)}``."""
    import json
    import resource
    import subprocess
    import sys
    from pathlib import Path

    outs = {}
    for suffix in _LIMITED:
        out = tmp_path_factory.mktemp("limited") / f"r{suffix}"
        out.write_text("OLD\n", encoding="utf-8")
        outs[suffix] = out

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (3000, 3000))

    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run(
        [sys.executable, "-c", _REPORT_EACH, *map(str, outs.values())],
        cwd=tmp_path_factory.mktemp("cwd"), capture_output=True, text=True, preexec_fn=limit, timeout=300,
        # under the limit, a bytecode file the child wrote would be cut at 3,000 bytes and still
        # put in place (a later import would fail on it): the child reads byte code, never writes it
        env={**os.environ, "PYTHONPATH": str(root), "QT_QPA_PLATFORM": "offscreen", "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout.splitlines()[-1])
    return {suffix: (out, code, err) for (suffix, out), (code, err) in zip(outs.items(), results, strict=True)}


@pytest.mark.parametrize("suffix", _LIMITED)
def test_a_report_past_the_file_size_limit_exits_2_and_keeps_the_old_file(suffix, limited_reports):
    """The issue's reproduction as a user meets it: ``prlimit --fsize=3000 layout-studio report -o
    r.pdf`` exited 0 leaving 3,000 bytes of PDF (the HTML: exit 2, the old file already cut)."""
    out, code, stderr = limited_reports[suffix]
    assert code == 2, stderr
    assert str(out) in stderr and "File too large" in stderr
    assert out.read_text(encoding="utf-8") == "OLD\n"
    assert sorted(p.name for p in out.parent.iterdir()) == [out.name]
