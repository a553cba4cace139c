"""The LLM generation pipeline against a scripted model that answers every step from the prompt and schema."""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from amemgym.config import EnvConfig
from amemgym.families.statetrack.data import load_environment
from amemgym.families.statetrack.generate.llm import GenerationError, Limits, StepFailure, generate_llm
from amemgym.families.statetrack.generate.llm.answers import answer_problem, patch_answer
from amemgym.families.statetrack.generate.llm.evolution import check_changes, check_events
from amemgym.families.statetrack.generate.llm.questions import question_problem
from amemgym.families.statetrack.generate.llm.schema import check_groups
from amemgym.families.statetrack.generate.llm.utterances import check_initial
from amemgym.families.statetrack.generate.personas import Persona
from amemgym.llm import ChatRequest, PermanentError
from amemgym.testing.scripted_model import scripted_client

CFG = EnvConfig(
    name="test", num_user_profiles=2, num_questions=2, num_periods=2, num_states_per_question=2,
    num_choices_per_state=3, num_changes_per_period=2, max_changes_per_state=2, min_state_variants=4,
)
PERSONAS = [
    Persona(uuid=f"u{i}", name=name, age=30 + i, occupation="baker", persona=f"{name} bakes bread at dawn.")
    for i, name in enumerate(["Ana Silva", "Ben Okoro", "Chen Wei"])
]
# Question i depends on its own topic and on "schedule", listed with different values each time, so the
# schema step must merge them, unify the values and rewrite both questions.
TOPICS = ["budget", "mood", "garden", "travel"]


def first_user(req: ChatRequest) -> str:
    return next(m["content"] for m in req.messages if m["role"] == "user")


def props(req: ChatRequest) -> dict[str, Any]:
    assert req.json_schema is not None
    return req.json_schema["properties"]


