"""The trace browser's data: per run, user and period, the conversation, true state, memory and questions.

Self-evolution runs add the period's policy cycle (the policy in force, the evolver's verdict and the next
policy); runs with the simulator's leak guard add per session how many draws it redid.

Everything here is plain JSON-ready data; the page renders it with ``textContent`` only, because most of
it (replies, memories, probe answers, even generated environment text) is untrusted model output.
"""

from __future__ import annotations

import json
from typing import Any

from ..families.statetrack.data.model import Environment, UserEnv
from ..families.statetrack.metrics import answer_scores
from ..records import Metrics, as_dict, read_record
from ..runfiles import METRICS
from .extras import read_evolution
from .load import RunRecord, answer_rule, eval_records, session_records


def _memory_text(memory: Any) -> str | None:
    if memory is None or isinstance(memory, str):
        return memory
    return json.dumps(memory, ensure_ascii=False, indent=2)


def _question(q: dict[str, Any], user: UserEnv | None, period: int, rule: str) -> dict[str, Any]:
    qi = int(q["question"])
    qa = user.qas[qi] if user is not None and qi < len(user.qas) else None
    truth = user.periods[period].state if user is not None and period < len(user.periods) else None
    probe_values = q.get("probe_values") or {}
    probe = [
        {"variable": var, "said": probe_values.get(var), "truth": truth.get(var) if truth else None, "ok": bool(ok)}
        for var, ok in (q.get("probe_correct") or {}).items()
    ]
    return {
        "index": qi,
        "query": qa.query if qa else str(q.get("prompt", "")).split("\n", 1)[0],
        "options": [c.answer for c in qa.answer_choices] if qa else None,
        "prompt": None if qa else q.get("prompt"),
        "choice": q.get("choice"),
        "gold": q.get("gold"),
        "status": q.get("status"),
        "reply": q.get("reply"),
        # The scores the run's headline counts (its answer rule), so the cell line and its questions agree.
        **dict(zip(("score", "ub_score"), answer_scores(q, rule), strict=True)),
        "probe_reply": q.get("probe_reply"),
        "probe": probe,
    }


def _period(run: RunRecord, uid: str, p: int, user: UserEnv | None, sessions: dict[tuple[int, int], Any],
            evals: dict[int, dict[str, Any]], evolution: dict[int, dict[str, Any]],
            per_user: dict[str, Any]) -> dict[str, Any]:
    env_period = user.periods[p] if user is not None and p < len(user.periods) else None
    recs = sorted((s, rec) for (pp, s), rec in sessions.items() if pp == p)
    ev = evals.get(p)
    cell = (per_user.get(uid) or {}).get(str(p))
    return {
        "period": p,
        "start": env_period.period_start if env_period else None,
        "end": env_period.period_end if env_period else None,
        "state": dict(env_period.state) if env_period else None,
        "updates": {k: {"old": u.old, "new": u.new} for k, u in env_period.updates.items()} if env_period else None,
        "sessions": [
            {"session": s, "time": rec.get("time"), "resimulated": rec.get("resimulated"),
             "unresolved_leaks": rec.get("unresolved_leaks"),
             "messages": [{"role": str(m.get("role")), "content": str(m.get("content"))}
                          for m in rec.get("messages") or [] if isinstance(m, dict)]}
            for s, rec in recs
        ],
        "evaluated": ev is not None,
        "memory": _memory_text(ev.get("memory")) if ev else None,
        "questions": [_question(q, user, p, answer_rule(run)) for q in ev.get("questions", [])] if ev else [],
        "cell": cell,
        "evolution": evolution.get(p),
    }


def browser_run(run: RunRecord, env: Environment | None, env_note: str | None) -> dict[str, Any]:
    """Browser data of one run; ``env`` (None when unavailable, with ``env_note`` saying why) adds true states."""
    by_id = {u.id: u for u in env.users} if env else {}
    # The conversations and questions shown are the detail run's (a --trials run's first trial), so each
    # period's cell line is that trial's too, not the pool's, or it would disagree with the questions under it.
    metrics = run.metrics
    if run.trials:
        metrics = as_dict(read_record(run.detail_root / METRICS, Metrics))
    per_user = metrics.get("per_user") or {}
    users = []
    for uid in run.users:
        user = by_id.get(uid)
        sessions = session_records(run, uid)
        evals = eval_records(run, uid)
        evolution = read_evolution(run, uid)
        users.append({"id": uid, "periods": [_period(run, uid, p, user, sessions, evals, evolution, per_user)
                                             for p in range(run.num_periods)]})
    detail = f"{run.detail_root.name} of {len(run.trials)} trials" if run.trials else None
    return {"label": run.label, "agent": run.agent, "env_note": env_note, "detail": detail, "users": users}


def embed_json(data: Any) -> str:
    """JSON safe to place inside ``<script type="application/json">``.

    ``<``, ``>`` and ``&`` are written as ``\\u`` escapes, so model text containing ``</script>`` or
    ``<!--`` cannot end the block; JSON.parse restores them.
    """
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    for ch, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
                    ("\u2029", "\\u2029")):
        text = text.replace(ch, esc)
    return text
