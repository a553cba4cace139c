"""``amemgym export`` for a budget-family run: what the agent saw and did, as training data.

Everything comes from the run directory (``trace.jsonl``, ``results.json``) and the episode file the results
name (its sha256 must match). The trace holds, for each tool call, the message the call answered (the event
opening or the harness's feedback) and the reply; the system prompt is rendered by the harness's own
:func:`~amemgym.families.budget.harness.system_prompt`. Question events enter only with ``--with-evaluation``.

- ``openai-chat``: one line per event, ``{"messages": [system, user, assistant, user, assistant, ...]}``, exactly
  the conversation the agent had in that event (the harness cuts it back to the system prompt after each
  event). Each assistant message carries ``weight``: 1 (a target) for a reply that was a valid tool call the
  harness accepted (``ok``) in a storage event (documents, memo, correction, contradiction), or in a question
  event whose question the run answered correctly; 0 for protocol errors, refused calls (budget spent, an
  edit that missed, ...) and every reply of a question answered wrongly or not at all. A line without a
  target is left out and counted. Storage replies are the run's own behaviour, not checked one by one: the
  episode's score says how good that behaviour was (export the runs worth imitating). Runs of the
  long-context reference are refused here: their events carried the whole session in context.
- ``jsonl``: one line per tool call with the same keys on every line (absent values null): the episode
  (``run``, ``tier``, ``domain``, ``seed``, ``salt``, ``agent``, ``policy``), where (``event``,
  ``event_kind``, ``session``, ``step``), the call (``prompt``, ``reply``, ``tool``, ``args`` as JSON text,
  ``ok``, ``result``, ``hits``, ``error``, ``writes_used``) and, for question events, ``question``,
  ``question_kind``, ``gold`` (JSON text) and, on the ``submit_answer`` the harness accepted, ``answer``,
  ``correct`` and ``reward`` (1.0 or 0.0, as :class:`~amemgym.families.budget.gym_env.BudgetEnv` rewards it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ...engine.checkpoint import TRACE_FILE, read_trace
from ...engine.read import load_found, require_results
from ...errors import ConfigError, RunError
from ...storage import write_output_text
from .. import ExportResult
from .harness import env_digest, system_prompt
from .io import load_episode
from .model import FAMILY, Episode

FORMATS = ("openai-chat", "jsonl")
#: The keys of every ``jsonl`` line, in order.
JSONL_KEYS: tuple[str, ...] = (
    "run", "tier", "domain", "seed", "salt", "agent", "policy", "event", "event_kind", "session", "step", "prompt",
    "reply", "tool", "args", "ok", "result", "hits", "error", "writes_used", "question", "question_kind", "gold",
    "answer", "correct", "reward",
)


def export_budget_run(run_dir: Path, out: Path, *, fmt: str = "openai-chat", unit: str | None = None,
                      with_evaluation: bool = False) -> ExportResult:
    """Write the budget run in ``run_dir`` (one episode, a multi-episode run, a ``--trials`` output or a folder of
    runs) to ``out`` (atomically) in ``fmt``: every finished episode, in path order.

    Raises:
        ConfigError: an unknown format or unit, or ``openai-chat`` for a long-context reference run.
        RunError: no finished episode, a trace without prompts, a changed episode file, or a trace and results
            that disagree on an answer.
    """
    if fmt not in FORMATS:
        raise ConfigError(f"unknown export format {fmt!r}; known: {', '.join(FORMATS)}")
    if unit not in (None, "event"):
        raise ConfigError(f"a budget-family run exports one line per event; --unit {unit!r} does not apply "
                          "(leave it out, or pass --unit event)")
    root = Path(run_dir)
    require_results([root], FAMILY, "episodes")
    found, pending = load_found([root], FAMILY)
    planned = [p for p in pending if p.unit is not None]
    lines: list[dict[str, Any]] = []
    counts: dict[str, int] = {}
    details = []
    for f in found:
        name = f.path.relative_to(root).as_posix() if f.path != root else root.name
        got, tally, detail = _export_episode(f.path, name, f.record, fmt, with_evaluation)
        lines += got
        details.append(detail)
        for k, v in tally.items():
            counts[k] = counts.get(k, 0) + v
    notes: list[str] = []
    if counts.get("wrong"):
        notes.append(f"left out {counts['wrong']} question event(s) answered wrongly or not at all: no trainable "
                     "target (use --format jsonl to keep every call with its reward)")
    if counts.get("empty"):
        notes.append(f"left out {counts['empty']} storage event(s) without an accepted tool call: no trainable target")
    if not with_evaluation:
        notes.append(f"{counts.get('questions', 0)} question event(s) not exported (add --with-evaluation)")
    if counts.get("failed"):
        notes.append(f"{counts['failed']} failed model call(s) have no reply and are not exported")
    if planned:
        notes.append(f"{len(planned)} planned episode(s) have not finished and are not exported")
    write_output_text(Path(out), "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines))
    detail = details[0] if len(details) == 1 else f"budget: {len(found)} episodes"
    return ExportResult(Path(out), len(lines), detail, tuple(notes))


def _export_episode(unit_dir: Path, name: str, results: dict[str, Any], fmt: str,
                    with_evaluation: bool) -> tuple[list[dict[str, Any]], dict[str, int], str]:
    """One finished episode's lines, the counts behind the notes, and its one-line description."""
    episode = _episode(unit_dir, results)
    trace = read_trace(unit_dir, finished=True)  # a torn last line would export one call short
    # Every played event leaves at least one trace line; a trace cut short or deleted would export silently less.
    missing = sorted({ev.index for ev in episode.events} - {r.get("event") for r in trace})
    if missing:
        raise RunError(f"{unit_dir / TRACE_FILE}: no line for {len(missing)} of the episode's "
                       f"{len(episode.events)} events (first: event {missing[0]}); the trace is incomplete")
    calls = [r for r in trace if r.get("reply") is not None]
    failed = len(trace) - len(calls)
    if any("prompt" not in r for r in calls):
        raise RunError(f"{unit_dir}: trace.jsonl does not record the messages the agent saw (written by an older "
                       "amemgym); run the episode again into a new directory to export it")
    answers = results["answers"]
    _check_answers(unit_dir, episode, calls, answers)
    question_events = {ev.index for ev in episode.events if ev.kind == "question"}
    kept = [r for r in calls if with_evaluation or r["event"] not in question_events]
    counts = {"failed": failed, "questions": 0 if with_evaluation else len(question_events)}
    if fmt == "jsonl":
        lines = [_row(name, results, episode, r, answers) for r in kept]
    else:
        if results.get("policy") == "long-context":
            raise ConfigError(f"{unit_dir}: openai-chat export of a long-context reference run is not supported "
                              "(each event had the whole session in context); use --format jsonl")
        asked = question_events if with_evaluation else set()
        lines, counts["empty"], counts["wrong"] = _chat_lines(episode, results, kept, answers, asked)
    n_events = len({r["event"] for r in kept})
    detail = (f"budget {results['tier']} {results['domain']} seed {results['seed']}: {len(kept)} tool calls in "
              f"{n_events} events")
    if with_evaluation:
        detail += f", {len(answers)} questions ({sum(bool(a['correct']) for a in answers.values())} correct)"
    return lines, counts, detail