class GenScript:
    """Correct replies for every step; ``bad[tag]`` replaces the reply of the first calls with a tag."""

    def __init__(self, bad: dict[str, list[Any]] | None = None, fail_tags: set[str] | None = None) -> None:
        self.bad = {k: list(v) for k, v in (bad or {}).items()}
        self.fail_tags = fail_tags or set()
        self.tags: Counter[str] = Counter()

    def __call__(self, req: ChatRequest) -> str | BaseException:
        self.tags[req.tag] += 1
        if req.tag in self.fail_tags:
            raise RuntimeError(f"killed at {req.tag}")
        if self.bad.get(req.tag):
            reply = self.bad[req.tag].pop(0)
            out = reply(req) if callable(reply) else reply
            return out if isinstance(out, BaseException) else json.dumps(out)
        return json.dumps(getattr(self, req.tag.replace("gen.", "").replace(".", "_"))(req))

    def profile(self, req: ChatRequest) -> Any:
        name = re.search(r"^name: (.+)$", first_user(req), flags=re.M)
        return {"name": name.group(1) if name else "X", "summary": "Cheerful, talks fast, lives near the river."}

    def questions(self, req: ChatRequest) -> Any:
        q = props(req)["questions"]
        n_q = q["minItems"]
        n_c = q["items"]["properties"]["required_info"]["items"]["properties"]["choices"]["minItems"]
        return {"questions": [
            {"question": f"How should I plan my week around {TOPICS[i]}?", "required_info": [
                {"info_type": TOPICS[i], "choices": [f"{TOPICS[i]}{k}" for k in range(n_c)]},
                {"info_type": "schedule", "choices": [f"slot{i}{k}" for k in range(n_c)]},
            ]}
            for i in range(n_q)
        ]}

    def schema_group(self, req: ChatRequest) -> Any:
        types = props(req)["variables"]["items"]["properties"]["info_types"]["items"]["enum"]
        return {"variables": [{"name": f"{t} level", "info_types": [t]} for t in types]}

    def schema_values(self, req: ChatRequest) -> Any:
        return {"values": [f"shift{k}" for k in range(props(req)["values"]["minItems"])]}

    def schema_rewrite(self, req: ChatRequest) -> Any:
        question = re.search(r"^Question: (.+)$", first_user(req), flags=re.M)
        assert question is not None
        return {"question": question.group(1) + " (shifts)", "added_variables": []}

    def initial_state(self, req: ChatRequest) -> Any:
        return {"state": {v: s["enum"][1] for v, s in props(req)["state"]["properties"].items()}}

    def evolution_updates(self, req: ChatRequest) -> Any:
        spec = props(req)["changes"]
        options = spec["items"]["anyOf"]
        count = min(spec["maxItems"], max(spec["minItems"], 2))
        start = (req.seed or 0) % len(options)
        picked = [options[(start + i) % len(options)]["properties"] for i in range(count)]
        return {"changes": [{"variable": o["variable"]["enum"][0], "new_value": o["new_value"]["enum"][0]}
                            for o in picked]}

    def evolution_events(self, req: ChatRequest) -> Any:
        changed = props(req)["events"]["items"]["properties"]["variables"]["items"]["enum"]
        return {"period_summary": "Busy months.",
                "events": [{"event": f"Something shifted in {v}.", "variables": [v]} for v in changed]}

    def answers_write(self, req: ChatRequest) -> Any:
        lines = re.findall(r"^\d+\. (.+)$", first_user(req), flags=re.M)
        return {"answers": [f"Advice for {line}." for line in lines]}

    def answers_reflection(self, req: ChatRequest) -> Any:
        text = first_user(req)
        answer = re.search(r'received:\n"(.*)"\n', text)
        assert answer is not None
        lines = re.findall(r"^(\d+)\. (.+)$", text, flags=re.M)
        return {"choice": next(int(k) for k, line in lines if line in answer.group(1))}

    def answers_refine(self, req: ChatRequest) -> Any:
        target = re.search(r"meant for the situation: (.+)$", first_user(req), flags=re.M)
        assert target is not None
        return {"answer": f"Advice for {target.group(1)}."}

    def utterances_write(self, req: ChatRequest) -> Any:
        text = first_user(req)
        if "utterances" in props(req):
            state = re.findall(r"^- (\w+) = (\w+)$", text, flags=re.M)
            return {"utterances": [{"query": f"Lately my life is {val}.", "variables": [var]} for var, val in state]}
        changes = re.findall(r"^- ([\w ]+): ([\w ]+) -> ([\w ]+)$", text, flags=re.M)
        return {"query": " ".join(f"Things turned {new} now." for _, _, new in changes)}

    def utterances_write_single(self, req: ChatRequest) -> Any:
        fact = re.search(r"^([\w ]+) = ([\w ]+)$", first_user(req), flags=re.M)
        assert fact is not None
        return {"query": f"Just so you know, it is {fact.group(2)} these days."}

    def evolution_events_each(self, req: ChatRequest) -> Any:
        return {"period_summary": "Quiet months.",
                "events": {v: f"Something shifted in {v}." for v in props(req)["events"]["properties"]}}

    def answers_fix(self, req: ChatRequest) -> Any:
        target = re.search(r"for a user in this situation: (.+)$", first_user(req), flags=re.M)
        assert target is not None  # shown in plain words; answered in the form the reflection script reads
        pairs = [part.split(": ") for part in target.group(1).split("; ")]
        return {"answer": "Advice for " + "; ".join(f"{v.replace(' ', '_')} = {x}" for v, x in pairs) + "."}

    def utterances_exposure(self, req: ChatRequest) -> Any:
        said = re.search(r'sent to an assistant:\n"(.*)"\n', first_user(req))
        assert said is not None
        words = set(re.findall(r"\w+", said.group(1)))
        return {v: next((x for x in s["enum"] if x in words), s["enum"][0]) for v, s in props(req).items()}

    def utterances_refine(self, req: ChatRequest) -> Any:
        intended = re.findall(r"^- (\w+) = (\w+)$", first_user(req), flags=re.M)
        return {"query": " ".join(f"Honestly it is {val}." for _, val in intended)}


def generate(script: GenScript, out: Path, cache: Path | None = None, **kw: Any) -> Any:
    llm = scripted_client(script, cache=cache)
    return asyncio.run(generate_llm(CFG, llm, out, personas=PERSONAS, seed=7, **kw))


