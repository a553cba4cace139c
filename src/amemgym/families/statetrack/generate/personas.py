"""Persona tables: load, sample and turn into user profiles (docs/design.md §2, §3).

A persona table has the columns of Nemotron-Personas (``uuid``, ``age``, ``sex``, ``marital_status``,
``education_level``, ``occupation``, ``hobbies_and_interests``, ``skills_and_expertise``, ``persona``,
and optional others such as ``city``, ``country`` or ``cultural_background``), as JSONL or parquet. A
``name`` column is optional: Nemotron has none, so a stable name is made from the uuid. A small pool
that we wrote ourselves ships in ``data/personas.jsonl``.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ....errors import BackendUnavailable, DataError
from ....textsim import plain
from ..data.model import UserProfile

DEFAULT_PERSONAS = Path(__file__).parent / "data" / "personas.jsonl"

# Occupations that mean the person has no job to talk about (Nemotron writes some of these).
_NO_JOB = ("retired", "student", "unemployed", "not_in_labor_force", "not in labor force", "homemaker")

_GIVEN = {
    "female": ("Amara", "Lucia", "Mei", "Ingrid", "Priya", "Fatima", "Hannah", "Yuki", "Olga", "Nadia",
               "Camila", "Grace", "Leila", "Sofia", "Aisha", "Maren"),
    "male": ("Tomas", "Kwame", "Arjun", "Lars", "Diego", "Hiroshi", "Omar", "Samuel", "Pavel", "Mateo",
             "Chinedu", "Felix", "Rahul", "Jonas", "Emeka", "Andrei"),
    "other": ("Alex", "Robin", "Sasha", "Kai", "Jordan", "Noor", "Rene", "Ari"),
}
_FAMILY = ("Okafor", "Lindqvist", "Tanaka", "Moreno", "Haddad", "Novak", "Mensah", "Kowalski", "Reyes",
           "Sato", "Brennan", "Iyer", "Dubois", "Petrov", "Nkosi", "Castillo", "Berg", "Rahman", "Weiss",
           "Alvarez", "Kimura", "Osei", "Fischer", "Nair")


class Persona(BaseModel):
    """One row of a persona table. ``gender`` is read from ``sex`` or ``gender``."""

    model_config = ConfigDict(frozen=True, extra="allow")

    uuid: str = Field(min_length=1)
    name: str = Field(min_length=1)
    age: int = Field(ge=0, le=120)
    gender: str | None = None
    marital_status: str | None = None
    education_level: str | None = None
    occupation: str = Field(min_length=1)
    hobbies_and_interests: str | None = None
    skills_and_expertise: str | None = None
    persona: str = Field(min_length=1)
    city: str | None = None
    country: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _normalise(cls, raw: Any) -> Any:
        if not isinstance(raw, dict):
            return raw
        row = dict(raw)
        if row.get("gender") is None and row.get("sex") is not None:
            row["gender"] = row["sex"]
        for key in ("hobbies_and_interests", "skills_and_expertise"):
            if isinstance(row.get(key), list | tuple):
                row[key] = ", ".join(str(x) for x in row[key])
        if not row.get("name") and isinstance(row.get("uuid"), str) and row["uuid"]:
            row["name"] = make_name(row["uuid"], row.get("gender"))
        return row

    @property
    def first_name(self) -> str:
        """The first word of the name."""
        return self.name.split()[0]

    @property
    def has_job(self) -> bool:
        """Whether the occupation is a job (not retired, a student, unemployed or a homemaker)."""
        occ = self.occupation.lower()
        return not any(word in occ for word in _NO_JOB)

    @property
    def place(self) -> str | None:
        """``city, country`` (or whichever is known), for the role-play summary."""
        parts = [p for p in (self.city, self.country) if p]
        return ", ".join(parts) or None


def make_name(uuid: str, gender: str | None) -> str:
    """A stable full name for a persona without one, derived from its uuid."""
    digest = hashlib.sha256(uuid.encode("utf-8")).digest()
    key = (gender or "").strip().lower()
    given = _GIVEN["female" if key.startswith("f") else "male" if key.startswith("m") else "other"]
    return f"{given[digest[0] % len(given)]} {_FAMILY[digest[1] % len(_FAMILY)]}"


def load_personas(path: Path | None = None) -> list[Persona]:
    """Read a persona table (JSONL, or parquet when ``pyarrow`` is installed).

    Args:
        path: the table; default is the pool that ships with amemgym.

    Raises:
        DataError: if the file is missing, empty, or a row is invalid (naming file, line and field).
        BackendUnavailable: for a parquet file when ``pyarrow`` is not installed.
    """
    p = Path(path) if path is not None else DEFAULT_PERSONAS
    rows: Iterable[tuple[str, Any]]
    if p.suffix == ".parquet":
        rows = ((f"row {i}", row) for i, row in enumerate(_read_parquet(p), start=1))
    else:
        rows = _read_jsonl(p)
    personas: list[Persona] = []
    seen: dict[str, str] = {}
    for where, row in rows:
        if not isinstance(row, dict):
            raise DataError(f"{p}: {where}: expected a JSON object, got {type(row).__name__}")
        try:
            persona = Persona.model_validate(row)
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(x) for x in err["loc"]) or "(row)"
            msg = "required field is missing" if err["type"] == "missing" else err["msg"]
            raise DataError(f"{p}: {where}: field {field!r}: {msg}") from None
        if persona.uuid in seen:
            raise DataError(f"{p}: {where}: field 'uuid': duplicate of {seen[persona.uuid]}")
        seen[persona.uuid] = where
        personas.append(persona)
    if not personas:
        raise DataError(f"{p}: the persona table has no rows")
    return personas


def _read_jsonl(path: Path) -> Iterable[tuple[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DataError(f"{path}: no such persona file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: cannot read: {exc}") from None
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield f"line {lineno}", json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"{path}: line {lineno}: not valid JSON: {exc.msg}") from None


def _read_parquet(path: Path) -> list[dict[str, Any]]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise BackendUnavailable(
            f"{path}: reading parquet persona tables needs pyarrow (pip install pyarrow), "
            "or convert the table to JSONL"
        ) from None
    if not path.exists():
        raise DataError(f"{path}: no such persona file")
    try:
        return pq.read_table(path).to_pylist()
    except Exception as exc:  # pyarrow raises many unrelated types for a bad file
        raise DataError(f"{path}: cannot read parquet: {exc}") from None


def sample_personas(
    personas: list[Persona], n: int, seed: int, exclude_ids: Iterable[str] = ()
) -> list[Persona]:
    """``n`` distinct personas drawn with ``random.Random(seed)``, skipping ``exclude_ids``.

    Raises:
        DataError: if fewer than ``n`` personas remain after the exclusion.
    """
    excluded = set(exclude_ids)
    pool = [p for p in personas if p.uuid not in excluded]
    if n > len(pool):
        raise DataError(
            f"asked for {n} personas, but the table has only {len(pool)} left after excluding {len(excluded)}"
        )
    return random.Random(seed).sample(pool, n)


def _plain(value: str | None) -> str | None:
    return plain(value) if value else value


def to_user_profile(persona: Persona, summary: str | None) -> UserProfile:
    """The :class:`UserProfile` of ``persona``, with ``summary`` as its role-play ``complementary_info``.

    ``formatted_str`` lists the known fields as ``key: value`` lines (snake_case values are written as
    plain words, as Nemotron stores some of them in that form).
    """
    fields: dict[str, Any] = {
        "name": persona.name,
        "age": persona.age,
        "gender": _plain(persona.gender),
        "marital_status": _plain(persona.marital_status),
        "education_level": _plain(persona.education_level),
        "occupation": _plain(persona.occupation),
        "hobbies_and_interests": persona.hobbies_and_interests,
        "skills_and_expertise": persona.skills_and_expertise,
        "complementary_info": summary if summary is not None else persona.persona,
    }
    formatted = "\n".join(f"{k}: {v}" for k, v in fields.items() if v is not None and v != "")
    return UserProfile(uuid=persona.uuid, formatted_str=formatted, **fields)
