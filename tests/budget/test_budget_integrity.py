"""A budget episode file is checked for meaning, not only shape: `run` refuses a file that is not the
episode its (tier, domain, seed, salt) generate, in one line, and `validate` reports it without crashing."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from amemgym.cli import app
from amemgym.errors import DataError
from amemgym.families.budget.generate import build_episode, episode_bytes
from amemgym.families.budget.io import load_episode

runner = CliRunner()
Tamper = Callable[[dict[str, Any]], None]


def _first(data: dict[str, Any], answer_type: str) -> dict[str, Any]:
    return next(q for q in data["questions"] if q["answer_type"] == answer_type)


def _scale_gold(data: dict[str, Any]) -> None:
    q = next(q for q in data["questions"] if q["answer_type"] in ("int", "float"))
    q["gold"] = q["gold"] * 1.5


def _point_nowhere(data: dict[str, Any]) -> None:
    next(ev for ev in data["events"] if ev["kind"] == "question")["question"] = "q999"


def _set(path: str, value: Any) -> Tamper:
    def tamper(data: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node = data
        for p in parents:
            node = node[p]
        node[last] = value
    return tamper


def _gold(answer_type: str, value: Any) -> Tamper:
    return lambda data: _first(data, answer_type).__setitem__("gold", value)


# Each of these ran to a ranked result (exit 0) or crashed with a traceback before the check existed.
CASES: dict[str, Tamper] = {
    "reference_writes -3": _set("reference_writes", -3),
    "gold x1.5": _scale_gold,
    "negative budget": _set("tier.writes", -5),
    "zero budget": _set("tier.writes", 0),
    "zero note cap": _set("note_chars", 0),
    "negative note cap": _set("note_chars", -800),
    "zero sessions": _set("tier.sessions", 0),
    "NaN gold": _gold("int", math.nan),
    "infinite gold": _gold("int", math.inf),
    "a question event pointing nowhere": _point_nowhere,
    "no questions": _set("questions", []),
    "a string gold on a number question": _gold("int", "many"),
    "an unknown question kind": lambda data: data["questions"][0].__setitem__("kind", "telepathy"),
}


@pytest.fixture(scope="module")
def original(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = tmp_path_factory.mktemp("ep") / "data.json"
    path.write_bytes(episode_bytes(build_episode("lite", "films", 0)))
    return json.loads(path.read_text())


def _write(tmp_path: Path, original: dict[str, Any], tamper: Tamper) -> Path:
    data = json.loads(json.dumps(original))
    tamper(data)
    path = tmp_path / "data.json"
    path.write_text(json.dumps(data))  # json writes NaN and Infinity as Python reads them back
    return path


def _responder(body: dict[str, Any]) -> str:
    asked = any("(question)" in m["content"] for m in body["messages"] if m["role"] == "user")
    return json.dumps({"tool": "submit_answer", "args": {"answer": "12"}} if asked else {"tool": "done", "args": {}})


@pytest.mark.parametrize("case", sorted(CASES))
def test_run_refuses_a_tampered_episode_in_one_line(case: str, original: dict[str, Any], tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from amemgym.testing.fake_endpoint import FakeEndpoint

    bad = _write(tmp_path, original, CASES[case])
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with FakeEndpoint(responder=_responder, model="m") as ep:
        models = tmp_path / "models.yaml"
        models.write_text(f"agent:\n  base_url: {ep.base_url}\n  model: m\n", encoding="utf-8")
        res = runner.invoke(app, ["run", "--env", str(bad), "--out", str(tmp_path / "out"), "--models", str(models),
                                  "--set", "llm.cache=false"])
    assert res.exit_code == 2, res.output
    lines = [ln for ln in res.output.strip().splitlines() if ln.strip()]
    assert "Traceback" not in res.output and str(bad) in res.output.replace("\n", "")
    assert "is not the episode generated" in " ".join(lines) or "cannot be regenerated" in " ".join(lines)
    assert not (tmp_path / "out" / "results.json").exists()


@pytest.mark.parametrize("case", sorted(CASES))
def test_validate_reports_a_tampered_episode_without_crashing(case: str, original: dict[str, Any],
                                                              tmp_path: Path) -> None:
    bad = _write(tmp_path, original, CASES[case])
    res = runner.invoke(app, ["validate", "--env", str(bad)])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    assert res.exit_code == 1 and "FAIL" in res.output, res.output


def test_a_reformatted_but_unchanged_file_still_runs(original: dict[str, Any], tmp_path: Path) -> None:
    path = tmp_path / "data.json"
    path.write_text(json.dumps(original, indent=4, sort_keys=True))
    episode, _ = load_episode(path)
    assert episode.reference_writes == original["reference_writes"]


def test_the_refusal_names_the_first_difference(original: dict[str, Any], tmp_path: Path) -> None:
    bad = _write(tmp_path, original, _set("reference_writes", -3))
    with pytest.raises(DataError, match=r"reference_writes: -3 in the file, 15 when regenerated"):
        load_episode(bad)
