"""The procedural generator (docs/design.md §3): determinism, data-model checks, dynamics, pack quality."""

from __future__ import annotations

import json
import re
from collections import Counter
from functools import cache

import pytest

from amemgym.config import EnvConfig, env_preset
from amemgym.errors import ConfigError
from amemgym.families.statetrack.data.checks import check_environment
from amemgym.families.statetrack.data.io import dump_environment, load_environment, parse_environment, save_environment
from amemgym.families.statetrack.data.model import Environment, UserEnv, parse_time
from amemgym.families.statetrack.generate.procedural import (
    all_domains,
    generate_procedural,
    pack_problems,
    pack_stats,
    tiny_environment_path,
)
from amemgym.families.statetrack.generate.procedural.pack import content_stems


@cache
def _env(preset: str, seed: int, users: int | None = None, salt: int = 0) -> Environment:
    env, _ = generate_procedural(env_preset(preset), seed=seed, num_users=users, salt=salt)
    return env


def _users(*cases: tuple[str, int, int | None]) -> list[tuple[str, UserEnv]]:
    return [(p, u) for p, seed, n in cases for u in _env(p, seed, n).users]


ALL_PRESETS = [
    ("tiny", 0, None), ("small", 1, None), ("v1.base", 2, None), ("v1.extra", 3, None), ("large", 4, 2)
]


# --- the content pack ---------------------------------------------------------------------------


def test_pack_has_no_structural_problems() -> None:
    assert pack_problems(all_domains()) == []


def test_pack_is_big_enough_for_the_v1_configs() -> None:
    stats = pack_stats()
    assert stats["domains"] >= 10
    assert stats["variables"] >= 45
    three_var = [q for d in all_domains() for q in d.questions if len(q.variables) == 3]
    assert len(three_var) >= 20  # each also serves as a 2-variable question
    assert all(len(v.values) == 4 for d in all_domains() for v in d.variables)


def test_no_phrasing_is_shared_between_two_values_of_a_variable() -> None:
    for dom in all_domains():
        for var in dom.variables:
            owners = Counter(text for value in var.values for text in set(value.phrasings))
            assert all(n == 1 for n in owners.values()), var.name
            assert all(len(value.phrasings) >= 3 for value in var.values), var.name


def test_answer_clauses_do_not_reuse_the_words_of_their_variables_phrasings() -> None:
    for dom in all_domains():
        for q in dom.questions:
            for var_name, by_value in q.clauses.items():
                values = dom.variable(var_name).values
                spoken = set().union(*(content_stems(t) for v in values for t in v.phrasings))
                stems = [content_stems(c) for c in by_value.values()]
                shared = set.intersection(*stems)
                assert all(not ((s - shared) & spoken) for s in stems), (q.key, var_name)


# --- determinism and the data model ----------------------------------------------------------------


def test_same_seed_gives_identical_bytes() -> None:
    a, _ = generate_procedural(env_preset("small"), seed=5)
    b, _ = generate_procedural(env_preset("small"), seed=5)
    assert dump_environment(a) == dump_environment(b)


def test_different_seed_gives_a_different_environment() -> None:
    assert dump_environment(_env("small", 5)) != dump_environment(_env("small", 6))


MORE_SEEDS = [*ALL_PRESETS, ("v1.base", 7, None), ("small", 8, None)]


@pytest.mark.parametrize(("preset", "seed", "users"), MORE_SEEDS)
def test_generated_environment_passes_the_data_checks(preset: str, seed: int, users: int | None) -> None:
    env = _env(preset, seed, users)
    assert check_environment(env) == []
    parse_environment(json.loads(dump_environment(env)), preset)
    cfg = env_preset(preset)
    assert len(env.users) == (users or cfg.num_user_profiles)
    for user in env.users:
        assert len(user.periods) == cfg.num_periods + 1
        assert len(user.qas) == cfg.num_questions
        assert all(len(qa.required_info) == cfg.num_states_per_question for qa in user.qas)
        assert all(len(vals) == cfg.num_choices_per_state for vals in user.state_schema.values())
        assert all(len(qa.answer_choices) >= cfg.min_state_variants for qa in user.qas)