# ---- end to end -------------------------------------------------------------------------------------------
def test_full_environment_loads_and_report_is_complete(tmp_path: Path) -> None:
    result = generate(GenScript(), tmp_path)
    env = load_environment(tmp_path / "data.json")
    assert result.ok and len(env.users) == 2
    user = env.users[0]
    assert len(user.periods) == CFG.num_periods + 1 and len(user.qas) == CFG.num_questions
    assert set(user.state_schema) == {"budget_level", "mood_level", "schedule_level"}
    assert user.state_schema["schedule_level"] == ["shift0", "shift1", "shift2"]
    assert all(qa.query.endswith("(shifts)") for qa in user.qas)
    assert all(len(qa.answer_choices) >= CFG.min_state_variants for qa in user.qas)
    assert user.periods[0].period_start is None and user.periods[0].period_end == CFG.start_date
    assert all(u.old is None for u in user.periods[0].updates.values())
    for period in user.periods[1:]:
        assert 1 <= len(period.updates) <= 3 and len(period.sessions) == len(period.updates)
        for session in period.sessions:
            assert session.event is not None and list(session.exposed_states)[0] in session.event
            assert all(period.updates[v].new == x for v, x in session.exposed_states.items())
        assert all(re.fullmatch(r"\d{4}-\d\d-\d\d (1[89]|2[0-2]):\d\d", s.session_time) for s in period.sessions)
    assert user.amemgym is not None and user.amemgym.generator == "llm" and user.amemgym.seed == 7
    report = json.loads((tmp_path / "generation_report.json").read_text())
    assert report["complete"] and report["users_ok"] == 2 and report["failures"] == []
    assert report["users"][0]["exposure_check"]["pass_rate"] == 1.0
    assert report["users"][0]["answer_reflection"]["first_try_pass_rate"] == 1.0
    steps = report["steps"]
    assert steps["questions"]["calls"] == 2 and steps["questions"]["first_try"] == 2
    assert steps["schema.values"]["calls"] == 2 and steps["schema.rewrite"]["units"] == 4
    assert all(s["prompt_tokens"] > 0 for s in steps.values())


def test_same_seed_and_cache_give_identical_bytes(tmp_path: Path) -> None:
    cache = tmp_path / "c.sqlite"
    generate(GenScript(), tmp_path / "a", cache)
    llm = scripted_client(GenScript(), cache=cache)
    asyncio.run(generate_llm(CFG, llm, tmp_path / "b", personas=PERSONAS, seed=7))
    assert llm.scripted.requests == []  # every call was answered from the cache
    assert (tmp_path / "a" / "data.json").read_bytes() == (tmp_path / "b" / "data.json").read_bytes()


def test_calls_carry_derived_seeds_and_temperatures(tmp_path: Path) -> None:
    llm = scripted_client(GenScript())
    asyncio.run(generate_llm(CFG, llm, tmp_path, personas=PERSONAS, seed=7))
    assert all(r.seed is not None for r in llm.scripted.requests)
    temps = {r.tag: r.temperature for r in llm.scripted.requests}
    assert temps["gen.questions"] == 1.0 and temps["gen.evolution.updates"] == 1.0
    assert temps["gen.profile"] == 0.2 and temps["gen.answers.write"] == 0.2


# ---- validation rules -------------------------------------------------------------------------------------
def test_wrong_question_count_is_shown_and_reasked(tmp_path: Path) -> None:
    short = lambda req: {"questions": GenScript().questions(req)["questions"][:1]}  # noqa: E731
    script = GenScript(bad={"gen.questions": [short]})
    result = generate(script, tmp_path, num_users=1)
    assert result.ok
    retry = result.report["steps"]["questions"]
    assert retry["after_retry"] == 1 and retry["calls"] == 2


def test_valid_questions_are_kept_and_only_the_rest_asked_again(tmp_path: Path) -> None:
    def one_broken(req: ChatRequest) -> Any:
        reply = GenScript().questions(req)
        reply["questions"][1]["required_info"][1] = reply["questions"][1]["required_info"][0]
        return reply

    def both_broken(req: ChatRequest) -> Any:
        reply = one_broken(req)
        reply["questions"][0] = reply["questions"][1]
        return reply

    script = GenScript(bad={"gen.questions": [one_broken, both_broken]})
    result = generate(script, tmp_path, num_users=1)
    assert result.ok and script.tags["gen.questions"] == 3
    assert result.report["steps"]["questions"]["after_retry"] == 1
    queries = [qa.query for qa in result.environment.users[0].qas]
    assert len(set(queries)) == CFG.num_questions

    script = GenScript(bad={"gen.questions": [both_broken] * 3})
    with pytest.raises(GenerationError) as info:
        generate(script, tmp_path / "never", num_users=1)
    assert "only 0 of 2 valid questions after 3 rounds" in info.value.result.failed[0].reason
    assert "lists the same info type twice" in info.value.result.failed[0].reason


