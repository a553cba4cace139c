"""Trajectory export: a finished run's conversations (and optionally its evaluations) as training data.

Two formats:

- ``openai-chat``: one JSON line per user episode (the default ``unit="episode"``: the whole
  conversation, so what is learnt is replying with the earlier turns in view) or per session, of the
  form ``{"messages": [system, user, assistant, ...]}``, the system message being the agent system
  prompt. With evaluations, each correctly answered question adds a line: the conversation up to the end
  of its period (as a full-context agent saw it; every earlier assistant turn has ``weight`` 0), then the
  question, then the agent's answer with ``weight`` 1. Wrongly answered questions are left out (counted
  in the summary): a line whose only assistant target has weight 0 teaches nothing and some trainers
  reject it. Agents that add retrieved memories to their prompt saw more than the conversation; the run
  directory does not keep those prompts (the ``jsonl`` format carries each period's memory view).
- ``jsonl``: one line per message with its metadata (user, period, session, round, time, role), and with
  evaluations one line for each question prompt and each answer, the answer carrying ``reward``,
  ``choice``, ``gold``, ``status`` and the agent's ``memory`` view at that period (and the state probes
  with their per-variable correctness). Every line has the same keys (absent values are null), so
  columnar loaders such as Hugging Face ``datasets`` read it without a schema.

Nothing is regenerated: every line comes from ``users/<id>/sessions.jsonl`` and ``eval/period_XX.json``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError, RunError
from ..families.statetrack.finished import check_planned, refuse_unfinished, run_manifest
from ..prompts import render
from ..storage import write_output_text
from .layout_reader import RecordedUser, read_run

FORMATS = ("openai-chat", "jsonl")
UNITS = ("episode", "session")


@dataclass(frozen=True)
class ExportSummary:
    """What an export wrote."""

    path: Path
    lines: int
    users: int
    sessions: int
    evaluations: int
    #: Evaluation answers not written because nothing in them is a training target (wrong answers).
    left_out: int = 0
    #: Why the sessions were not counted against the run's environment (None when they were).
    unchecked: str | None = None


def export_run(rundir: Path, out: Path, *, fmt: str = "openai-chat", with_evaluation: bool = False,
               unit: str = "episode") -> ExportSummary:
    """Write the trajectories of the run in ``rundir`` to ``out`` (atomically).

    Args:
        rundir: a run directory written by ``amemgym run``.
        out: the JSONL file to write.
        fmt: ``openai-chat`` or ``jsonl``.
        with_evaluation: add the evaluation turns with their rewards.
        unit: for ``openai-chat``, one line per user ``episode`` (default) or per ``session``.

    Raises:
        ConfigError: unknown format or unit.
        RunError: not a run directory, not finished, missing a record its manifest plans, or no finished
            session in it.
    """
    if fmt not in FORMATS:
        raise ConfigError(f"unknown export format {fmt!r}; known: {', '.join(FORMATS)}")
    if unit not in UNITS:
        raise ConfigError(f"unknown export unit {unit!r}; known: {', '.join(UNITS)}")
    run_manifest(Path(rundir))  # not a run directory, or a --trials output, is said first
    refuse_unfinished(Path(rundir))
    unchecked = check_planned(Path(rundir))
    users = read_run(Path(rundir))
    n_sessions = sum(len(u.sessions) for u in users)
    if n_sessions == 0:
        raise RunError(f"{rundir}: the run has no finished session to export")
    lines: list[dict[str, Any]] = []
    for user in users:
        if fmt == "jsonl":
            lines += message_lines(user, with_evaluation)
        else:
            lines += chat_lines(user, with_evaluation, unit)
    if fmt == "openai-chat":
        lines = [x for x in lines if has_target(x)]  # e.g. a session that ended before any reply
    write_output_text(Path(out), "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines))
    answers = [q for u in users for e in u.evaluations for q in e["questions"]] if with_evaluation else []
    written = len(answers) if fmt == "jsonl" else sum(1 for q in answers if _correct(q))
    return ExportSummary(Path(out), len(lines), len(users), n_sessions, written, len(answers) - written, unchecked)


def _correct(question: dict[str, Any]) -> bool:
    # The strict score whatever rule the run reported under: a training target is a reply that picked the right
    # option itself, and the original rule credits an unreadable reply when its random draw lands on the gold.
    return float(question["score"]) >= 1.0


def has_target(line: dict[str, Any]) -> bool:
    """Whether an ``openai-chat`` line has an assistant message to learn (weight absent or 1)."""
    return any(m["role"] == "assistant" and m.get("weight", 1) == 1 for m in line["messages"])


#: The keys of every ``jsonl`` line, in order (a key that does not apply to a line is null).
JSONL_KEYS: tuple[str, ...] = (
    "kind", "user", "period", "session", "round", "question", "time", "role", "content", "reward", "choice",
    "gold", "status", "n_choices", "ub_score", "score_original_rule", "memory", "probe_values",
    "probe_correct",
)


def _row(**fields: Any) -> dict[str, Any]:
    return {k: fields.get(k) for k in JSONL_KEYS}


def message_lines(user: RecordedUser, with_evaluation: bool) -> list[dict[str, Any]]:
    """One record per message (``jsonl`` format), evaluations after their period's sessions."""
    out: list[dict[str, Any]] = []
    evals = {e["period"]: e for e in user.evaluations} if with_evaluation else {}
    periods = sorted({s.period for s in user.sessions} | set(evals))
    for p in periods:
        for s in (s for s in user.sessions if s.period == p):
            for i, m in enumerate(s.messages):
                out.append(_row(kind="message", user=user.id, period=p, session=s.session, round=i // 2, time=s.time,
                                role=m["role"], content=m["content"]))
        rec = evals.get(p, {})
        memory = rec.get("memory")
        for q in rec.get("questions", []):
            base = {"user": user.id, "period": p, "question": q["question"]}
            out.append(_row(kind="evaluation", **base, role="user", content=q["prompt"]))
            out.append(_row(kind="evaluation", **base, role="assistant", content=q["reply"], reward=q["score"],
                            choice=q["choice"], gold=q["gold"], status=q["status"], n_choices=q["n_choices"],
                            ub_score=q.get("ub_score"), 
                            score_original_rule=q.get("score_original_rule", q.get("score_with_random_fallback")),
                            memory=None if memory is None else str(memory)))
            if q.get("probe_prompt") is not None:
                out.append(_row(kind="probe", **base, role="user", content=q["probe_prompt"]))
                # Values as JSON text: their types differ by variable, which a columnar schema cannot hold.
                out.append(_row(kind="probe", **base, role="assistant", content=q["probe_reply"],
                                probe_values=_as_json(q.get("probe_values")),
                                probe_correct=_as_json(q.get("probe_correct"))))
    return out


