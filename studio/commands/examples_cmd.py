"""``layout-studio examples``: the bundled example projects and sample input files, each with the
id a command accepts in place of a file, and ``layout-studio examples ID``: one example's text."""

from __future__ import annotations

import argparse

from studio.commands.output import print_json


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``examples`` command."""
    p = subparsers.add_parser(
        "examples",
        help="list the bundled example projects and sample topology / nccl-tests files",
        description="List the bundled examples. Every command that takes a PROJECT file accepts an "
        "example project's id in its place (`layout-studio sweep l40s-8x-llama-70b-fp8`), and "
        "import-topo and calibrate nccl accept a sample's id in place of their input file. With ID, "
        "print that example's text (`layout-studio examples ID > mine.json` copies it to edit).",
    )
    p.add_argument("id", nargs="?", metavar="ID", help="print this example's file instead of the list")
    p.add_argument("--json", action="store_true", help="print the list as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the list, or one example's text."""
    from studio.io.examples import example_text, list_examples

    if args.id:
        print(example_text(args.id), end="")
        return 0
    examples = list_examples()
    if args.json:
        print_json([{"id": e.id, "kind": e.kind, "title": e.title, "try": e.try_command} for e in examples])
        return 0
    width = max(len(e.id) for e in examples)
    kinds = list(dict.fromkeys(e.kind for e in examples))
    for i, kind in enumerate(kinds):
        heading = "example projects (in place of PROJECT)" if kind == "project" else f"sample {kind} files"
        print(("\n" if i else "") + heading + ":")
        for e in (e for e in examples if e.kind == kind):
            print(f"  {e.id:<{width}}  {e.title}")
            if e.try_command:
                print(f"  {'':<{width}}  try: {e.try_command}")
    return 0
