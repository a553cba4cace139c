"""Planted leaks in a clean procedural environment: each one makes ``validate`` fail and names it.

Every plant targets the option that is correct at the most periods of its question (the *modal* option):
a memoryless policy that finds it beats chance, because it is right at more periods than a random pick.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pytest
from typer.testing import CliRunner

from amemgym.cli import app
from amemgym.config import env_preset
from amemgym.families.statetrack.data import Environment
from amemgym.families.statetrack.data.io import save_environment
from amemgym.families.statetrack.generate.procedural import generate_procedural
from amemgym.families.statetrack.validity.crossuser import duplicate_options
from amemgym.families.statetrack.validity.strategies import TextVectors, matching_options
from amemgym.families.statetrack.validity.suite import run_suite
from amemgym.testing.scripted_model import HashEmbedder


@cache
def _clean() -> Environment:
    env, _ = generate_procedural(env_preset("small"), seed=3, num_users=12)
    return env


def clean() -> Environment:
    return _clean().model_copy(deep=True)


def modal(user, q: int) -> int:
    counts = [0] * len(user.qas[q].answer_choices)
    for p in range(len(user.periods)):
        for i in matching_options(user, p, q):
            counts[i] += 1
    return counts.index(max(counts))


def plant_position_2(env: Environment) -> Environment:
    """The modal option moves to the second slot of every question."""
    for user in env.users:
        for q, qa in enumerate(user.qas):
            best = qa.answer_choices.pop(modal(user, q))
            qa.answer_choices.insert(1, best)
    return env


def plant_marker(env: Environment) -> Environment:
    """The modal option ends with one word, every other option with another word of the same length."""
    for user in env.users:
        for q, qa in enumerate(user.qas):
            best = modal(user, q)
            for i, c in enumerate(qa.answer_choices):
                c.answer += " Definitely." if i == best else " Absolutely."
    return env


def plant_marker_in(right: str, wrong: str) -> Callable[[Environment], Environment]:
    """:func:`plant_marker` with marker words of another script (the words read in every script, §4)."""
    assert len(right) == len(wrong)

    def plant(env: Environment) -> Environment:
        for user in env.users:
            for q, qa in enumerate(user.qas):
                best = modal(user, q)
                for i, c in enumerate(qa.answer_choices):
                    c.answer += right if i == best else wrong
        return env

    return plant


SHARED_RIGHT = "Keep to the routine that has served you very well, then review it later."
SHARED_WRONG = "Switch to an approach you have never tried before, then review it later."


def plant_frequency(env: Environment) -> Environment:
    """Two pieces of advice of equal length recur for every user: one on the modal option, one on another.

    Nothing about the one option tells them apart (same length, same slot distribution); only that the
    first turns out right for other users does.
    """
    assert len(SHARED_RIGHT) == len(SHARED_WRONG)
    for user in env.users:
        for q, qa in enumerate(user.qas):
            best = modal(user, q)
            other = (best + 1 + q) % len(qa.answer_choices)
            other = other if other != best else (best + 1) % len(qa.answer_choices)
            qa.answer_choices[best].answer = SHARED_RIGHT
            qa.answer_choices[other].answer = SHARED_WRONG
    return env


def plant_centrality(env: Environment) -> Environment:
    """The modal option is stitched from words spread over every other option, as many words as it had."""
    for user in env.users:
        for q, qa in enumerate(user.qas):
            best = modal(user, q)
            others = [c.answer.split() for i, c in enumerate(qa.answer_choices) if i != best]
            size = len(qa.answer_choices[best].answer.split())
            m = len(others)
            qa.answer_choices[best].answer = " ".join(
                others[k % m][min(len(others[k % m]) - 1, k * len(others[k % m]) // size)] for k in range(size))
    return env


def plant_silent_session(env: Environment) -> Environment:
    """A later period's opening says nothing about its change, while ``exposed_states`` still claims it."""
    user = env.users[0]
    for period in user.periods[1:]:
        for session in period.sessions:
            if session.exposed_states:
                session.query = "Hi! Could you help me think through the next few weeks?"
                return env
    raise AssertionError("no later session to silence")


def plant_duplicate(env: Environment) -> Environment:
    """One question offers the same text twice (the two options differ only in their hidden state)."""
    qa = env.users[0].qas[0]
    qa.answer_choices[1].answer = qa.answer_choices[0].answer
    return env


