"""The wheel carries every preset and resource, and the installed package finds them.

Builds a wheel from this checkout (its PEP 517 backend, hatchling, no network), installs it with pip into a temporary folder,
and imports it from there in a subprocess whose working directory is outside the checkout, so the
source tree cannot be found by accident.
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow  # builds and installs the wheel

pytest.importorskip("hatchling", reason="hatchling (test extra) builds the wheel")


def _build_backend() -> str:
    """The PEP 517 build backend pyproject.toml names (``[build-system] build-backend``)."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        from pip._vendor import tomli as tomllib
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["build-system"]["build-backend"]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel the checkout's build backend makes, called as a PEP 517 front end calls it (what
    ``pip wheel --no-build-isolation`` does, without loading pip: a third of the CPU), in a fresh
    interpreter whose working directory is the checkout."""
    out = tmp_path_factory.mktemp("wheel")
    backend = _build_backend()
    build = f"import {backend} as b, sys; print(b.build_wheel(sys.argv[1]))"
    done = subprocess.run(
        [sys.executable, "-c", build, str(out)], cwd=ROOT, check=True, capture_output=True, text=True,
        timeout=300,
    )
    wheels = list(out.glob("layout_studio-*.whl"))
    assert [w.name for w in wheels] == [done.stdout.strip().splitlines()[-1]]
    return wheels[0]


def _data_files(folder: str) -> set[str]:
    base = ROOT / folder
    return {p.relative_to(base).as_posix() for p in base.rglob("*") if p.is_file() and "__pycache__" not in p.parts}


def test_wheel_holds_every_preset_and_resource(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for folder in ("presets", "resources"):
        expected = _data_files(folder)
        assert expected, f"{folder}/ is empty"
        missing = sorted(f for f in expected if f"studio/_data/{folder}/{f}" not in names)
        assert not missing, f"wheel lacks {folder}/ files: {missing[:5]}"


def test_installed_package_finds_every_preset(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    subprocess.run(
        # --no-compile: the probe imports a few modules; byte-compiling all of them at install took a
        # third of the install
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--no-compile", "--disable-pip-version-check",
         "--target", str(site), str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    probe = r"""
import json, studio
from studio.io import presets
from studio.engine.step import constants
cat = presets.load_catalog()
root = presets.presets_root()
print(json.dumps({
    "studio": studio.__file__,
    "root": str(root),
    "gpus": sorted(cat.gpus), "links": sorted(cat.links), "nodes": sorted(cat.nodes),
    "models": sorted(cat.models), "examples": sorted(presets.example_paths()),
    "icons": sorted(p.name for p in (presets.resources_root() / "icons").iterdir()),
    "constants": type(constants.default_constants()).__name__,
}))
"""
    env = {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin", "PYTHONNOUSERSITE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["studio"].startswith(str(site)), "imported the checkout, not the installed wheel"
    assert "_data" in got["root"]
    src = json.loads((ROOT / "presets" / "gpus.json").read_text())["gpus"]
    assert got["gpus"] == sorted(g["id"] for g in src)
    assert got["models"] == sorted(p.stem for p in (ROOT / "presets" / "models").glob("*.json"))
    assert got["examples"] == sorted(p.stem for p in (ROOT / "presets" / "examples").glob("*.json"))
    assert got["icons"] == sorted(p.name for p in (ROOT / "resources" / "icons").iterdir())
    assert len(got["links"]) >= 19 and len(got["nodes"]) >= 10