def test_a_question_with_duplicate_values_is_refused() -> None:
    q = {"question": "Q?", "required_info": [{"info_type": "a", "choices": ["x", "X", "y"]},
                                             {"info_type": "b", "choices": ["1", "2", "3"]}]}
    assert "distinct" in (question_problem(q, 2, 3) or "")


def test_grouping_must_map_every_info_type() -> None:
    value = {"variables": [{"name": "a_var", "info_types": ["a"]}]}
    assert "not in any variable" in check_groups(value, ["a", "b"], 1)


def test_value_outside_schema_is_reasked_with_the_error_shown(tmp_path: Path) -> None:
    def bad(req: ChatRequest) -> Any:
        reply = GenScript().evolution_updates(req)
        reply["changes"][0]["new_value"] = "nonsense"
        return reply

    llm = scripted_client(GenScript(bad={"gen.evolution.updates": [bad]}))
    result = asyncio.run(generate_llm(CFG, llm, tmp_path, personas=PERSONAS, seed=7, num_users=1))
    assert result.ok and result.report["steps"]["evolution.updates"]["after_retry"] == 1
    retry = next(r for r in llm.scripted.requests if r.tag == "gen.evolution.updates" and len(r.messages) == 3)
    assert "nonsense" in retry.messages[1]["content"]
    assert "new_value is 'nonsense', which is not allowed" in retry.messages[2]["content"]


def test_check_changes_rules() -> None:
    schema = {"a": ["x", "y", "z"], "b": ["p", "q", "r"]}
    state = {"a": "x", "b": "p"}
    counts = {"a": 0, "b": 2}
    one = lambda var, new: {"changes": [{"variable": var, "new_value": new}]}  # noqa: E731
    assert "already" in check_changes(one("a", "x"), schema, state, counts, 2, 1, 2)
    assert "not a value" in check_changes(one("a", "w"), schema, state, counts, 2, 1, 2)
    assert "maximum" in check_changes(one("b", "q"), schema, state, counts, 2, 1, 2)
    assert "not a variable" in check_changes(one("c", "x"), schema, state, counts, 2, 1, 2)
    assert check_changes(one("a", "y"), schema, state, counts, 2, 1, 2) is None
    assert "between" in check_changes({"changes": []}, schema, state, counts, 2, 1, 2)


def test_uncovered_events_are_reasked(tmp_path: Path) -> None:
    def partial(req: ChatRequest) -> Any:
        reply = GenScript().evolution_events(req)
        reply["events"] = reply["events"][:1]
        return reply

    script = GenScript(bad={"gen.evolution.events": [partial]})
    result = generate(script, tmp_path, num_users=1)
    assert result.ok and result.report["steps"]["evolution.events"]["after_retry"] == 1
    assert "no event explains" in check_events({"events": [{"event": "e", "variables": ["a"]}]}, ["a", "b"])
    twice = {"events": [{"event": "e", "variables": ["a"]}, {"event": "f", "variables": ["a", "b"]}]}
    assert "exactly one event" in check_events(twice, ["a", "b"])


def test_initial_utterances_must_cover_every_variable() -> None:
    value = {"utterances": [{"query": "hi", "variables": ["a"]}]}
    assert "no utterance reveals b" in check_initial(value, {"a": ["x", "y"], "b": ["p", "q"]})
    quoted = {"utterances": [{"query": "it is very_high", "variables": ["a"]}]}
    assert "quotes" in check_initial(quoted, {"a": ["very_high", "low"]})


def test_failed_exposure_check_is_refined_until_it_passes(tmp_path: Path) -> None:
    def misread(req: ChatRequest) -> Any:
        return {v: next(x for x in s["enum"][::-1]) for v, s in props(req).items()}

    script = GenScript(bad={"gen.utterances.exposure": [misread, misread]})
    result = generate(script, tmp_path, num_users=1)
    assert result.ok
    rates = result.report["users"][0]["exposure_check"]
    assert rates["after_refinement"] >= 1 and rates["failed"] == 0 and rates["pass_rate"] == 1.0
    assert rates["first_try_pass_rate"] < 1.0 and script.tags["gen.utterances.refine"] >= 1