def test_saved_file_loads_back(tmp_path) -> None:
    path = tmp_path / "env.json"
    save_environment(_env("tiny", 0), path)
    assert dump_environment(load_environment(path)) == dump_environment(_env("tiny", 0))


def test_protocol_records_generator_seed_and_rounds() -> None:
    for user in _env("v1.extra", 3).users:
        proto = user.amemgym
        assert proto is not None
        assert (proto.generator, proto.seed, proto.config_name) == ("procedural", 3, "v1.extra")
        assert (proto.num_rounds_init, proto.num_rounds_update) == (2, 5)


def test_any_number_of_users_and_periods() -> None:
    cfg = EnvConfig(name="long", num_periods=30, num_questions=4, max_changes_per_state=4)
    env, report = generate_procedural(cfg, seed=1, num_users=45)
    assert len(env.users) == 45 and check_environment(env) == []
    assert len({u.id for u in env.users}) == 45
    assert sum(report["changes_per_period"].values()) == 45 * 30


def test_report_describes_the_generation() -> None:
    _, report = generate_procedural(env_preset("small"), seed=3)
    assert report["seed"] == 3 and report["users"] == 5
    assert sum(report["changes_per_period"].values()) == 5 * 4
    assert set(report["changes_per_period"]) <= {"2", "3", "4"}
    assert report["pack"] == pack_stats() and report["domains"]


def test_shipped_tiny_environment_is_fresh() -> None:
    env, _ = generate_procedural(env_preset("tiny"), seed=42)
    assert tiny_environment_path().read_text(encoding="utf-8") == dump_environment(env)


# --- dynamics and exposure -------------------------------------------------------------------------


@pytest.mark.parametrize(("preset", "user"), _users(*ALL_PRESETS))
def test_period_zero_exposes_every_variable_once(preset: str, user: UserEnv) -> None:
    p0 = user.periods[0]
    exposed = Counter(v for s in p0.sessions for v in s.exposed_states)
    assert set(exposed) == set(user.state_schema) and set(exposed.values()) == {1}
    assert all(1 <= len(s.exposed_states) <= 3 for s in p0.sessions)
    assert all(p0.state[v] == x for s in p0.sessions for v, x in s.exposed_states.items())
    assert all(s.event is None for s in p0.sessions) and set(p0.update_cnts.values()) == {0}


@pytest.mark.parametrize(("preset", "user"), _users(*ALL_PRESETS))
def test_later_sessions_expose_exactly_the_changes(preset: str, user: UserEnv) -> None:
    cfg = env_preset(preset)
    n = cfg.num_changes_per_period
    for period in user.periods[1:]:
        assert max(1, n - 1) <= len(period.updates) <= n + 1
        exposed: dict[str, str] = {}
        for s in period.sessions:
            assert 1 <= len(s.exposed_states) <= 2 and s.event
            assert not exposed.keys() & s.exposed_states.keys()
            exposed.update(s.exposed_states)
        assert exposed == {v: u.new for v, u in period.updates.items()}
        assert all(u.old != u.new for u in period.updates.values())
    last = user.periods[-1].update_cnts
    assert max(last.values()) <= cfg.max_changes_per_state
    changes = Counter(v for p in user.periods[1:] for v in p.updates)
    assert all(last[v] == changes[v] for v in user.state_schema)


@pytest.mark.parametrize(("preset", "user"), _users(("small", 1, None), ("v1.base", 2, None)))
def test_session_times_are_evening_ordered_and_inside_the_period(preset: str, user: UserEnv) -> None:
    for period in user.periods:
        times = [parse_time(s.session_time) for s in period.sessions]
        assert times == sorted(times) and len(set(times)) == len(times)
        assert all(18 <= t.hour <= 22 for t in times)
        end = parse_time(period.period_end)
        start = parse_time(period.period_start) if period.period_start else None
        assert all(t < end and (start is None or t >= start) for t in times)


def test_opening_requests_never_repeat_a_question() -> None:
    for user in _env("v1.base", 2).users:
        questions = [qa.query.lower() for qa in user.qas]
        for period in user.periods:
            for s in period.sessions:
                assert not any(q in s.query.lower() for q in questions)


