"""A large environment file is read as a stream: memory is bounded by the users kept, not by the file (issue 30,
item 6). Peak memory is measured with tracemalloc; no test here asserts a time."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

from amemgym.errors import DataError
from amemgym.families.statetrack.data.io import load_environment

FIXTURE = Path(__file__).parents[1] / "fixtures" / "original_shape.json"
USERS = 600  # about 4 MB


@pytest.fixture(scope="module")
def big_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    user = json.loads(FIXTURE.read_text())[0]
    path = tmp_path_factory.mktemp("big") / "data.json"
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("[\n")
        for i in range(USERS):
            fh.write(("," if i else "") + json.dumps({**user, "id": f"user-{i:05d}"}, indent=1) + "\n")
        fh.write("]\n")
    return path


@pytest.fixture(autouse=True)
def _small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    import amemgym.families.statetrack.data.io as io

    # Chunks far smaller than the file, so the file need not be huge for the bound to mean something.
    monkeypatch.setattr(io, "READ_CHARS", 1 << 16)


def traced(fn) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    """Bytes still held by ``fn``'s result, and the peak while it ran."""
    tracemalloc.start()
    try:
        result = fn()
        current, peak = tracemalloc.get_traced_memory()
        del result
        return current, peak
    finally:
        tracemalloc.stop()


def test_a_limited_load_holds_a_few_users_not_the_file(big_file: Path) -> None:
    size = big_file.stat().st_size
    assert size > 3_000_000
    env = load_environment(big_file, limit=2)
    assert [u.id for u in env.users] == ["user-00000", "user-00001"]
    _, peak = traced(lambda: load_environment(big_file, limit=2))
    assert peak < size / 4, (peak, size)  # the whole text alone would be ~size


def test_a_full_load_never_holds_the_whole_text(big_file: Path) -> None:
    size = big_file.stat().st_size
    kept, peak = traced(lambda: load_environment(big_file))
    # Every user is kept (they all run); what comes on top while loading is a chunk and one user being
    # decoded, where reading the text whole would add the file's size.
    assert peak - kept < size / 4, (peak, kept, size)


def test_positions_in_errors_are_of_the_whole_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import amemgym.families.statetrack.data.io as io

    monkeypatch.setattr(io, "READ_CHARS", 64)  # many chunks, so the error lies far past the first
    user = json.loads(FIXTURE.read_text())[0]
    text = "[\n" + json.dumps(user, indent=1) + ",\n" + json.dumps(user, indent=1)[:-1] + " oops}\n]\n"
    path = tmp_path / "broken.json"
    path.write_text(text)
    line = text[: text.index(" oops")].count("\n") + 1
    with pytest.raises(DataError, match=rf"^broken\.json: not valid JSON at line {line} column \d+: "):
        load_environment(path)