def test_failed_reflection_is_refined_until_it_passes(tmp_path: Path) -> None:
    def wrong(req: ChatRequest) -> Any:
        right = GenScript().answers_reflection(req)["choice"]
        return {"choice": right % len(props(req)["choice"]["enum"]) + 1}

    script = GenScript(bad={"gen.answers.reflection": [wrong, wrong]})
    result = generate(script, tmp_path, num_users=1)
    assert result.ok
    rates = result.report["users"][0]["answer_reflection"]
    assert rates["after_refinement"] >= 1 and rates["failed"] == 0 and rates["pass_rate"] == 1.0
    assert script.tags["gen.answers.refine"] >= 1


def _never_reflected(script: GenScript) -> None:
    # The classifier always picks choice 1, and every refinement is a vague (but distinct) answer.
    script.answers_refine = lambda req: {  # type: ignore[method-assign]
        "answer": f"Vague advice {req.seed}."}
    script.bad["gen.answers.reflection"] = [{"choice": 1}] * 100


def test_reflection_that_never_passes_fails_the_user_under_strict_checks(tmp_path: Path) -> None:
    script = GenScript()
    _never_reflected(script)
    with pytest.raises(GenerationError) as info:
        generate(script, tmp_path, num_users=1, limits=Limits(refinements=2, strict_checks=True))
    failure = info.value.result.failed[0]
    assert failure.step == "answers.reflection" and "after 2 refinements" in failure.reason
    assert not (tmp_path / "data.json").exists()


def test_reflection_that_never_passes_is_kept_and_listed_by_default(tmp_path: Path) -> None:
    script = GenScript()
    _never_reflected(script)
    result = generate(script, tmp_path, num_users=1, limits=Limits(refinements=2))
    assert result.ok and (tmp_path / "data.json").exists()
    user = result.report["users"][0]
    rates = user["answer_reflection"]
    assert rates["failed"] > 0 and rates["pass_rate"] < 1.0
    assert len(user["unverified"]) == rates["failed"] == result.report["unverified_items"]
    assert all("still picks choice 1 after 2 refinements" in u for u in user["unverified"])
    assert user["unverified"] == sorted(user["unverified"], key=lambda u: [int(n) for n in re.findall(r"\d+", u)])
    kept = result.environment.users[0].qas[0].answer_choices
    assert len({c.answer for c in kept}) == len(kept)


def test_answer_that_breaks_a_rule_is_rewritten_on_its_own(tmp_path: Path) -> None:
    def repeated(req: ChatRequest) -> Any:
        answers = GenScript().answers_write(req)["answers"]
        return {"answers": [answers[0], answers[0], *answers[2:]]}

    script = GenScript(bad={"gen.answers.write": [repeated]})
    result = generate(script, tmp_path, num_users=1)
    assert result.ok and script.tags["gen.answers.fix"] == 1
    assert result.report["steps"]["answers.fix"]["first_try"] == 1
    assert "identical" in (answer_problem("Same.", [], ["Same."]) or "")
    assert "quotes" in (answer_problem("Try it as a night_owl.", ["night_owl", "early_bird"], []) or "")


def test_answer_whose_rewrites_keep_failing_is_patched_and_listed(tmp_path: Path) -> None:
    def repeated(req: ChatRequest) -> Any:
        answers = GenScript().answers_write(req)["answers"]
        return {"answers": [answers[0], answers[0], *answers[2:]]}

    def copy_first(req: ChatRequest) -> Any:
        return {"answer": re.findall(r'^  - "(.*)"$', first_user(req), flags=re.M)[0]}

    script = GenScript(bad={"gen.answers.write": [repeated], "gen.answers.fix": [copy_first] * 3})
    result = generate(script, tmp_path, num_users=1)
    assert result.ok, result.failed
    assert result.report["steps"]["answers.fix"]["failed"] == 1
    unverified = result.report["users"][0]["unverified"]
    assert len(unverified) == 1 and "prefixed with its situation" in unverified[0]
    for qa in result.environment.users[0].qas:
        assert len({c.answer for c in qa.answer_choices}) == len(qa.answer_choices)
    # The patched draft still reads like choice 1, so reflection catches it and refines it as usual.
    assert script.tags["gen.answers.refine"] >= 1
    assert patch_answer("Try it as a night_owl.", "sleep: night owl", ["night_owl"]) == (
        "For someone with sleep: night owl: Try it as a night owl.")

    with pytest.raises(GenerationError):
        generate(GenScript(bad={"gen.answers.write": [repeated], "gen.answers.fix": [copy_first] * 3}),
                 tmp_path / "strict", num_users=1, limits=Limits(strict_checks=True))