PLANTS: dict[str, tuple[Callable[[Environment], Environment], str]] = {
    "position": (plant_position_2, "position_2"),
    "marker": (plant_marker, "marker_words"),
    "marker_cyrillic": (plant_marker_in(" Конечно.", " Наверно."), "marker_words"),
    "marker_cjk": (plant_marker_in(" 一定。", " 绝对。"), "marker_words"),
    # Marks outside words tell as well as words: a closing "!" on the modal option, or a space no one sees.
    "marker_punctuation": (plant_marker_in(" Sure!", " Sure."), "marker_words"),
    "marker_invisible": (plant_marker_in("\u00a0Sure.", " Sure."), "marker_words"),
    "marker_case": (plant_marker_in(" Sure.", " sure."), "marker_words"),
    "marker_spacing": (plant_marker_in("  sure.", " sure. "), "marker_words"),
    "frequency": (plant_frequency, "option_frequency"),
    "centrality": (plant_centrality, "centrality_"),
    "silent_session": (plant_silent_session, "not stated by any opening text"),
    "duplicate": (plant_duplicate, "repeat another option's text"),
}


def suite(env: Environment):
    return run_suite(env, TextVectors(HashEmbedder().embed_sync), seed=0)


def test_clean_procedural_environment_passes() -> None:
    report = suite(clean())
    assert report.passed, report.failures
    assert report.text_exposure is not None and report.text_exposure.changes > 0
    assert report.text_exposure.findings == []


@pytest.mark.parametrize("leak", sorted(PLANTS))
def test_planted_leak_fails_and_is_named(leak: str) -> None:
    plant, name = PLANTS[leak]
    report = suite(plant(clean()))
    assert not report.passed
    assert any(name in f for f in report.failures), report.failures


def test_marker_leak_is_not_a_length_leak() -> None:
    # The marker keeps every option's length difference: only the wording gives it away.
    report = suite(plant_marker(clean()))
    verdicts = {s.name: s.verdict for s in report.strategies}
    assert verdicts["longest"] == "pass" and verdicts["shortest"] == "pass"
    assert verdicts["marker_words"] == "fail" and verdicts["learned_text_model"] == "fail"


def test_position_leak_in_a_middle_slot_is_missed_by_first_and_last() -> None:
    report = suite(plant_position_2(clean()))
    verdicts = {s.name: s.verdict for s in report.strategies}
    assert verdicts["position_2"] == "fail"
    assert verdicts["first"] == "pass" and verdicts["last"] == "pass"


def test_silent_session_is_reported_with_its_variable() -> None:
    env = plant_silent_session(clean())
    report = suite(env)
    assert report.text_exposure is not None
    found = [f for f in report.text_exposure.findings if f.check == "unrevealed_change"]
    assert len(found) >= 1 and found[0].user == env.users[0].id


@pytest.mark.parametrize("leak", ["position", "silent_session", "duplicate"])
def test_cli_exits_1_naming_the_leak(leak: str, tmp_path: Path) -> None:
    plant, name = PLANTS[leak]
    path = tmp_path / "data.json"
    save_environment(plant(clean()), path)
    out = tmp_path / "v.json"
    result = CliRunner().invoke(app, ["validate", "--env", str(path), "--embedder", "hash", "--json", str(out)])
    assert result.exit_code == 1, result.output
    data = json.loads(out.read_text())
    assert not data["passed"] and any(name in f for f in data["failures"])


def test_cli_passes_the_clean_environment(tmp_path: Path) -> None:
    path = tmp_path / "data.json"
    save_environment(clean(), path)
    result = CliRunner().invoke(app, ["validate", "--env", str(path), "--embedder", "hash"])
    assert result.exit_code == 0, result.output


# ---- the LLM judge as text reader (environments the pack cannot read) ----------------------------------


def _judge_env(original_env_path: Path) -> Environment:
    from amemgym.families.statetrack.data import load_environment

    return load_environment(original_env_path)


def _truthful_judge(env: Environment, silent: str | None = None):
    """A scripted judge that states what each opening really says (known here from the fixture's state)."""
    from amemgym.llm import LLMClient
    from amemgym.testing.scripted_model import ScriptedBackend

    def reply(req) -> str:
        prompt = req.messages[-1]["content"]
        # The reader sees the text and the schema, never the metadata (exposure, events, summaries).
        assert "exposed" not in prompt
        assert not any(p.period_summary and p.period_summary in prompt for u in env.users for p in u.periods)
        assert not any(s.event and s.event in prompt for u in env.users for p in u.periods for s in p.sessions)
        stated = []
        for user in env.users:
            for period in user.periods:
                for s in period.sessions:
                    if s.query in prompt and s.query != silent:
                        stated += [{"topic": k, "value": v} for k, v in s.exposed_states.items()]
        return json.dumps({"stated": stated})

    return LLMClient(backends={"judge": ScriptedBackend(reply)}, backoff_base=0.001)


