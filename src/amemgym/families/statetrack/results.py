"""Turn a run directory's per-user files into metrics and traces."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from ...config import PROTOCOL_MAX_TOKENS, RunSettings
from ...errors import RunError
from ...records import EvaluationRecord, UpperBoundRecord, as_dict, read_record
from ...redact import MASK, redact_content
from .asking import option_score, option_state
from .data.model import Environment, UserEnv
from .episode import recorded_sessions
from .layout import TRACE, RunDir
from .metrics import QuestionOutcome, aggregate, answer_scores, result_flags
from .questioning import combo_key, upper_bound_key
from .validity.exposure import unchecked_reason
from .validity.sim_audit import degenerate_summary


def changed_at(user: UserEnv, period: int, variable: str) -> int:
    """The latest period <= ``period`` whose updates changed ``variable`` (period 0 sets every variable)."""
    for p in range(period, 0, -1):
        if variable in user.periods[p].changes:
            return p
    return 0


def question_outcome(user: UserEnv, period: int, question: int, score: float, ub_score: float | None,
                     probe: dict[str, bool], n_choices: int | None = None) -> QuestionOutcome:
    """One scored question as the metrics take it, with when each of its required variables last changed.

    ``n_choices`` defaults to the options the environment offers; a run passes the count it recorded.
    """
    qa = user.qas[question]
    return QuestionOutcome(user=user.id, period=period, question=question, score=score,
                           n_choices=len(qa.answer_choices) if n_choices is None else n_choices,
                           ub_score=ub_score, probe=dict(probe),
                           changed_at={v: changed_at(user, period, v) for v in qa.required_info})


def _written(value: Any) -> Any:
    """``value`` as a run file holds it: text shaped like a key is masked on its way to disk, so an environment
    value of that shape is compared in its masked form."""
    return json.loads(redact_content(json.dumps(value, ensure_ascii=False)))


def _refuse_changed(where: str, found: dict[str, Any], expected: dict[str, Any], period: int | None,
                    fix: str) -> None:
    for name, value in expected.items():
        if found.get(name) != value:
            at = f" at period {period}" if period is not None else ""
            raise RunError(f"{where}.{name} is {found.get(name)!r} but the recorded answer earns {value!r}{at}; the "
                           f"file was changed after it was written ({fix})")


#: The fields every evaluated question carries since answers are parsed under both rules (``status`` marks
#: such a record; older ones are checked on the fields they have).
_QUESTION_FIELDS = ("choice", "status", "original_choice", "gold", "n_choices", "score", "score_original_rule",
                    "probe_values", "probe_correct")
_FIX = "delete it and run again to evaluate the period anew"


def check_scored(user: UserEnv, period: int, q: dict[str, Any], where: str,
                 upper_bound: dict[str, Any] | None = None) -> None:
    """Refuse a scored question whose gold option, option count, parse status, scores (strict and original
    rule) or probe verdicts are not what its recorded choices and probe values earn at ``period``, or whose
    upper-bound scores are not those of the ``upper_bound`` entry it was scored with: a hand edit would
    otherwise change the run's numbers unnoticed.

    Only the recorded choices and values are trusted, never re-parsed from the reply, so a later change of the
    parsing rules leaves earlier runs readable.

    Raises:
        RunError: naming ``where`` (the file and question) with the field, and what it should be.
    """
    if "status" in q and (missing := [f for f in _QUESTION_FIELDS if f not in q]):
        raise RunError(f"{where}.{missing[0]} is missing; the file was changed after it was written ({_FIX})")
    qa = user.qas[q["question"]]
    state = user.periods[period].state
    truth = [state[v] for v in qa.required_info]
    choice = q.get("choice")
    expected: dict[str, Any] = {"gold": user.correct_choice(q["question"], period) + 1,
                                "score": option_score(qa, choice, truth)}
    if "n_choices" in q:
        expected["n_choices"] = len(qa.answer_choices)
    if "status" in q and (q["status"] == "ok") != (choice is not None):
        raise RunError(f"{where}.status is {q['status']!r} but its choice is {choice!r}; the file was changed "
                       f"after it was written ({_FIX})")
    if "original_choice" in q:
        if choice is not None:  # a valid reply is the same option under both rules
            expected["original_choice"] = choice
        if q.get("score_original_rule") is not None:
            expected["score_original_rule"] = option_score(qa, q["original_choice"], truth)
    if "probe_values" in q or q.get("probe_reply") is not None:
        values = q.get("probe_values") or {}
        # A value masked on its way to disk (shaped like a key) cannot be told from another so masked.
        expected["probe_correct"] = {
            v: (q.get("probe_correct") or {}).get(v) if MASK in str(values.get(v)) else values.get(v) == state[v]
            for v in qa.required_info}
    if upper_bound is not None:
        entry = upper_bound.get(_written(upper_bound_key(user, period, q["question"])))
        if entry is None and q.get("ub_score") is not None:
            raise RunError(f"{where}.ub_score is {q['ub_score']!r} but the upper bound file has no answer for this "
                           f"question at period {period}; a file was changed after it was written ({_FIX})")
        if entry is not None:
            expected["ub_score"] = entry["score"]
            if "ub_score_original_rule" in q or "status" in q:
                expected["ub_score_original_rule"] = entry.get("score_original_rule", entry["score"])
    _refuse_changed(where, q, expected, period, _FIX)


def check_questions(user: UserEnv, questions: list[dict[str, Any]], where: str) -> None:
    """Refuse an evaluation that does not hold each of the user's questions exactly once.

    Raises:
        RunError: naming ``where`` (the file).
    """
    asked = sorted(q["question"] for q in questions)
    if asked != list(range(len(user.qas))):
        raise RunError(f"{where}: questions holds questions {asked} but user {user.id!r} is asked each of its "
                       f"{len(user.qas)} once; the file was changed after it was written ({_FIX})")


def check_upper_bound(user: UserEnv, answers: dict[str, Any], where: str) -> None:
    """Refuse an upper-bound entry whose key or scores are not what its question, state and recorded choices
    earn (the upper bound is the memory score's ceiling: a raised one lowers every memory score).

    Raises:
        RunError: naming ``where`` (the file) with the entry and field.
    """
    for key, entry in answers.items():
        q = entry["question"]
        # Runs written before values holding "|" were escaped keyed them another way: those keys are let be.
        older = any("|" in v or "\\" in v for v in entry["state"])
        if q >= len(user.qas) or (key != combo_key(q, tuple(entry["state"])) and not older):
            raise RunError(f"{where}: answers[{key!r}] does not belong to question {q} with its state "
                           f"{entry['state']!r} of user {user.id!r}; the file is damaged")
        qa, combo = user.qas[q], list(entry["state"])
        # The recorded state is as written (masked where shaped like a key): the option's state is compared so.
        expected: dict[str, Any] = {"score": 1.0 if _written(option_state(qa, entry.get("choice"))) == combo else 0.0}
        if "original_choice" in entry and entry.get("score_original_rule") is not None:
            picked = _written(option_state(qa, entry["original_choice"]))
            expected["score_original_rule"] = 1.0 if picked == combo else 0.0
        _refuse_changed(f"{where}: answers[{key!r}]", entry, expected, None,
                        "delete it and run again to ask the upper bound anew")


def outcomes_of(
    user: UserEnv, rundir: RunDir, answer_rule: str = "strict"
) -> tuple[list[QuestionOutcome], list[dict[str, Any]]]:
    """Scored questions of every evaluated period of one user, plus the raw evaluation records.

    ``answer_rule`` picks which score of each answer (and of the upper bound) the outcomes carry: the strict
    one (an invalid reply is wrong) or the original release's (see ``original_rule_choice``).

    Raises:
        RunError: an evaluation file is unreadable, or names a question the user does not have.
    """
    outcomes: list[QuestionOutcome] = []
    records: list[dict[str, Any]] = []
    ub_path = rundir.upper_bound(user.id)
    upper_bound = as_dict(read_record(ub_path, UpperBoundRecord))["answers"] if ub_path.exists() else None
    if upper_bound is not None:
        check_upper_bound(user, upper_bound, str(ub_path))
    for p in range(len(user.periods)):
        path = rundir.evaluation(user.id, p)
        if not path.exists():
            continue
        rec = as_dict(read_record(path, EvaluationRecord))
        records.append(rec)
        for i, q in enumerate(rec["questions"]):
            if q["question"] >= len(user.qas):
                raise RunError(f"{path}: questions[{i}].question is {q['question']} but user {user.id!r} has "
                               f"{len(user.qas)} questions; the file is damaged")
        check_questions(user, rec["questions"], str(path))
        for i, q in enumerate(rec["questions"]):
            check_scored(user, p, q, f"{path}: questions[{i}]", upper_bound)
            score, ub = answer_scores(q, answer_rule)
            outcomes.append(question_outcome(user, p, q["question"], score, ub, q["probe_correct"],
                                             n_choices=q["n_choices"]))
    return outcomes, records


def compute_metrics(env: Environment, rundir: RunDir, answer_rule: str = "strict") -> dict[str, Any]:
    """Metrics over every evaluated (user, period), with completeness and reply-parsing counts.

    ``answer_rule`` (``strict`` or ``original``) decides how invalid answers count in the headline numbers;
    ``answers`` reports the overall score under both rules either way.
    """
    outcomes: list[QuestionOutcome] = []
    status_counts: dict[str, int] = {}
    strict: list[float] = []
    original: list[float] = []
    agent_stats: dict[str, Any] = {}
    missing: list[dict[str, Any]] = []
    for user in env.users:
        outs, recs = outcomes_of(user, rundir, answer_rule)
        outcomes += outs
        done = {r["period"] for r in recs}
        missing += [{"user": user.id, "period": p} for p in range(len(user.periods)) if p not in done]
        for rec in recs:
            for q in rec["questions"]:
                status_counts[q["status"]] = status_counts.get(q["status"], 0) + 1
                strict.append(q["score"])
                original.append(answer_scores(q, "original")[0])
        if recs:
            agent_stats[user.id] = recs[-1].get("agent_stats", {})
    metrics = aggregate(outcomes, env.num_periods)
    metrics["complete"] = not missing
    metrics["missing"] = missing
    metrics["answers"] = {
        "rule": answer_rule,
        "total": len(strict),
        "invalid": sum(n for k, n in status_counts.items() if k != "ok"),
        "status_counts": dict(sorted(status_counts.items())),
        "overall_strict": sum(strict) / len(strict) if strict else None,
        "overall_original_rule": sum(original) / len(original) if original else None,
        "definitions": {
            "strict": "amemgym's rule: an unparseable or out-of-range reply scores 0",
            "original_rule": "the original release's rule: the reply's answer indexes the options as a Python "
                             "list (0 is the last option, -1 the one before), anything else is replaced by a "
                             "random option (seeded per user, period and question, so reproducible)",
            "rule": "which of the two the headline numbers (overall, upper_bound, memory_score) use",
        },
    }
    metrics["agent_stats"] = agent_stats

    # Lexical and cheap: every run records how often its simulator stopped playing the user.
    metrics["simulator"] = degenerate_summary(env, rundir)
    metrics["overall"]["flags"] = result_flags(metrics["overall"], metrics["simulator"])
    metrics["overall"]["degenerate"] = bool(metrics["overall"]["flags"])

    # A file whose openings no text reader can check must never look fully validated (docs/design.md §8).
    metrics["exposure_unchecked"] = unchecked_reason(env)
    return metrics


def protocol_settings(run: RunSettings) -> dict[str, Any]:
    """The interaction settings that decide comparability with the original protocol, and each difference."""
    caps = {"reply_max_tokens": run.reply_max_tokens, "simulator_max_tokens": run.simulator_max_tokens,
            "eval_max_tokens": run.eval_max_tokens}
    differences = [f"{name} is {value} (the original allows {PROTOCOL_MAX_TOKENS})"
                   for name, value in caps.items() if value < PROTOCOL_MAX_TOKENS]
    if run.agent_system_prompt:
        differences.append("run.agent_system_prompt is on: an agent that honours it (the native agent does) opens "
                           "with amemgym's system prompt, where the original sent none")
    return {**caps, "context_window": run.context_window, "agent_system_prompt": run.agent_system_prompt,
            "answer_rule": run.answer_rule, "differences_from_original": differences}


async def write_trace(user: UserEnv, rundir: RunDir) -> None:
    """Assemble ``trace.jsonl`` (see :func:`trace_text`) off the event loop and hand it to the user's writer."""
    out = rundir.writer(user.id)
    out.put_text(TRACE, await asyncio.to_thread(trace_text, user, rundir))
    await out.flush()


def trace_text(user: UserEnv, rundir: RunDir) -> str:
    """A user's ``trace.jsonl``: every message with its position, then every evaluation, in period order."""
    sessions = recorded_sessions(rundir, user.id)
    ub_path = rundir.upper_bound(user.id)
    ub = as_dict(read_record(ub_path, UpperBoundRecord))["answers"] if ub_path.exists() else {}
    lines: list[dict[str, Any]] = []
    for p, period in enumerate(user.periods):
        for s, session in enumerate(period.sessions):
            for i, msg in enumerate(sessions.get((p, s), [])):
                lines.append({"kind": "message", "period": p, "session": s, "round": i // 2,
                              "time": session.session_time, "role": msg["role"], "content": msg["content"]})
        path = rundir.evaluation(user.id, p)
        if path.exists():
            rec = as_dict(read_record(path, EvaluationRecord))
            lines.append({"kind": "memory", "period": p, "memory": rec.get("memory"),
                          "agent_stats": rec.get("agent_stats")})
            for q in rec["questions"]:
                lines.append({"kind": "evaluation", "period": p, **q})
    for entry in ub.values():
        lines.append({"kind": "upper_bound", **entry})
    return "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines)