def _as_json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False, sort_keys=True)


def chat_lines(user: RecordedUser, with_evaluation: bool, unit: str) -> list[dict[str, Any]]:
    """``{"messages": [...]}`` records (``openai-chat`` format); only correct answers become lines."""
    system = {"role": "system", "content": render("agent_system")}
    convo = user.sessions
    out: list[dict[str, Any]] = []
    if unit == "session":
        out += [{"messages": [system, *_plain(s.messages)]} for s in convo]
    else:
        out.append({"messages": [system, *(m for s in convo for m in _plain(s.messages))]})
    if not with_evaluation:
        return out
    for rec in user.evaluations:
        p = rec["period"]
        context = [m for s in convo if s.period <= p for m in _plain(s.messages)]
        history = [{**m, "weight": 0} if m["role"] == "assistant" else m for m in context]
        for q in rec["questions"]:
            if _correct(q):
                answer = {"role": "assistant", "content": q["reply"], "weight": 1}
                out.append({"messages": [system, *history, {"role": "user", "content": q["prompt"]}, answer]})
    return out


def _plain(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # An assistant turn the model left empty (kept so the conversation could go on) is context, not a target.
    out: list[dict[str, Any]] = []
    for m in messages:
        plain = {"role": m["role"], "content": m["content"]}
        out.append({**plain, "weight": 0} if m["role"] == "assistant" and not str(m["content"]).strip() else plain)
    return out