def test_events_that_never_pass_fall_back_to_one_event_per_change(tmp_path: Path) -> None:
    def twice(req: ChatRequest) -> Any:
        changed = props(req)["events"]["items"]["properties"]["variables"]["items"]["enum"]
        return {"period_summary": "x", "events": [{"event": "a", "variables": changed},
                                                  {"event": "b", "variables": changed}]}

    script = GenScript(bad={"gen.evolution.events": [twice] * 3})
    result = generate(script, tmp_path, num_users=1)
    assert result.ok, result.failed
    steps = result.report["steps"]
    assert steps["evolution.events"]["failed"] == 1 and steps["evolution.events_each"]["first_try"] == 1
    period = result.environment.users[0].periods[1]
    assert all(len(s.exposed_states) == 1 for s in period.sessions)
    assert len(period.sessions) == len(period.updates)

    # A model that cannot even close that JSON: each change is stated plainly as its own event.
    script = GenScript(bad={"gen.evolution.events": [twice] * 3, "gen.evolution.events_each": ['{"period_summ'] * 6})
    result = generate(script, tmp_path / "plain", num_users=1)
    assert result.ok, result.failed
    assert result.report["steps"]["evolution.events_plain"]["units"] == 1
    session = result.environment.users[0].periods[1].sessions[0]
    (var, value), = session.exposed_states.items()
    assert session.event is not None and session.event.startswith(f"Their {var.replace('_', ' ')} went from")
    assert session.event.endswith(f" to {value}.")


def test_initial_utterances_that_never_pass_fall_back_to_one_per_variable(tmp_path: Path) -> None:
    def one_only(req: ChatRequest) -> Any:
        if "utterances" not in props(req):
            return GenScript().utterances_write(req)
        return {"utterances": GenScript().utterances_write(req)["utterances"][:1]}

    script = GenScript(bad={"gen.utterances.write": [one_only] * 3})
    result = generate(script, tmp_path, num_users=1)
    assert result.ok, result.failed
    user = result.environment.users[0]
    assert [list(s.exposed_states) for s in user.periods[0].sessions] == [[v] for v in user.state_schema]
    assert result.report["steps"]["utterances.write_single"]["units"] == len(user.state_schema)


# ---- resume and partial failure ---------------------------------------------------------------------------
def test_resume_after_a_crash_skips_finished_stages(tmp_path: Path) -> None:
    crashing = GenScript(fail_tags={"gen.answers.write"})
    with pytest.raises(RuntimeError, match="killed"):
        generate(crashing, tmp_path / "run", num_users=1)
    assert crashing.tags["gen.evolution.events"] > 0
    work = next(p for p in (tmp_path / "run" / "work").iterdir() if p.is_dir())
    assert (work / "utterances.json").exists() is False and (work / "evolution.json").exists()

    resumed = GenScript()
    result = generate(resumed, tmp_path / "run", num_users=1)
    assert result.ok
    for tag in ("gen.profile", "gen.questions", "gen.schema.group", "gen.initial_state", "gen.evolution.updates"):
        assert resumed.tags[tag] == 0, tag
    assert resumed.tags["gen.answers.write"] == CFG.num_questions
    assert result.report["users"][0]["resumed_stages"] == ["profile", "questions", "schema", "initial_state",
                                                           "evolution"]
    generate(GenScript(), tmp_path / "clean", num_users=1)
    assert (tmp_path / "run" / "data.json").read_bytes() == (tmp_path / "clean" / "data.json").read_bytes()