def _read(env: Environment, llm) -> object:
    import asyncio

    from amemgym.families.statetrack.validity.exposure import judge_reader, read_exposure_async

    return asyncio.run(read_exposure_async(env, judge_reader(llm), "LLM judge"))


def test_without_a_judge_an_unreadable_file_is_loudly_unchecked(original_env_path: Path, tmp_path: Path) -> None:
    report = suite(_judge_env(original_env_path))
    assert report.text_exposure is None and report.exposure_unchecked
    assert "UNCHECKED" in report.exposure_unchecked and "judge role" in report.exposure_unchecked
    out = tmp_path / "v.json"
    result = CliRunner().invoke(app, ["validate", "--env", str(original_env_path), "--embedder", "hash",
                                      "--no-judge", "--json", str(out)])
    assert "WARNING: exposure UNCHECKED" in result.output and "EXPOSURE UNCHECKED" in result.output
    data = json.loads(out.read_text())
    assert data["exposure_checked"] is False and data["exposure_unchecked"]


def test_judge_reader_passes_revealed_changes_and_fails_a_silent_one(original_env_path: Path) -> None:
    env = _judge_env(original_env_path)
    ok = run_suite(env, TextVectors(HashEmbedder().embed_sync), text_exposure=_read(env, _truthful_judge(env)))
    assert ok.passed and ok.exposure_unchecked is None, ok.failures
    assert any("only as good as its reading" in n for n in ok.notes)
    # The metadata still claims the change; only the judge's reading of the text catches it.
    silent = env.users[0].periods[1].sessions[0].query
    bad = run_suite(env, TextVectors(HashEmbedder().embed_sync),
                    text_exposure=_read(env, _truthful_judge(env, silent=silent)))
    assert any("not stated by any opening text" in f and "LLM judge" in f for f in bad.failures)


def test_a_failing_judge_fails_validation(original_env_path: Path) -> None:
    from amemgym.llm import LLMClient
    from amemgym.testing.scripted_model import ScriptedBackend

    env = _judge_env(original_env_path)
    llm = LLMClient(backends={"judge": ScriptedBackend(lambda req: '{"stated": [{"topic": "nope", "value": "x"}]}')},
                    backoff_base=0.001)
    report = run_suite(env, TextVectors(HashEmbedder().embed_sync), text_exposure=_read(env, llm))
    assert any("reader failed" in f for f in report.failures)


def _claim_edited_pack(env: Environment) -> Environment:
    for user in env.users:
        assert user.amemgym is not None and user.amemgym.packs
        user.amemgym.packs = {d: "0" * 64 for d in user.amemgym.packs}
    return env


def test_a_file_claiming_an_edited_pack_passes_when_its_text_states_every_change() -> None:
    # The built-in phrasings found every change: the text proves exposure whatever the metadata says.
    report = suite(_claim_edited_pack(clean()))
    assert report.passed and report.exposure_unchecked is None, report.failures
    assert report.text_exposure is not None and report.text_exposure.findings == []


def test_a_file_claiming_an_edited_pack_with_a_missed_change_is_unchecked_not_silently_passed() -> None:
    # An edited pack's phrasings could be missed by the built-in reader: no proof either way, said loudly.
    report = suite(_claim_edited_pack(plant_silent_session(clean())))
    assert report.exposure_unchecked and "edited pack" in report.exposure_unchecked


@pytest.mark.parametrize("texts", [["😀", "😀😀", "😀😀😀", "👍", "👎", "🙂", "🙃", "🤔", "🤷"],
                                   ["是的。", "不是。", "也许。", "当然。", "从不。",
                                    "有时。", "总是。", "很少。", "偶尔。"],
                                   ["Yes.", "Yes!", "Yes?", "Yes...", "Yes;", "Yes:", "Yes -", "(Yes)", "Yes!!"]])
def test_options_told_apart_only_by_symbols_or_another_script_are_not_duplicates(texts: list[str]) -> None:
    # Only case and spacing are ignored: an agent tells these options apart, so they are no repeated text.
    env = clean()
    for qa in env.users[0].qas:
        for i, c in enumerate(qa.answer_choices):
            c.answer = texts[i]
    assert duplicate_options(env) == (0, [])
    qa = env.users[0].qas[0]
    qa.answer_choices[1].answer = "  " + texts[0].upper() + " "
    assert duplicate_options(env)[0] == 1
