"""Regenerate every picture in ``docs/images/`` that the README and the GUI docs show, and the
README's "How close to reality" table, from this checkout's code; ``--check`` says whether they
are stale, without drawing anything.

    python benchmarks/readme_figures.py            # redraw the pictures, rewrite the table and the manifest
    python benchmarks/readme_figures.py --check    # exit 1 if any is stale (tests/test_readme_figures.py)

What a picture shows depends on the engine's numbers. Comparing pixels would be slow and break
on another machine's fonts, so the script records in ``docs/images/figures.json`` (the manifest)
the numbers the pictures show (the bundled example's plan and the sweep's pick, as the window, the
Explorer and the report print them) and each picture's SHA-256. ``--check`` recomputes those
numbers headless (one evaluate and one sweep of the bundled example, ~0.1 s) and the README table
(``benchmarks/seed_figures.py``), and compares them with the manifest, the README and the files:
whoever changes the engine's numbers, a picture or the table by hand, fails it, and reruns this
script to make them agree again.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's code, not an installed copy
sys.path.insert(0, str(ROOT / "benchmarks"))

IMAGES = ROOT / "docs" / "images"
MANIFEST = IMAGES / "figures.json"
README = ROOT / "README.md"
BEGIN = "<!-- readme_figures: seed table (python benchmarks/readme_figures.py) -->"
END = "<!-- /readme_figures -->"

#: (file under docs/images, snapshot view, window size) of the window pictures.
WINDOWS: tuple[tuple[str, str, tuple[int, int]], ...] = (
    ("main-window-1366x768.png", "main", (1366, 768)),
    ("main-window-1920x1080.png", "main", (1920, 1080)),
    ("explorer-docked-1366x768.png", "explorer", (1366, 768)),
    ("explorer-docked-1920x1080.png", "explorer", (1920, 1080)),
    ("explorer-window-1366x768.png", "explorer-window", (1366, 768)),
    ("explorer-window-1920x1080.png", "explorer-window", (1920, 1080)),
)
#: The report pages drawn (1-based), each as ``report-page<N>.png``.
REPORT_PAGES = (1, 2, 3)
#: The Explorer's tabs of docs/explorer.md (``benchmarks/explorer.py``'s ``render_png``).
EXPLORER_TABS = ("explorer.png", "explorer-multiples.png", "explorer-compare.png", "explorer-placement.png")


def pictures() -> list[str]:
    """Every file this script draws, under docs/images."""
    return ([name for name, _v, _s in WINDOWS] + [f"report-page{n}.png" for n in REPORT_PAGES]
            + list(EXPLORER_TABS))


def shown_numbers() -> dict[str, str]:
    """The numbers the pictures show, as the window, the Explorer and the report print them:
    the bundled example's plan and the sweep's recommendation. Headless."""
    from studio.commands.options.project_args import load_base_project
    from studio.engine import evaluate, sweep

    project = load_base_project(None)
    plan = evaluate(project)
    s = sweep(project)
    return {
        "project": project.name,
        "layout": plan.layout.label,
        "fits": str(plan.fits),
        "ttft_ms": f"{plan.ttft_ms:.1f}",
        "tpot_ms": f"{plan.tpot_ms:.2f}",
        "tokens_per_s": f"{plan.output_tokens_per_s:,.0f}",
        "usd_per_million": f"{plan.usd_per_million_output_tokens:.2f}",
        "peak_memory_gib": f"{plan.peak_memory.total / 2**30:.1f}",
        "bubble": f"{plan.bubble_fraction:.0%}",
        "sweep_candidates": f"{len(s.order)}",
        "sweep_recommended": s.label(s.recommended) if s.recommended is not None else "none",
    }


def seed_table() -> str:
    """The README's "How close to reality" table (``benchmarks/seed_figures.py``), in Markdown."""
    from seed_figures import figures

    lines = ["| figure | concept card | engine (bundled presets) |", "|---|---|---|"]
    lines += [f"| {name} | {card} | {ours} |" for name, card, ours in figures()]
    return "\n".join(lines)


def _readme_block(text: str) -> str | None:
    if BEGIN not in text or END not in text:
        return None
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n")


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def check() -> list[str]:
    """What is stale (empty: nothing). Draws nothing; ~0.5 s of CPU."""
    problems: list[str] = []
    readme = README.read_text(encoding="utf-8")
    block = _readme_block(readme)
    if block is None:
        problems.append(f"README.md has no generated table between '{BEGIN}' and '{END}'")
    elif block != seed_table():
        problems.append("README.md's 'How close to reality' table differs from what the engine computes now")
    if not MANIFEST.is_file():
        return [*problems, f"{MANIFEST.relative_to(ROOT)} is missing"]
    manifest = json.loads(MANIFEST.read_text(encoding="utf-8"))
    now = shown_numbers()
    if manifest.get("numbers") != now:
        changed = {k: (manifest.get("numbers", {}).get(k), v) for k, v in now.items()
                   if manifest.get("numbers", {}).get(k) != v}
        problems.append(f"the pictures show other numbers than the engine computes now: {changed}")
    for name in pictures():
        path = IMAGES / name
        if not path.is_file():
            problems.append(f"docs/images/{name} is missing")
        elif manifest.get("sha256", {}).get(name) != _sha(path):
            problems.append(f"docs/images/{name} is not the picture this script drew")
    return problems


def draw() -> None:
    """Redraw every picture, rewrite the README table and the manifest."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from studio.gui.toolkit.resources import application
    from studio.gui.window.snapshot import render_main_window

    application()
    for name, view, size in WINDOWS:
        render_main_window(None, IMAGES / name, size, view=view)
        print(f"docs/images/{name}")
    from explorer import render_png

    from studio.gui.toolkit.resources import application as app

    render_png(app(), IMAGES / EXPLORER_TABS[0])
    print(*(f"docs/images/{n}" for n in EXPLORER_TABS), sep="\n")
    from studio.commands.options.project_args import load_base_project
    from studio.gui.report.writer import page_images
    from studio.service.report.report_content import gather

    pages = page_images(gather(load_base_project(None)), scale=1.25)
    for n in REPORT_PAGES:
        if n <= len(pages):
            pages[n - 1].save(str(IMAGES / f"report-page{n}.png"), "PNG")
            print(f"docs/images/report-page{n}.png")
    readme = README.read_text(encoding="utf-8")
    if _readme_block(readme) is None:
        raise SystemExit(f"README.md lacks the markers {BEGIN!r} ... {END!r} around the table")
    head, rest = readme.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    README.write_text(f"{head}{BEGIN}\n{seed_table()}\n{END}{tail}", encoding="utf-8")
    manifest = {
        "about": "written by benchmarks/readme_figures.py; --check compares it with the engine and the files",
        "numbers": shown_numbers(),
        "sha256": {name: _sha(IMAGES / name) for name in pictures() if (IMAGES / name).is_file()},
    }
    MANIFEST.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"README.md table, {MANIFEST.relative_to(ROOT)}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when a picture or the table is stale")
    args = ap.parse_args()
    if args.check:
        problems = check()
        for p in problems:
            print(f"stale: {p}", file=sys.stderr)
        if problems:
            print("run: python benchmarks/readme_figures.py", file=sys.stderr)
        return 1 if problems else 0
    draw()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
