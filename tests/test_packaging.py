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


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel installed with pip into a temporary folder (``site``; its console script in
    ``site/bin``), shared by the tests of this module."""
    site = tmp_path_factory.mktemp("install") / "site"
    subprocess.run(
        # --no-compile: the probes import a few modules; byte-compiling all of them at install took a
        # third of the install
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--no-compile", "--disable-pip-version-check",
         "--target", str(site), str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return site


def _installed_env(site: Path) -> dict[str, str]:
    """The environment of a process of the installed wheel: only its ``site`` importable, and its
    preset cache (studio/io/preset_cache.py) in a folder beside it. Without
    ``LAYOUT_STUDIO_CACHE_DIR`` the installed studio kept its cache in the user's own cache folder
    (``~/.cache/layout-studio``), which a test run never writes (tests/conftest.py)."""
    return {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin", "PYTHONNOUSERSITE": "1",
            "LAYOUT_STUDIO_CACHE_DIR": str(site.parent / "preset-cache")}


def test_installed_package_finds_every_preset(installed: Path, tmp_path: Path) -> None:
    site = installed
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
    env = _installed_env(site)
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


def _imported(argv: list[str], site: Path, cwd: Path) -> set[str]:
    """The modules a process imports (``PYTHONPROFILEIMPORTTIME``: one stderr line per import)."""
    env = {**_installed_env(site), "PYTHONPROFILEIMPORTTIME": "1", "LAYOUT_STUDIO_NO_CACHE": "1"}
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [ln for ln in done.stderr.splitlines() if ln.startswith("import time:") and "|" in ln]
    names = {ln.rsplit("|", 1)[1].strip() for ln in lines[1:]}  # the first line is the header
    assert names, done.stderr[-2000:]
    return names


#: What ``python -m`` imports to run a module, and the installed script does not.
RUN_AS_MODULE = {"runpy", "pkgutil", "importlib.machinery", "importlib.util", "importlib._abc"}


def test_the_installed_command_takes_the_modules_fast_path(installed: Path, tmp_path: Path) -> None:
    """``layout-studio`` (the console script pip wrote) starts as ``python -m studio.cli`` does: the
    same modules, so none of the start-up savings (pydantic's plugin loader stood in for, no
    ``importlib.metadata``) is lost to the installed command."""
    script = installed / "bin" / "layout-studio"
    assert script.is_file(), sorted(p.name for p in (installed / "bin").iterdir())
    argv = ["presets", "gpus"]
    as_script = _imported([sys.executable, str(script), *argv], installed, tmp_path)
    # run as __main__, the module's own file is not imported under its name
    as_module = _imported([sys.executable, "-m", "studio.cli", *argv], installed, tmp_path) | {"studio.cli"}
    assert "importlib.metadata" not in as_script, "the installed command loads pydantic's plugin loader"
    assert as_script - as_module == set()
    assert as_module - as_script <= RUN_AS_MODULE


#: Two of the README's command lines that name bundled files by id, run as a user of the installed
#: wheel runs them, outside the checkout: the list and a sample read from the wheel's own data (the
#: other ids are run in process by tests/cli/test_cli_examples.py).
README_ID_COMMANDS = ("layout-studio examples", "layout-studio import-topo ")


def test_the_readmes_commands_that_name_bundled_files_run_from_the_installed_wheel(installed: Path, tmp_path: Path) -> None:
    import shlex

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    lines = [ln.split("  #")[0].strip() for ln in readme.splitlines() if ln.startswith(README_ID_COMMANDS)]
    assert len(lines) == len(README_ID_COMMANDS), lines
    script = str(installed / "bin" / "layout-studio")
    for line in lines:
        argv = shlex.split(line)[1:]
        done = subprocess.run([sys.executable, script, *argv], cwd=tmp_path, env=_installed_env(installed),
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and done.stderr == "", (line, done.stderr[-1000:])
    assert json.loads((tmp_path / "mine.json").read_text(encoding="utf-8"))["cluster"]["nodes"]
