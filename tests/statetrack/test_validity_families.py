"""New classes of memoryless strategy (issue 29): each family catches a planted leak of its own kind that
the pooled, cross-user, whole-history strategies miss; the verdict does not move with ``--seed``; and
removing a file's metadata never turns a failing file into a passing one.

Every plant here is our own: it is worth a lot to an agent with no memory and looks like chance to the
strategies that came before the family that catches it.
"""

from __future__ import annotations

import json
import os
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
from amemgym.families.statetrack.validity.exposure import _builtin_domains, _phrasing_index, _squash, states
from amemgym.families.statetrack.validity.strategies import TextVectors, matching_options
from amemgym.families.statetrack.validity.suite import run_suite
from amemgym.testing.scripted_model import HashEmbedder


@cache
def _clean() -> Environment:
    env, _ = generate_procedural(env_preset("small"), seed=3, num_users=16)
    return env


def clean() -> Environment:
    return _clean().model_copy(deep=True)


def suite(env: Environment, seed: int = 0):
    return run_suite(env, TextVectors(HashEmbedder().embed_sync), seed=seed)


def by_name(report) -> dict:
    return {s.name: s for s in report.strategies}


def counts(user, q: int) -> list[int]:
    out = [0] * len(user.qas[q].answer_choices)
    for p in range(len(user.periods)):
        for i in matching_options(user, p, q):
            out[i] += 1
    return out


# ---- plants ---------------------------------------------------------------------------------------------


def plant_period_order(env: Environment) -> Environment:
    """The option correct at period p sits in slot p mod n wherever it can (latest periods first)."""
    for user in env.users:
        for q, qa in enumerate(user.qas):
            n = len(qa.answer_choices)
            slots: dict[int, int] = {}
            for p in reversed(range(len(user.periods))):
                gold = matching_options(user, p, q)[0]
                if gold not in slots.values() and p % n not in slots:
                    slots[p % n] = gold
            rest = [i for i in range(n) if i not in slots.values()]
            order = [slots[k] if k in slots else rest.pop(0) for k in range(n)]
            qa.answer_choices = [qa.answer_choices[i] for i in order]
    return env


def plant_last_period_tell(env: Environment) -> Environment:
    """The longest option is the one correct at the last period where that option is new there; elsewhere
    it is an option that is never correct, so pooled over periods the longest option looks like chance."""
    for user in env.users:
        last = len(user.periods) - 1
        for q, qa in enumerate(user.qas):
            c = counts(user, q)
            gold = matching_options(user, last, q)[0]
            never = [i for i, k in enumerate(c) if k == 0]
            target = gold if c[gold] == 1 else (never[0] if never else None)
            if target is not None:
                qa.answer_choices[target].answer += " Keep a small notebook of what worked and what did not."
    return env


def plant_window_tell(env: Environment) -> Environment:
    """Each later period's first opening ends by quoting the correct option of the questions the period
    says nothing about: the words tell the answer although no fact of the window does. The first opening
    of all quotes every option once, so the whole history, unlike the latest period, favours none."""
    for user in env.users:
        everything = " ".join(c.answer for qa in user.qas for c in qa.answer_choices)
        user.periods[0].sessions[0].query += f" Things people have told me over the years: {everything}"
        for p in range(1, len(user.periods)):
            changed = set(user.periods[p].updates)
            quiet = [q for q, qa in enumerate(user.qas) if not changed & set(qa.required_info)]
            for q in quiet[:3]:
                gold = user.qas[q].answer_choices[matching_options(user, p, q)[0]].answer
                user.periods[p].sessions[0].query += f" A friend's advice stuck with me: {gold}"
    return env


def plant_period_words(env: Environment) -> Environment:
    """Every option correct at period p carries the word for p, the same words for every user: pooled over
    periods each word marks an option that is right only now and then."""
    names = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo")
    for user in env.users:
        for q, qa in enumerate(user.qas):
            for p in range(len(user.periods)):
                for i in matching_options(user, p, q):
                    qa.answer_choices[i].answer += f" {names[p]}"
    return env


def plant_within_user_tell(env: Environment) -> Environment:
    """Each user's modal options end with a word of that user's own, the other options with another word;
    the words differ from user to user, so no model fitted across users can learn them."""
    for k, user in enumerate(env.users):
        mark, other = f"zorbl{k}a", f"zorbl{k}b"
        for q, qa in enumerate(user.qas):
            c = counts(user, q)
            best = c.index(max(c))
            for i, choice in enumerate(qa.answer_choices):
                choice.answer += f" {mark if i == best else other}."
    return env


def _phrasing_in(text: str, var: str, value: str) -> str:
    index = _phrasing_index(tuple(_builtin_domains().values()))
    squashed = _squash(text)
    return next(ph for ph, v, x in index if (v, x) == (var, value) and ph in squashed)