def test_one_user_failing_is_reported_and_the_others_are_written(tmp_path: Path) -> None:
    def refuse_ben(req: ChatRequest) -> Any:
        if "Ben Okoro" in first_user(req):
            return PermanentError("bad_request", "model refuses")
        return GenScript().profile(req)

    script = GenScript(bad={"gen.profile": [refuse_ben] * 3})
    with pytest.raises(GenerationError) as info:
        generate(script, tmp_path, num_users=3)
    result = info.value.result
    assert not result.ok and [f.user_id for f in result.failed] == ["u1"]
    failure = result.report["failures"][0]
    assert failure["step"] == "profile" and "model refuses" in failure["reason"]
    env = load_environment(tmp_path / "data.json")
    assert "u1" not in {u.id for u in env.users} and len(env.users) == 2
    assert json.loads((tmp_path / "generation_report.json").read_text())["users_failed"] == 1

    partial = generate(GenScript(bad={"gen.profile": [refuse_ben] * 3}), tmp_path / "p", num_users=3,
                       allow_partial=True)
    assert not partial.ok and partial.environment is not None and len(partial.environment.users) == 2


def test_rerun_with_another_seed_in_the_same_folder_is_refused(tmp_path: Path) -> None:
    generate(GenScript(), tmp_path, num_users=1)
    llm = scripted_client(GenScript())
    with pytest.raises(Exception, match="different seed"):
        asyncio.run(generate_llm(CFG, llm, tmp_path, personas=PERSONAS, seed=8, num_users=1))


def test_grouping_that_never_passes_falls_back_to_one_variable_per_info_type(tmp_path: Path) -> None:
    # A model that cannot group (small models map one type to two variables) must not sink the user:
    # every info type becomes its own variable, and the report counts the fallback.
    def overlapping(req: ChatRequest) -> Any:
        types = props(req)["variables"]["items"]["properties"]["info_types"]["items"]["enum"]
        return {"variables": [{"name": "everything", "info_types": list(types)},
                              {"name": "again", "info_types": [types[0]]}]}

    script = GenScript(bad={"gen.schema.group": [overlapping] * 10})
    result = generate(script, tmp_path, num_users=1)
    assert result.ok, result.failed
    assert result.report["steps"]["schema.group"]["failed"] == 1
    assert result.report["steps"]["schema.group_fallback"]["first_try"] == 1
    user = result.environment.users[0]
    assert "schedule" in user.state_schema


def test_utterance_that_keeps_quoting_value_names_is_put_in_plain_words(tmp_path: Path) -> None:
    from amemgym.families.statetrack.generate.llm.base import GenContext
    from amemgym.families.statetrack.generate.llm.utterances import _write_one

    schema = {"sleep": ["night_owl", "early_bird"]}
    llm = scripted_client(GenScript(bad={"gen.utterances.write": [{"query": "I am a night_owl now."}] * 6}))

    def run(limits: Limits) -> tuple[str, GenContext]:
        ctx = GenContext(llm=llm, cfg=CFG, user_seed=1, limits=limits)
        facts = {"profile": "p", "date": "2020-01-01", "event": "e", "changes": "c", "schema": "s"}
        return asyncio.run(_write_one(ctx, "utterances.write", "gen_utterance_update", (1, 0), schema, ["sleep"],
                                      **facts)), ctx

    text, ctx = run(Limits())
    assert text == "I am a night owl now." and len(llm.scripted.requests) == 3
    assert ctx.unverified_list() == ["period 1, session 1: [1/0] it quotes the value name(s) night_owl; imply them "
                                     "through the situation instead (still wrong after 3 tries); the quoted names "
                                     "were put in plain words"]
    with pytest.raises(StepFailure, match="quotes the value name"):
        run(Limits(strict_checks=True))


def test_a_variable_changed_twice_keeps_its_first_change(tmp_path: Path) -> None:
    def doubled(req: ChatRequest) -> Any:
        reply = GenScript().evolution_updates(req)
        return {"changes": [*reply["changes"], reply["changes"][0]]}

    script = GenScript(bad={"gen.evolution.updates": [doubled]})
    result = generate(script, tmp_path, num_users=1)
    assert result.ok and script.tags["gen.evolution.updates"] == CFG.num_periods
    steps = result.report["steps"]
    assert steps["evolution.updates_deduplicated"]["units"] == 1 and steps["evolution.updates"]["first_try"] == 2


