"""The regeneration check is remembered per file: bytes that passed are not regenerated again under the same
generator, while any other bytes (a tampered file) are regenerated and refused as before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from amemgym.errors import DataError
from amemgym.families.budget import integrity
from amemgym.families.budget.generate import build_episode
from amemgym.families.budget.io import load_episode, save_episode


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    path = tmp_path / "data.json"
    save_episode(build_episode("lite", "films", 2), path)
    return path


def _count_builds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = integrity.build_episode

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(integrity, "build_episode", counted)  # the regeneration the check makes
    return calls


def test_a_verified_file_is_not_regenerated_again(saved: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _count_builds(monkeypatch)
    first, _ = load_episode(saved)
    assert len(calls) == 1
    again, _ = load_episode(saved)
    assert len(calls) == 1 and again == first


def test_a_tampered_file_is_still_refused_after_its_original_passed(saved: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # Adversarial: once the original is remembered, an edited gold must not ride on its verdict.
    load_episode(saved)
    calls = _count_builds(monkeypatch)
    data = json.loads(saved.read_text())
    q = next(q for q in data["questions"] if q["answer_type"] in ("int", "float"))
    q["gold"] = q["gold"] * 1.5
    saved.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n")
    for _ in range(2):  # a refusal is never remembered
        with pytest.raises(DataError, match="is not the episode generated"):
            load_episode(saved)
    assert len(calls) == 2


def test_another_generator_checks_every_file_again(saved: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    load_episode(saved)
    calls = _count_builds(monkeypatch)
    monkeypatch.setattr(integrity, "generator_digest", lambda: "another-generator")
    load_episode(saved)
    assert len(calls) == 1


def test_the_generator_digest_covers_the_family_source_and_the_pack() -> None:
    digest = integrity.generator_digest()
    assert len(digest) == 64
    # A change to any file the digest reads changes it: the file list holds the generator and the pack.
    integrity.generator_digest.cache_clear()
    try:
        real = Path.read_bytes

        def edited(self: Path) -> bytes:
            data = real(self)
            return data + b"#" if self.name in ("world.py", "films.yaml") else data

        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(Path, "read_bytes", edited)
            assert integrity.generator_digest() != digest
    finally:
        integrity.generator_digest.cache_clear()
    assert integrity.generator_digest() == digest


def test_an_unwritable_cache_only_costs_a_regeneration(saved: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    monkeypatch.setenv("AMEMGYM_CACHE_DIR", str(blocker))
    calls = _count_builds(monkeypatch)
    load_episode(saved)
    load_episode(saved)
    assert len(calls) == 2
