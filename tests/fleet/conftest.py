"""The documented example of docs/fleet.md: Llama-3.1-70B on 2 × DGX H100, TP4 replicas."""

from __future__ import annotations

import pytest

from studio.cli import build_parser
from studio.commands.options.project_args import project_from_args

EXAMPLE = ("--gpu", "h100-sxm", "--nodes", "2", "--model", "llama-3.1-70b", "--tp", "4")


def project_of(*argv: str):
    ns = build_parser(["studio.commands.simulate"]).parse_args(["simulate", *argv])
    return project_from_args(ns)


@pytest.fixture(scope="module")
def example():
    return project_of(*EXAMPLE)
