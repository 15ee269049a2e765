"""The migration machinery, exercised with synthetic registered migrations (chains included)."""

from __future__ import annotations

import copy
import json

import pytest

from studio.core import project as project_module
from studio.core.errors import StudioError
from studio.core.project import migrate
from studio.io.project_file import project_from_json, project_to_json
from tests.robustness.golden_files import golden_files


@pytest.fixture()
def v1_text() -> str:
    return golden_files()[0].read_text(encoding="utf-8-sig")


def _to_v2(data: dict) -> dict:
    # A made-up version 2: the project name moved under "meta".
    data["meta"] = {"title": data.pop("name")}
    return data


def _to_v3(data: dict) -> dict:
    # A made-up version 3: back to the flat name, upper-cased to prove both steps ran in order.
    data["name"] = data.pop("meta")["title"].upper()
    return data


def test_registry_of_the_current_schema_is_complete():
    for v in range(1, project_module.SCHEMA_VERSION):
        assert v in project_module.MIGRATIONS, f"no migration from schema_version {v}"
    assert all(1 <= v < project_module.SCHEMA_VERSION for v in project_module.MIGRATIONS)


def test_chain_runs_every_step_in_order(monkeypatch, v1_text):
    monkeypatch.setattr(project_module, "SCHEMA_VERSION", 3)
    monkeypatch.setattr(project_module, "MIGRATIONS", {1: _to_v2, 2: _to_v3})
    data = json.loads(v1_text)
    original = copy.deepcopy(data)
    out = migrate(data, "old.json")
    assert out["schema_version"] == 3
    assert out["name"] == original["name"].upper()
    assert "meta" not in out
    assert data == original, "migrate must not modify its input"


def test_in_place_migration_upgrades_the_handed_over_data_itself(monkeypatch, v1_text):
    """A loader that decoded the file itself hands it over (``in_place=True``): no copy is made,
    and the result is what a copying migration gives."""
    monkeypatch.setattr(project_module, "SCHEMA_VERSION", 3)
    monkeypatch.setattr(project_module, "MIGRATIONS", {1: _to_v2, 2: _to_v3})
    data = json.loads(v1_text)
    copied = migrate(json.loads(v1_text), "old.json")
    assert migrate(data, "old.json", in_place=True) is data
    assert data == copied


def test_middle_of_chain_starts_at_its_own_version(monkeypatch, v1_text):
    monkeypatch.setattr(project_module, "SCHEMA_VERSION", 3)
    monkeypatch.setattr(project_module, "MIGRATIONS", {1: _to_v2, 2: _to_v3})
    v2 = _to_v2(json.loads(v1_text))
    v2["schema_version"] = 2
    assert migrate(v2)["name"] == json.loads(v1_text)["name"].upper()


def test_migrated_file_loads_end_to_end(monkeypatch, v1_text):
    monkeypatch.setattr(project_module, "SCHEMA_VERSION", 2)
    monkeypatch.setattr(project_module, "MIGRATIONS", {1: lambda d: {**d, "name": d["name"] + " (upgraded)"}})
    p = project_from_json(v1_text, "old.json")
    assert p.schema_version == 2
    assert p.name.endswith(" (upgraded)")
    assert json.loads(project_to_json(p))["schema_version"] == 2


def test_gap_in_chain_is_a_clear_error(monkeypatch, v1_text):
    monkeypatch.setattr(project_module, "SCHEMA_VERSION", 3)
    monkeypatch.setattr(project_module, "MIGRATIONS", {1: _to_v2})
    with pytest.raises(StudioError, match="cannot upgrade schema_version 2: no migration to version 3"):
        migrate(json.loads(v1_text), "old.json")


def test_failing_step_names_the_step(monkeypatch, v1_text):
    monkeypatch.setattr(project_module, "SCHEMA_VERSION", 3)
    monkeypatch.setattr(project_module, "MIGRATIONS", {1: _to_v2, 2: _to_v3})
    data = json.loads(v1_text)
    del data["name"]
    with pytest.raises(StudioError) as info:
        migrate(data, "old.json")
    assert "from schema_version 1 to 2: KeyError: 'name'" in info.value.message
    assert info.value.source == "old.json"


def test_step_returning_garbage_is_refused(monkeypatch, v1_text):
    monkeypatch.setattr(project_module, "SCHEMA_VERSION", 2)
    monkeypatch.setattr(project_module, "MIGRATIONS", {1: lambda d: [d]})
    with pytest.raises(StudioError, match="returned an array, not an object"):
        migrate(json.loads(v1_text))


def test_newer_than_synthetic_current(monkeypatch, v1_text):
    monkeypatch.setattr(project_module, "SCHEMA_VERSION", 2)
    data = {**json.loads(v1_text), "schema_version": 3}
    with pytest.raises(StudioError, match=r"newer Layout Studio \(schema_version 3\); this version reads up to 2"):
        migrate(data)


def test_current_version_passes_through_unchanged(v1_text):
    data = migrate(json.loads(v1_text))
    assert data["schema_version"] == project_module.SCHEMA_VERSION
    assert migrate(data) is data
