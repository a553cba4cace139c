"""Trajectory export: a finished run's conversations (and optionally its evaluations) as training data.

Two formats:

- ``openai-chat``: one JSON line per session (or per user episode with ``unit="episode"``) of the form
  ``{"messages": [system, user, assistant, ...]}``, the system message being the agent system prompt.
  With evaluations, each question adds a line whose last assistant message is the agent's answer; its
  ``weight`` (the OpenAI fine-tuning field) is the answer's reward, 1 if correct and 0 if not, so
  trainers that honour weights learn only from correct answers. In episode unit the question follows
  the conversation up to the end of its period, as a full-context agent saw it; in session unit it
  stands alone. Agents that add retrieved memories to their prompt saw more than this; the run
  directory does not keep those prompts.
- ``jsonl``: one line per message with its metadata (user, period, session, round, time, role), and with
  evaluations one line for each question prompt and each answer, the answer carrying ``reward``,
  ``choice``, ``gold`` and ``status`` (and the state probes with their per-variable correctness).

Nothing is regenerated: every line comes from ``users/<id>/sessions.jsonl`` and ``eval/period_XX.json``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError, RunError
from ..prompts import render
from ..storage import atomic_write_text
from .layout_reader import RecordedUser, read_run

FORMATS = ("openai-chat", "jsonl")
UNITS = ("session", "episode")


@dataclass(frozen=True)
class ExportSummary:
    """What an export wrote."""

    path: Path
    lines: int
    users: int
    sessions: int
    evaluations: int


def export_run(rundir: Path, out: Path, *, fmt: str = "openai-chat", with_evaluation: bool = False,
               unit: str = "session") -> ExportSummary:
    """Write the trajectories of the run in ``rundir`` to ``out`` (atomically).

    Args:
        rundir: a run directory written by ``amemgym run``.
        out: the JSONL file to write.
        fmt: ``openai-chat`` or ``jsonl``.
        with_evaluation: add the evaluation turns with their rewards.
        unit: for ``openai-chat``, one line per ``session`` or per user ``episode``.

    Raises:
        ConfigError: unknown format or unit.
        RunError: not a run directory, or no finished session in it.
    """
    if fmt not in FORMATS:
        raise ConfigError(f"unknown export format {fmt!r}; known: {', '.join(FORMATS)}")
    if unit not in UNITS:
        raise ConfigError(f"unknown export unit {unit!r}; known: {', '.join(UNITS)}")
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
    atomic_write_text(Path(out), "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines))
    n_evals = sum(len(e["questions"]) for u in users for e in u.evaluations) if with_evaluation else 0
    return ExportSummary(Path(out), len(lines), len(users), n_sessions, n_evals)


def message_lines(user: RecordedUser, with_evaluation: bool) -> list[dict[str, Any]]:
    """One record per message (``jsonl`` format), evaluations after their period's sessions."""
    out: list[dict[str, Any]] = []
    evals = {e["period"]: e for e in user.evaluations} if with_evaluation else {}
    periods = sorted({s.period for s in user.sessions} | set(evals))
    for p in periods:
        for s in (s for s in user.sessions if s.period == p):
            for i, m in enumerate(s.messages):
                out.append({"kind": "message", "user": user.id, "period": p, "session": s.session, "round": i // 2,
                            "time": s.time, "role": m["role"], "content": m["content"]})
        for q in evals.get(p, {}).get("questions", []):
            base = {"user": user.id, "period": p, "question": q["question"]}
            out.append({"kind": "evaluation", **base, "role": "user", "content": q["prompt"]})
            out.append({"kind": "evaluation", **base, "role": "assistant", "content": q["reply"],
                        "reward": q["score"], "choice": q["choice"], "gold": q["gold"], "status": q["status"],
                        "n_choices": q["n_choices"], "ub_score": q.get("ub_score"),
                        "score_original_rule": q.get("score_original_rule", q.get("score_with_random_fallback"))})
            if q.get("probe_prompt") is not None:
                out.append({"kind": "probe", **base, "role": "user", "content": q["probe_prompt"]})
                out.append({"kind": "probe", **base, "role": "assistant", "content": q["probe_reply"],
                            "probe_values": q.get("probe_values"), "probe_correct": q.get("probe_correct")})
    return out


def chat_lines(user: RecordedUser, with_evaluation: bool, unit: str) -> list[dict[str, Any]]:
    """``{"messages": [...]}`` records (``openai-chat`` format)."""
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
        context = [m for s in convo if s.period <= p for m in _plain(s.messages)] if unit == "episode" else []
        for q in rec["questions"]:
            answer = {"role": "assistant", "content": q["reply"], "weight": 1 if q["score"] >= 1.0 else 0}
            history = [{**m, "weight": 0} if m["role"] == "assistant" else m for m in context]
            out.append({"messages": [system, *history, {"role": "user", "content": q["prompt"]}, answer]})
    return out


def _plain(messages: list[dict[str, Any]]) -> list[dict[str, str]]:
    return [{"role": m["role"], "content": m["content"]} for m in messages]

