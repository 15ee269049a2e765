"""Malformed and hostile project files give a StudioError naming the file and the place."""

from __future__ import annotations

import json

import pytest

from studio.core.errors import StudioError
from studio.core.project import SCHEMA_VERSION
from studio.io.project_file import load_project, project_from_bytes, project_from_json
from tests.robustness.golden_files import golden_files


@pytest.fixture(scope="module")
def good() -> dict:
    return json.loads((golden_files()[0]).read_text(encoding="utf-8-sig"))


def _error(data: object, source: str = "plan.json") -> str:
    with pytest.raises(StudioError) as info:
        project_from_json(json.dumps(data), source)
    assert info.value.source == source
    return info.value.message


def test_newer_file_says_so(good):
    msg = _error({**good, "schema_version": SCHEMA_VERSION + 1})
    assert f"newer Layout Studio (schema_version {SCHEMA_VERSION + 1})" in msg
    assert "Update Layout Studio" in msg


@pytest.mark.parametrize("version", [0, -3, "1", 1.0, True, None, [1]])
def test_bad_schema_version(good, version):
    assert "schema_version" in _error({**good, "schema_version": version})


def test_top_level_must_be_an_object():
    assert "not an array" in _error([1, 2])
    assert "not a string" in _error("hello")


def test_unknown_field_lists_allowed_ones(good):
    data = json.loads(json.dumps(good))
    data["workload"] = {"isl": 10, "osll": 5}
    msg = _error(data)
    assert "field 'workload.osll': unknown field; allowed here: isl, osl, batch" in msg


def test_unknown_nested_field_in_a_tuple_item(good):
    data = json.loads(json.dumps(good))
    data["cluster"]["nodes"][0]["gpus"][0]["colour"] = "red"
    msg = _error(data)
    assert "field 'cluster.nodes.0.gpus.0.colour': unknown field; allowed here: id, type, slot" in msg


def test_enum_error_names_allowed_values(good):
    data = {**good, "serving": {"runtime": "ollama"}}
    msg = _error(data)
    assert "field 'serving.runtime'" in msg and "'vllm', 'trtllm' or 'sglang'" in msg
    assert "(got 'ollama')" in msg


def test_missing_required_field(good):
    data = {k: v for k, v in good.items() if k != "model"}
    assert "field 'model': is missing (required)" in _error(data)


def test_wrong_type_shows_the_value(good):
    data = json.loads(json.dumps(good))
    data["layout"]["tp"] = "eight"
    assert "field 'layout.tp': Input should be a valid integer" in _error(data)


def test_dangling_link_is_named(good):
    data = json.loads(json.dumps(good))
    data["cluster"]["links"][0]["b"] = "nowhere"
    assert "ends at 'nowhere', which is no GPU, switch or NIC" in _error(data)


def test_json_syntax_error_has_line_and_column(tmp_path):
    f = tmp_path / "broken.json"
    f.write_text('{\n  "schema_version": 1,\n  "name": "x",\n}\n')
    with pytest.raises(StudioError) as info:
        load_project(f)
    assert str(info.value).startswith(str(f))
    assert "line 4 column 1" in info.value.message


def test_binary_garbage_and_truncation(good):
    with pytest.raises(StudioError, match="not UTF-8"):
        project_from_bytes(b"\x80\x04\x95pickle", "p.json")
    text = json.dumps(good)
    with pytest.raises(StudioError, match="not valid JSON"):
        project_from_bytes(text[: len(text) // 2].encode(), "p.json")


def test_pickle_and_code_are_just_data(good, tmp_path):
    # A string that looks like code stays a string: nothing is evaluated.
    marker = tmp_path / "owned"
    data = {**good, "name": f"__import__('os').system('touch {marker}')"}
    p = project_from_json(json.dumps(data))
    assert p.name.startswith("__import__") and not marker.exists()


def test_oversized_file_is_refused_without_reading(tmp_path, monkeypatch):
    from studio.io import project_file

    monkeypatch.setattr(project_file, "MAX_PROJECT_BYTES", 1000)
    f = tmp_path / "big.json"
    f.write_bytes(b" " * 1001)
    with pytest.raises(StudioError, match="project file is 1001 bytes; at most 1000 bytes"):
        load_project(f)


def test_deep_nesting_in_a_project(good):
    bomb = json.dumps({**good, "description": 0}).replace('"description": 0', '"description": ' + "[" * 5000 + "]" * 5000)
    with pytest.raises(StudioError, match="nests 5001 levels deep"):
        project_from_json(bomb, "deep.json")


def test_missing_file_and_folder(tmp_path):
    with pytest.raises(StudioError, match="project file not found"):
        load_project(tmp_path / "nope.json")
    with pytest.raises(StudioError, match="folder"):
        load_project(tmp_path)
