"""Turn a run directory's per-user files into metrics and traces."""

from __future__ import annotations

from typing import Any

from ..data.model import Environment, UserEnv
from ..evaluate.metrics import QuestionOutcome, aggregate, result_flags
from ..storage import atomic_write_text
from .episode import load_json, recorded_sessions
from .layout import RunDir


def changed_at(user: UserEnv, period: int, variable: str) -> int:
    """The latest period <= ``period`` whose updates changed ``variable`` (period 0 sets every variable)."""
    for p in range(period, 0, -1):
        if variable in user.periods[p].updates:
            return p
    return 0


def outcomes_of(user: UserEnv, rundir: RunDir) -> tuple[list[QuestionOutcome], list[dict[str, Any]]]:
    """Scored questions of every evaluated period of one user, plus the raw evaluation records."""
    outcomes: list[QuestionOutcome] = []
    records: list[dict[str, Any]] = []
    for p in range(len(user.periods)):
        path = rundir.evaluation(user.id, p)
        if not path.exists():
            continue
        rec = load_json(path)
        records.append(rec)
        for q in rec["questions"]:
            qa = user.qas[q["question"]]
            outcomes.append(QuestionOutcome(
                user=user.id, period=p, question=q["question"], score=q["score"], n_choices=q["n_choices"],
                ub_score=q.get("ub_score"), probe=dict(q["probe_correct"]),
                changed_at={v: changed_at(user, p, v) for v in qa.required_info},
            ))
    return outcomes, records


def compute_metrics(env: Environment, rundir: RunDir) -> dict[str, Any]:
    """Metrics over every evaluated (user, period), with completeness and reply-parsing counts."""
    outcomes: list[QuestionOutcome] = []
    status_counts: dict[str, int] = {}
    fallback: list[float] = []
    agent_stats: dict[str, Any] = {}
    missing: list[dict[str, Any]] = []
    for user in env.users:
        outs, recs = outcomes_of(user, rundir)
        outcomes += outs
        done = {r["period"] for r in recs}
        missing += [{"user": user.id, "period": p} for p in range(len(user.periods)) if p not in done]
        for rec in recs:
            for q in rec["questions"]:
                status_counts[q["status"]] = status_counts.get(q["status"], 0) + 1
                fallback.append(q["score_with_random_fallback"])
        if recs:
            agent_stats[user.id] = recs[-1].get("agent_stats", {})
    metrics = aggregate(outcomes, env.num_periods)
    metrics["complete"] = not missing
    metrics["missing"] = missing
    metrics["answers"] = {
        "status_counts": dict(sorted(status_counts.items())),
        "overall_with_random_fallback": sum(fallback) / len(fallback) if fallback else None,
        "note": "invalid replies score 0 in 'overall'; the original release drew a random option instead, "
                "reported here as overall_with_random_fallback",
    }
    metrics["agent_stats"] = agent_stats
    from ..validity.sim_audit import degenerate_summary

    # Lexical and cheap: every run records how often its simulator stopped playing the user.
    metrics["simulator"] = degenerate_summary(env, rundir)
    metrics["overall"]["flags"] = result_flags(metrics["overall"], metrics["simulator"])
    metrics["overall"]["degenerate"] = bool(metrics["overall"]["flags"])
    return metrics


def write_trace(user: UserEnv, rundir: RunDir) -> None:
    """Assemble ``trace.jsonl``: every message with its position, then every evaluation, in period order."""
    import json

    sessions = recorded_sessions(rundir, user.id)
    ub = load_json(rundir.upper_bound(user.id)) if rundir.upper_bound(user.id).exists() else {}
    lines: list[dict[str, Any]] = []
    for p, period in enumerate(user.periods):
        for s, session in enumerate(period.sessions):
            for i, msg in enumerate(sessions.get((p, s), [])):
                lines.append({"kind": "message", "period": p, "session": s, "round": i // 2,
                              "time": session.session_time, "role": msg["role"], "content": msg["content"]})
        path = rundir.evaluation(user.id, p)
        if path.exists():
            rec = load_json(path)
            lines.append({"kind": "memory", "period": p, "memory": rec.get("memory"),
                          "agent_stats": rec.get("agent_stats")})
            for q in rec["questions"]:
                lines.append({"kind": "evaluation", "period": p, **q})
    for entry in ub.values():
        lines.append({"kind": "upper_bound", **entry})
    atomic_write_text(rundir.trace(user.id), "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines))
