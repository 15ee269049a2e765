"""Fuzzing: more than 10,000 generated and mutated project files, and mutated ``config.json``
files, thrown at the loaders. The only exception allowed out is :class:`StudioError`.

Seeds are the golden project files (the bundled examples among them) and real
``config.json`` files. Mutations: deleted keys, wrong types, huge and negative numbers, deep
nesting, duplicated items, emptied containers, and byte-level damage (flips, insertions,
truncation, random bytes). Runs derandomised so CI is reproducible.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from studio.core.errors import StudioError
from studio.io.project_file import load_project, project_from_bytes, project_from_json
from tests.property_budget import examples
from tests.robustness.golden_files import golden_files

HF_DIR = Path(__file__).parent / "data" / "hf-configs"
PROJECT_SEEDS = [p.read_bytes() for p in golden_files(1)]  # bundled examples are copied in there
PROJECT_TEXTS = [raw.decode("utf-8-sig") for raw in PROJECT_SEEDS]
CONFIG_TEXTS = [p.read_text(encoding="utf-8") for p in sorted(HF_DIR.glob("*.config.json"))]

FUZZ = settings(
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

Path_ = tuple[Any, ...]


def _paths(node: Any, prefix: Path_ = ()) -> list[Path_]:
    """Every location in a decoded JSON document (containers and leaves), root excluded."""
    out: list[Path_] = []
    stack = [(node, prefix)]
    while stack:
        current, where = stack.pop()
        items = current.items() if isinstance(current, dict) else enumerate(current) if isinstance(current, list) else ()
        for key, child in items:
            out.append(where + (key,))
            stack.append((child, where + (key,)))
    return out


PROJECT_PATHS = [_paths(json.loads(t)) for t in PROJECT_TEXTS]
CONFIG_PATHS = [_paths(json.loads(t)) for t in CONFIG_TEXTS]

leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.sampled_from([0, -1, 10**6, 10**9, 10**18, 1e308, -1e308, 5e-324, "", "auto", "nvlink4", "h100-sxm"]),
)
json_values = st.one_of(
    leaves,
    st.lists(leaves, max_size=3),
    st.dictionaries(st.text(max_size=6), leaves, max_size=3),
    st.dictionaries(st.text(max_size=4), st.lists(leaves, max_size=2), max_size=2),
)
OPS = ("delete", "replace", "nest", "duplicate", "empty", "stringify", "rename")
mutations = st.lists(
    st.tuples(st.sampled_from(OPS), st.integers(min_value=0, max_value=2**31), json_values, st.integers(1, 200)),
    min_size=1,
    max_size=4,
)


def _resolve(doc: Any, path: Path_) -> tuple[Any, Any] | None:
    """(parent container, key) of ``path`` in ``doc``, or None if it no longer exists."""
    node = doc
    for key in path[:-1]:
        try:
            node = node[key]
        except (KeyError, IndexError, TypeError):
            return None
    if isinstance(node, dict) and path[-1] in node:
        return node, path[-1]
    if isinstance(node, list) and isinstance(path[-1], int) and path[-1] < len(node):
        return node, path[-1]
    return None


def _mutate(doc: Any, paths: list[Path_], muts: list[tuple[str, int, Any, int]]) -> Any:
    for op, pick, value, depth in muts:
        found = _resolve(doc, paths[pick % len(paths)])
        if found is None:
            continue
        parent, key = found
        old = parent[key]
        if op == "delete":
            del parent[key]
        elif op == "replace":
            parent[key] = value
        elif op == "nest":
            wrapped: Any = old
            for _ in range(depth):
                wrapped = [wrapped]
            parent[key] = wrapped
        elif op == "duplicate" and isinstance(parent, list):
            parent.insert(key, json.loads(json.dumps(old)))
        elif op == "empty":
            parent[key] = type(old)() if isinstance(old, (dict, list, str)) else None
        elif op == "stringify":
            parent[key] = json.dumps(old)
        elif op == "rename" and isinstance(parent, dict):
            parent[f"{key}_"] = parent.pop(key)
    return doc


def _load(text: str, source: str = "fuzz.json") -> None:
    try:
        project_from_json(text, source)
    except StudioError as exc:
        assert exc.message and exc.source == source


@settings(FUZZ, max_examples=examples(5000))
@given(seed=st.integers(0, len(PROJECT_TEXTS) - 1), muts=mutations)
def test_structurally_mutated_projects(seed, muts):
    doc = _mutate(json.loads(PROJECT_TEXTS[seed]), PROJECT_PATHS[seed], muts)
    _load(json.dumps(doc))


byte_edits = st.lists(
    st.tuples(st.sampled_from(("flip", "insert", "delete", "truncate", "overwrite")), st.integers(0, 2**31), st.binary(min_size=1, max_size=6)),
    min_size=1,
    max_size=3,
)


def _damage(raw: bytes, edits: list[tuple[str, int, bytes]]) -> bytes:
    data = bytearray(raw)
    for op, pick, blob in edits:
        if not data:
            data.extend(blob)
            continue
        at = pick % len(data)
        if op == "flip":
            data[at] ^= blob[0] or 1
        elif op == "insert":
            data[at:at] = blob
        elif op == "delete":
            del data[at : at + len(blob)]
        elif op == "truncate":
            del data[at:]
        else:
            data[at : at + len(blob)] = blob
    return bytes(data)


@settings(FUZZ, max_examples=examples(3500))
@given(seed=st.integers(0, len(PROJECT_SEEDS) - 1), edits=byte_edits)
def test_byte_damaged_projects(seed, edits):
    raw = _damage(PROJECT_SEEDS[seed], edits)
    try:
        project_from_bytes(raw, "damaged.json")
    except StudioError as exc:
        assert exc.source == "damaged.json"


top_keys = st.sampled_from(
    ["schema_version", "name", "description", "cluster", "model", "model_ref", "workload", "serving", "layout", "pinned", "calibrations", "extra"]
)
generated_projects = st.dictionaries(top_keys, json_values, max_size=8).map(
    lambda d: d if "schema_version" in d and d.get("extra") is None else {**d, "schema_version": 1}
)


@settings(FUZZ, max_examples=examples(1500))
@given(doc=generated_projects | st.binary(max_size=64).map(lambda b: b.decode("latin-1")) | json_values)
def test_generated_projects(doc):
    _load(doc if isinstance(doc, str) else json.dumps(doc))


def test_random_bytes_on_disk(tmp_path):
    """load_project (file reading included) on a few damaged files."""
    for i, seed in enumerate(PROJECT_SEEDS):
        f = tmp_path / f"d{i}.json"
        f.write_bytes(seed[: len(seed) // 3] + b"\x00\xff" + seed[len(seed) // 3 :])
        try:
            load_project(f)
        except StudioError as exc:
            assert exc.source == str(f)


def _config(text_or_doc: Any, source: str = "config.json") -> None:
    from studio.io.importers.hf_config import architecture_from_config

    try:
        architecture_from_config(text_or_doc, model_id="fuzz", name="fuzz", source=source)
    except StudioError as exc:
        assert exc.source == source


@settings(FUZZ, max_examples=examples(1500))
@given(seed=st.integers(0, len(CONFIG_TEXTS) - 1), muts=mutations)
def test_mutated_hf_configs(seed, muts):
    _config(_mutate(json.loads(CONFIG_TEXTS[seed]), CONFIG_PATHS[seed], muts))


@settings(FUZZ, max_examples=examples(500))
@given(seed=st.integers(0, len(CONFIG_TEXTS) - 1), edits=byte_edits)
def test_byte_damaged_hf_config_files(tmp_path_factory, seed, edits):
    from studio.io.importers.hf_config import load_model_config

    folder = tmp_path_factory.mktemp("cfg", numbered=True)
    f = folder / "config.json"
    f.write_bytes(_damage(CONFIG_TEXTS[seed].encode(), edits))
    try:
        load_model_config(f)
    except StudioError as exc:
        assert exc.source is not None


def test_seeds_themselves_load():
    for text in PROJECT_TEXTS:
        project_from_json(text)
    for text in CONFIG_TEXTS:
        _config(json.loads(text))


def test_nesting_bomb_in_config_json(tmp_path):
    from studio.io.importers.hf_config import load_model_config

    f = tmp_path / "config.json"
    f.write_text('{"model_type": "llama", "x": ' + "[" * 200_000 + "]" * 200_000 + "}")
    try:
        load_model_config(f)
    except StudioError as exc:
        assert exc.source == str(f)
    else:
        raise AssertionError("a nesting bomb must not load")