def plant_denied_phrasing(env: Environment) -> Environment:
    """A later opening keeps its change's phrasing, but only inside someone else's claim that it denies."""
    user = env.users[0]
    for period in user.periods[1:]:
        for session in period.sessions:
            if len(session.exposed_states) == 1:
                (var, value), = session.exposed_states.items()
                phrasing = _phrasing_in(session.query, var, value)
                session.query = (f"My neighbour keeps saying {phrasing}, which is nothing like my life. "
                                 "Could you help me plan the week?")
                return env
    raise AssertionError("no single-change session to rewrite")


PLANTS: dict[str, tuple[Callable[[Environment], Environment], str]] = {
    "period_order": (plant_period_order, "at period"),
    "last_period": (plant_last_period_tell, "shortcut longest at period"),
    "window": (plant_window_tell, "shortcut window1_"),
    "within_user": (plant_within_user_tell, "shortcut within_user_markers"),
    "period_words": (plant_period_words, "shortcut marker_words_by_period"),
    "denied_phrasing": (plant_denied_phrasing, "not stated by any opening text"),
}


# ---- each family catches its plant --------------------------------------------------------------------


def test_clean_environment_passes_with_every_family() -> None:
    report = suite(clean())
    assert report.passed, report.failures
    assert {s.family for s in report.strategies} >= {"fixed", "cross-user", "within-user", "context", "window"}


@pytest.mark.parametrize("leak", sorted(PLANTS))
def test_planted_leak_of_each_family_fails_and_is_named(leak: str) -> None:
    plant, name = PLANTS[leak]
    report = suite(plant(clean()))
    assert any(name in f for f in report.failures), report.failures


def test_period_indexed_order_is_caught_per_period_while_pooled_slots_look_random() -> None:
    report = suite(plant_period_order(clean()))
    slots = [s for s in report.strategies if s.name.startswith("position_") or s.name in ("first", "last")]
    assert all(s.excess < 0.1 for s in slots)  # pooled, no slot is far from chance
    assert any(f.verdict == "fail" for s in slots for f in s.period_flags)


def test_last_period_tell_is_caught_at_the_last_period_only() -> None:
    env = plant_last_period_tell(clean())
    longest = by_name(suite(env))["longest"]
    last = len(env.users[0].periods) - 1
    assert longest.excess <= 0.03  # pooled it looks like chance
    assert [f.period for f in longest.period_flags if f.verdict == "fail"] == [last]


def test_window_tell_beats_the_honest_recency_reader() -> None:
    scores = by_name(suite(plant_window_tell(clean())))
    assert scores["window1_overlap"].verdict == "fail"
    assert scores["conversation_overlap"].verdict != "fail"  # the whole history favours no option
    # Compared with the reader that knows the window's facts, not with random.
    assert scores["window1_overlap"].baseline > suite(clean()).random_baseline


def test_honest_recency_reading_is_not_a_leak() -> None:
    # Reading the facts the window states is memory use: the window strategies score well above random on
    # clean data, and still pass, because they are judged against the honest reader.
    scores = by_name(suite(clean()))
    w = scores["window2_embedding"]
    assert w.accuracy > scores["random"].accuracy + 0.1 and w.verdict == "pass"


def test_within_user_tell_is_invisible_across_users() -> None:
    scores = by_name(suite(plant_within_user_tell(clean())))
    assert scores["within_user_markers"].verdict == "fail"
    assert scores["marker_words"].verdict != "fail" and scores["option_frequency"].verdict != "fail"


# ---- the text reader: attribution and negation state nothing --------------------------------------------


@pytest.mark.parametrize(("sentence", "stated"), [
    ("quick update since we last talked: i work nights now.", True),
    ("my neighbour keeps saying i work nights now, which is nothing like my life.", False),
    ("i work nights now? no, that is not me at all.", True),  # the denial is another sentence
    ("i work nights now, which is not true at all.", False),
    ("if i work nights now, would that change things?", False),
    ("my sister told me i work nights now.", False),
    ("last night i dreamt that i work nights now. odd!", False),
    ("i used to say i work nights now; that was years back.", False),
    ("in my younger days i work nights now was my life.", False),
])
def test_reader_states_only_what_the_user_claims_for_themselves(sentence: str, stated: bool) -> None:
    assert states(sentence, "i work nights now") is stated


def test_clean_openings_have_no_denied_phrasings() -> None:
    # The composer's own lead-ins and tails never read as a denial or attribution (else every file fails).
    for seed in (0, 1, 2):
        env, _ = generate_procedural(env_preset("small"), seed=seed)
        report = suite(env)
        assert report.text_exposure is not None and report.text_exposure.findings == [], seed