def _episode(run_dir: Path, results: dict[str, Any]) -> Episode:
    path = Path(str(results.get("environment_file", "")))
    if not path.is_file():
        # Runs made before the path was recorded absolute name it relative to where they were started.
        where = (" (a path relative to the folder the run was started in: export from that folder)"
                 if not path.is_absolute() else "")
        raise RunError(f"{run_dir}: the episode file {path} named in results.json is missing{where}; the export "
                       "needs it for the system prompt")
    episode, raw = load_episode(path)
    if env_digest(raw) != results.get("environment_sha256"):
        raise RunError(f"{path} is not the episode {run_dir} played (its sha256 changed); restore that file to "
                       "export the run")
    return episode


def _accepted_answer(rec: dict[str, Any]) -> bool:
    """A tool agent's accepted ``submit_answer``, or a memory agent's ``answer``."""
    return rec.get("tool") in ("submit_answer", "answer") and rec.get("ok") is True


def _answer_text(rec: dict[str, Any]) -> str:
    return str(rec["args"]["answer"]) if rec.get("tool") == "submit_answer" else str(rec["reply"])


def _check_answers(run_dir: Path, episode: Episode, calls: list[dict[str, Any]],
                   answers: dict[str, dict[str, Any]]) -> None:
    """The answer the trace shows accepted for each question must be the one results.json scored."""
    by_event = {ev.index: ev.question for ev in episode.events if ev.question}
    traced: dict[str, str] = {}
    for rec in calls:
        if _accepted_answer(rec):
            traced[str(by_event.get(rec["event"]))] = _answer_text(rec)
    for q in episode.questions:
        if q.id not in answers or traced.get(q.id) != answers[q.id].get("reply"):
            raise RunError(f"{run_dir}: trace.jsonl and results.json disagree on the answer to {q.id}; the run "
                           "directory was altered or mixes two runs")