def test_salt_changes_surface_but_keeps_structure() -> None:
    a, b = _env("small", 4), _env("small", 4, salt=1)
    for ua, ub in zip(a.users, b.users, strict=True):
        assert ua.state_schema == ub.state_schema
        assert [p.state for p in ua.periods] == [p.state for p in ub.periods]
        assert [[s.exposed_states for s in p.sessions] for p in ua.periods] == [
            [s.exposed_states for s in p.sessions] for p in ub.periods
        ]
        assert [qa.model_dump() for qa in ua.qas] == [qa.model_dump() for qa in ub.qas]
        assert ua.id != ub.id
    queries = lambda env: [s.query for u in env.users for p in u.periods for s in p.sessions]  # noqa: E731
    assert queries(a) != queries(b)


# --- answer options --------------------------------------------------------------------------------


def test_answer_lengths_within_a_question_are_similar() -> None:
    for user in _env("v1.extra", 3).users + _env("v1.base", 2).users:
        for qa in user.qas:
            lengths = [len(c.answer) for c in qa.answer_choices]
            assert max(lengths) / min(lengths) < 1.35, qa.query


def test_answers_are_two_or_three_sentences_and_distinct() -> None:
    for user in _env("v1.extra", 3).users:
        for qa in user.qas:
            texts = [c.answer for c in qa.answer_choices]
            assert len(set(texts)) == len(texts)
            assert all(len(re.split(r"(?<=[.!?]) (?=[A-Z])", t)) == 3 for t in texts)


def test_correct_position_varies_across_questions_and_periods() -> None:
    env = _env("v1.base", 2)
    positions = Counter()
    for user in env.users:
        for q in range(len(user.qas)):
            for p in range(len(user.periods)):
                gold, n = user.correct_choice(q, p), len(user.qas[q].answer_choices)
                positions["first" if gold == 0 else "last" if gold == n - 1 else "middle"] += 1
        assert len({user.correct_choice(q, 0) for q in range(len(user.qas))}) >= 2
    total = sum(positions.values())
    assert 0.15 < positions["first"] / total < 0.3 and 0.15 < positions["last"] / total < 0.3


def test_experienced_options_are_the_timeline_and_padding_is_unused() -> None:
    for user in _env("v1.base", 2).users:
        for qa in user.qas:
            golds = {tuple(p.state[v] for v in qa.required_info) for p in user.periods}
            experienced = {tuple(c.state) for c in qa.answer_choices if c.type == "experience"}
            padding = {tuple(c.state) for c in qa.answer_choices if c.type == "random"}
            assert experienced == golds and not padding & golds


def test_no_cheap_shortcut_beats_random_by_three_points() -> None:
    hits: Counter[str] = Counter()
    n = 0
    for user in _env("v1.base", 2).users:
        said: list[str] = []
        for p, period in enumerate(user.periods):
            said += [s.query for s in period.sessions]
            heard = set().union(*(content_stems(t) for t in said))
            for q, qa in enumerate(user.qas):
                gold = user.correct_choice(q, p)
                texts = [c.answer for c in qa.answer_choices]
                n += 1
                hits["random"] += 1 / len(texts)
                for name, scores in {
                    "first": [-i for i in range(len(texts))],
                    "last": list(range(len(texts))),
                    "longest": [len(t) for t in texts],
                    "shortest": [-len(t) for t in texts],
                    "question": [len(content_stems(t) & content_stems(qa.query)) for t in texts],
                    "conversation": [len(content_stems(t) & heard) for t in texts],
                }.items():
                    top = [i for i, s in enumerate(scores) if s == max(scores)]
                    hits[name] += (gold in top) / len(top)
    baseline = hits.pop("random") / n
    assert {k: round(v / n - baseline, 3) for k, v in hits.items() if v / n - baseline > 0.03} == {}


# --- errors ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields",
    [
        {"num_choices_per_state": 5},
        {"num_states_per_question": 4},
        {"num_periods": 200},
        {"num_questions": 500},
    ],
)
def test_unsatisfiable_configs_raise_config_error(fields: dict) -> None:
    with pytest.raises(ConfigError, match="procedural"):
        generate_procedural(EnvConfig(**fields), num_users=1)