# ---- metadata removed ----------------------------------------------------------------------------------


def _strip(path: Path, what: str) -> None:
    data = json.loads(path.read_text())
    for item in data:
        if what == "all":
            item.pop("_amemgym", None)
        else:
            item["_amemgym"].pop("packs", None)
    path.write_text(json.dumps(data))


def _validate(path: Path, *extra: str):
    return CliRunner().invoke(app, ["validate", "--env", str(path), "--embedder", "hash", *extra])


@pytest.mark.parametrize("what", ["all", "packs"])
@pytest.mark.parametrize("leak", ["denied_phrasing", "silent_session", "window"])
def test_removing_metadata_never_turns_a_failing_file_into_a_passing_one(leak: str, what: str,
                                                                         tmp_path: Path) -> None:
    from test_validity_planted import plant_silent_session

    plant = plant_silent_session if leak == "silent_session" else PLANTS[leak][0]
    path = tmp_path / "data.json"
    save_environment(plant(clean()), path)
    assert _validate(path).exit_code == 1
    _strip(path, what)
    result = _validate(path)
    assert result.exit_code == 1, result.output
    assert "UNCHECKED" not in result.output  # the pack is recognised from the content


# ---- a verdict that does not move with --seed -----------------------------------------------------------


def _verdicts(report) -> str:
    return json.dumps({s.name: (s.verdict, s.accuracy, s.gate_lo) for s in report.strategies})


@pytest.mark.parametrize("env_seed", [101, 102, 103, 104, 105])
def test_clean_small_files_of_fresh_seeds_pass_with_one_verdict_at_every_seed(env_seed: int) -> None:
    env, _ = generate_procedural(env_preset("small"), seed=env_seed, num_users=12)
    reports = [suite(env, seed=seed) for seed in range(5)]
    assert all(r.passed for r in reports), reports[0].failures
    assert len({_verdicts(r) for r in reports}) == 1


#: v1.base files take seconds each: one runs by default, all five with AMEMGYM_SLOW=1.
_V1_BASE = [(301, 0)] + ([(302, 1), (303, 2), (304, 3), (305, 4)] if os.environ.get("AMEMGYM_SLOW") else [])


@pytest.mark.parametrize(("env_seed", "seed"), _V1_BASE)
def test_clean_v1_base_files_of_fresh_seeds_pass(env_seed: int, seed: int) -> None:
    # One --seed per file keeps this affordable; the verdict does not depend on it (tests above).
    env, _ = generate_procedural(env_preset("v1.base"), seed=env_seed)
    report = suite(env, seed=seed)
    assert report.passed, report.failures


def test_cli_gives_one_verdict_at_five_seeds_and_prints_the_time_per_family(tmp_path: Path) -> None:
    path = tmp_path / "data.json"
    save_environment(plant_last_period_tell(clean()), path)
    codes = set()
    for seed in range(5):
        result = _validate(path, "--seed", str(seed), "--json", str(tmp_path / f"v{seed}.json"))
        codes.add(result.exit_code)
    assert codes == {1}
    assert "time per step:" in result.output and "within-user" in result.output
    data = json.loads((tmp_path / "v4.json").read_text())
    assert set(data["timings_s"]) >= {"fixed", "cross-user", "within-user", "context", "window", "gates"}


def test_without_a_terminal_progress_is_one_plain_line_per_step(tmp_path: Path) -> None:
    path = tmp_path / "data.json"
    save_environment(clean(), path)
    result = CliRunner().invoke(app, ["validate", "--env", str(path), "--embedder", "hash"])
    assert result.exit_code == 0, result.output
    lines = [x for x in result.output.splitlines() if x.startswith("validate: ")]
    steps = [x.split(" done in ")[0] for x in lines]
    assert len(steps) == len(set(steps)) >= 8 and "validate: window" in steps


def test_one_user_outside_the_pack_does_not_switch_the_text_check_off_for_the_others() -> None:
    from test_validity_planted import plant_silent_session

    env = plant_silent_session(clean())
    odd = env.users[-1]
    odd.state_schema = {f"custom_{k}": v for k, v in odd.state_schema.items()}
    report = suite(env)
    assert any("not stated by any opening text" in f for f in report.failures), report.failures
    assert report.exposure_unchecked and f"1 of {len(env.users)} users" in report.exposure_unchecked


def test_no_planted_file_passes_once_its_metadata_is_gone() -> None:
    import test_validity_planted as older

    plants = {**{k: v[0] for k, v in PLANTS.items()}, **{f"old_{k}": v[0] for k, v in older.PLANTS.items()}}
    for name, plant in plants.items():
        env = plant(clean())
        for user in env.users:
            user.amemgym = None
        report = suite(env)
        assert not report.passed and report.exposure_unchecked is None, name