def _reward(rec: dict[str, Any], qid: str | None, answers: dict[str, dict[str, Any]]) -> float | None:
    if qid is None or not _accepted_answer(rec):
        return None
    return 1.0 if answers[qid]["correct"] else 0.0


def _row(name: str, results: dict[str, Any], episode: Episode, rec: dict[str, Any],
         answers: dict[str, dict[str, Any]]) -> dict[str, Any]:
    ev = episode.events[rec["event"]]
    qid = ev.question
    reward = _reward(rec, qid, answers)
    q = episode.question(qid) if qid else None
    fields = {
        "run": name, "tier": results["tier"], "domain": results["domain"], "seed": results["seed"],
        "salt": results["salt"], "agent": results["agent"], "policy": results["policy"], "event": ev.index,
        "event_kind": ev.kind, "session": ev.session, "step": rec["step"], "prompt": rec["prompt"],
        "reply": rec["reply"], "tool": rec.get("tool"),
        "args": None if "args" not in rec else json.dumps(rec["args"], ensure_ascii=False, sort_keys=True),
        "ok": rec.get("ok"), "result": rec.get("result"), "hits": rec.get("hits"), "error": rec.get("error"),
        "writes_used": rec.get("writes_used"), "question": qid, "question_kind": None if q is None else q.kind,
        "gold": None if q is None else json.dumps(q.gold, ensure_ascii=False),
        "answer": _answer_text(rec) if reward is not None else None,
        "correct": None if reward is None else reward == 1.0, "reward": reward,
    }
    return {k: fields[k] for k in JSONL_KEYS}


def _chat_lines(episode: Episode, results: dict[str, Any], calls: list[dict[str, Any]],
                answers: dict[str, dict[str, Any]], asked: set[int]) -> tuple[list[dict[str, Any]], int, int]:
    """One ``{"messages": [...]}`` line per event with a target; also the storage and question events left out."""
    # A memory agent's conversation has no harness system prompt: its messages are the events themselves.
    memory = results.get("interface") == "memory-agent"
    system = [] if memory else [{"role": "system", "content": system_prompt(episode, policy=str(results["policy"]))}]
    by_event: dict[int, list[dict[str, Any]]] = {}
    for rec in calls:
        by_event.setdefault(rec["event"], []).append(rec)
    lines: list[dict[str, Any]] = []
    empty = 0
    for index, recs in by_event.items():
        qid = episode.events[index].question
        learnable = qid is None or bool(answers[qid]["correct"])
        messages: list[dict[str, Any]] = list(system)
        for rec in sorted(recs, key=lambda r: r["step"]):
            target = learnable and rec.get("tool") is not None and rec.get("ok") is True
            messages += [{"role": "user", "content": rec["prompt"]},
                         {"role": "assistant", "content": rec["reply"], "weight": 1 if target else 0}]
        if any(m.get("weight") == 1 for m in messages):
            lines.append({"messages": messages})
        elif qid is None:
            empty += 1
        elif learnable:
            empty += 1
    # Every question answered wrongly or not at all (an event may even have no call, if the model failed).
    wrong = sum(1 for ev in episode.events if ev.question and ev.index in asked and not answers[ev.question]["correct"])
    return lines, empty, wrong