def test_unusable_unified_values_and_rewrites_fall_back_to_valid_choices(tmp_path: Path) -> None:
    def repeated(req: ChatRequest) -> Any:
        n = props(req)["values"]["minItems"]
        return {"values": ["same"] * n}

    script = GenScript(bad={"gen.schema.values": [repeated] * 3})
    result = generate(script, tmp_path, num_users=1)
    assert result.ok, result.failed
    user = result.environment.users[0]
    assert user.state_schema["schedule_level"] == ["slot00", "slot01", "slot02"]  # question 1's values
    assert result.report["steps"]["schema.values_fallback"]["units"] == 1

    def twice(req: ChatRequest) -> Any:
        others = props(req)["added_variables"]["items"]
        return {"question": "Q?", "added_variables": [others.get("enum", ["x"])[0]] * 2}

    merged = GenScript(bad={"gen.schema.rewrite": [twice] * 10})
    merged.schema_group = lambda req: {"variables": [  # type: ignore[method-assign]
        {"name": "everything", "info_types": ["budget", "schedule"]}, {"name": "mood", "info_types": ["mood"]}]}
    result = generate(merged, tmp_path / "merged", num_users=1)
    assert result.ok, result.failed
    assert result.report["steps"]["schema.rewrite_fallback"]["units"] == 2  # both questions touch "everything"
    qa = result.environment.users[0].qas[0]
    assert qa.required_info == ["everything", "mood"] and qa.query.startswith("How should I plan my week")


def test_a_profile_summary_that_never_parses_falls_back_to_the_persona_details(tmp_path: Path) -> None:
    # What a looping small model leaves at the token limit: JSON cut off in the middle of the summary.
    class CutOff(GenScript):
        def __call__(self, req: ChatRequest) -> str | BaseException:
            if req.tag == "gen.profile":
                self.tags[req.tag] += 1
                return '{"name": "Ana Silva", "summary": "She is kind. She is kind. She is kind'
            return super().__call__(req)

    script = CutOff()
    result = generate(script, tmp_path, num_users=1)
    assert result.ok, result.failed
    assert script.tags["gen.profile"] == 3 * 2  # three tries, each with one resample of the unparsable reply
    steps = result.report["steps"]
    assert steps["profile"]["failed"] == 1 and steps["profile_fallback"]["units"] == 1
    user = result.environment.users[0]
    assert user.user_profile.name == next(p.name for p in PERSONAS if p.uuid == user.id)
    assert "bakes bread at dawn" in (user.user_profile.complementary_info or "")


def test_refinements_that_converge_on_one_text_are_told_apart(tmp_path: Path) -> None:
    script = GenScript()
    script.answers_refine = lambda req: {"answer": "Same vague advice."}  # type: ignore[method-assign]
    script.bad["gen.answers.reflection"] = [{"choice": 1}] * 200
    result = generate(script, tmp_path, num_users=1, limits=Limits(refinements=1))
    assert result.ok, result.failed
    unverified = result.report["users"][0]["unverified"]
    assert any("refined into another choice's answer" in u for u in unverified)
    for qa in result.environment.users[0].qas:
        assert len({c.answer for c in qa.answer_choices}) == len(qa.answer_choices)
    with pytest.raises(GenerationError):
        strict = GenScript(bad={"gen.answers.reflection": [{"choice": 1}] * 200})
        strict.answers_refine = script.answers_refine  # type: ignore[method-assign]
        generate(strict, tmp_path / "strict", num_users=1, limits=Limits(refinements=1, strict_checks=True))


def test_checkers_that_never_reply_usably_leave_items_unverified(tmp_path: Path) -> None:
    script = GenScript(bad={"gen.utterances.exposure": [["not", "an", "object"]] * 500,
                            "gen.answers.reflection": [["nor", "this"]] * 500})
    result = generate(script, tmp_path, num_users=1)
    assert result.ok, result.failed
    user = result.report["users"][0]
    assert user["exposure_check"]["failed"] == user["exposure_check"]["checked"] > 0
    assert user["answer_reflection"]["failed"] == user["answer_reflection"]["checked"] > 0
    assert any("the reader gave no usable reply" in u for u in user["unverified"])
    assert any("the classifier gave no usable reply" in u for u in user["unverified"])
    assert script.tags["gen.utterances.refine"] == script.tags["gen.answers.refine"] == 0
