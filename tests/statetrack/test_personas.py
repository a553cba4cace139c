"""Persona tables: the shipped pool, the loader's errors, seeded sampling, profiles."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from amemgym.errors import BackendUnavailable, DataError
from amemgym.families.statetrack.generate.personas import (
    Persona,
    load_personas,
    make_name,
    sample_personas,
    to_user_profile,
)

ROW = {
    "uuid": "u-1",
    "name": "Ada Test",
    "age": 40,
    "sex": "Female",
    "marital_status": "married",
    "education_level": "bachelors",
    "occupation": "software_developer",
    "hobbies_and_interests": "chess",
    "skills_and_expertise": "Python",
    "persona": "A careful developer.",
}


def _write(path: Path, rows: list[object]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_shipped_pool_is_large_and_varied() -> None:
    pool = load_personas()
    assert len(pool) >= 30
    assert min(p.age for p in pool) <= 19 and max(p.age for p in pool) >= 78
    assert len({p.occupation for p in pool}) >= 25
    assert len({p.country for p in pool}) >= 15
    assert len({p.uuid for p in pool}) == len(pool)
    assert any(not p.has_job for p in pool) and sum(p.has_job for p in pool) >= 20


def test_bad_row_names_file_line_and_field(tmp_path: Path) -> None:
    path = _write(tmp_path / "p.jsonl", [ROW, {**ROW, "uuid": "u-2", "age": "old"}])
    with pytest.raises(DataError, match=r"p\.jsonl: line 2: field 'age'"):
        load_personas(path)


def test_missing_required_field_is_named(tmp_path: Path) -> None:
    row = {k: v for k, v in ROW.items() if k != "persona"}
    with pytest.raises(DataError, match=r"line 1: field 'persona': required field is missing"):
        load_personas(_write(tmp_path / "p.jsonl", [row]))


def test_invalid_json_and_duplicates_are_reported(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(ROW) + "\n{not json\n", encoding="utf-8")
    with pytest.raises(DataError, match="line 2: not valid JSON"):
        load_personas(bad)
    with pytest.raises(DataError, match="line 2: field 'uuid': duplicate of line 1"):
        load_personas(_write(tmp_path / "dup.jsonl", [ROW, ROW]))
    with pytest.raises(DataError, match="no such persona file"):
        load_personas(tmp_path / "missing.jsonl")


def test_nemotron_style_row_without_name_gets_a_stable_one(tmp_path: Path) -> None:
    row = {k: v for k, v in ROW.items() if k != "name"}
    row |= {"hobbies_and_interests": ["chess", "go"], "zipcode": "1"}
    (persona,) = load_personas(_write(tmp_path / "n.jsonl", [row]))
    assert persona.name == make_name("u-1", "Female") and len(persona.name.split()) == 2
    assert persona.gender == "Female" and persona.hobbies_and_interests == "chess, go"


def test_sampling_is_seeded_without_replacement_and_honours_exclusions() -> None:
    pool = load_personas()
    a = sample_personas(pool, 10, seed=3)
    assert a == sample_personas(pool, 10, seed=3) and a != sample_personas(pool, 10, seed=4)
    assert len({p.uuid for p in a}) == 10
    rest = sample_personas(pool, len(pool) - 10, seed=3, exclude_ids=[p.uuid for p in a])
    assert not {p.uuid for p in rest} & {p.uuid for p in a}
    with pytest.raises(DataError, match="only"):
        sample_personas(pool, len(pool) + 1, seed=0)


def test_user_profile_lists_fields_as_key_value_lines() -> None:
    profile = to_user_profile(Persona.model_validate(ROW), "Likes brevity.")
    lines = profile.formatted_str.splitlines()
    assert lines[0] == "name: Ada Test" and lines[-1] == "complementary_info: Likes brevity."
    assert "occupation: software developer" in lines
    assert profile.complementary_info == "Likes brevity." and profile.uuid == "u-1"


def test_parquet_needs_pyarrow(tmp_path: Path) -> None:
    if importlib.util.find_spec("pyarrow") is not None:
        pytest.skip("pyarrow is installed")
    with pytest.raises(BackendUnavailable, match="pip install pyarrow"):
        load_personas(tmp_path / "p.parquet")
