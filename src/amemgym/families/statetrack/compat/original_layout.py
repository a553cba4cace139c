"""The original release's output folder: written from an amemgym run, and read back for off-policy replay.

Per agent folder ``<output_dir>/<agent name>/`` the original keeps a copy of the agent config and, per user
``<user id>/``:

- ``interactions/period_XX.json``: a list of sessions, each a list of ``{role, content}`` messages whose
  first user message carries the ``[Current Time: ...]`` prefix;
- ``overall_results.json``: ``[period][question]`` answer records;
- ``overall_metrics.json``: ``{"accuracy": [period][question]}``;
- ``diagnosis_metrics.json``: ``{"write_failure", "read_failure": counts, "memory_success": 0/1}``, each
  ``[period][question]``;
- ``agent_config.json``.

amemgym writes these beside its own files (scored with the original's answer rule) so that the original's
plotting scripts run on them; see docs/compat.md for what is not reproduced.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ....errors import ConfigError
from ....llm.parsing import parse_json_reply
from ....records import EvaluationRecord, as_dict, read_record
from ....runfiles import MANIFEST
from ....storage import atomic_write_json, atomic_write_text
from ..data.model import Environment, UserEnv
from ..layout import RunDir
from ..metrics import diagnose
from ..results import outcomes_of
from ..schedule import rounds_for
from ..simulate.session import opening_message

_PERIOD_FILE = re.compile(r"^period_(\d+)\.json$")

#: The ``format`` of the manifest an imported original interactions folder gets (users and source only).
IMPORT_FORMAT = "original interactions folder"


def _user_dir(root: Path, user_id: str) -> Path:
    if "/" in user_id or "\\" in user_id or user_id in ("", ".", ".."):
        raise ConfigError(f"user id {user_id!r} cannot name a folder of the original layout")
    return root / user_id


def _response_number(reply: str, fallback: int, drawn: bool) -> int:
    """The number the original recorded as ``response``: the reply's own integer, or the random draw."""
    if drawn:
        return fallback
    data = parse_json_reply(reply)
    raw = data.get("answer") if isinstance(data, dict) else None
    return int(raw) if isinstance(raw, int) else fallback


def _answer_record(user: UserEnv, period: int, q: dict[str, Any]) -> dict[str, Any]:
    qa = user.qas[q["question"]]
    gold = user.correct_choice(q["question"], period)
    picked = qa.answer_choices[q["original_choice"] - 1]
    return {
        "query": qa.query, "answer": gold, "answer_state": list(qa.answer_choices[gold].state),
        "answer_choice": qa.answer_choices[gold].answer, "raw_response": q["reply"],
        "response": _response_number(q["reply"], q["original_choice"], q["original_random"]),
        "response_state": list(picked.state), "response_choice": picked.answer,
        "json_error": bool(q["original_random"]), "llm_usage_statistics": None,
        "scores": {"accuracy": q["score_original_rule"]},
    }


def write_original_layout(env: Environment, run_root: Path, agent_raw: dict[str, Any], config_name: str) -> None:
    """Write the original's per-user files under ``run_root`` from the amemgym run there.

    Files whose inputs are incomplete (a period not evaluated yet) are left out rather than padded, except
    ``overall_results.json``, which holds ``null`` for questions not asked yet, as the original's did.
    """
    rundir = RunDir(run_root)
    atomic_write_json(run_root / config_name, agent_raw)
    for user in env.users:
        udir = _user_dir(run_root, user.id)
        atomic_write_json(udir / "agent_config.json", agent_raw)
        sessions = rundir.session_records(user.id)
        for p, period in enumerate(user.periods):
            recorded = [sessions[(p, s)]["messages"] for s in range(len(period.sessions)) if (p, s) in sessions]
            if len(recorded) == len(period.sessions):
                atomic_write_json(udir / "interactions" / f"period_{p:02d}.json", recorded)
        results: list[list[dict[str, Any] | None]] = [[None] * len(user.qas) for _ in user.periods]
        complete = True
        for p in range(len(user.periods)):
            path = rundir.evaluation(user.id, p)
            if not path.exists():
                complete = False
                continue
            for q in as_dict(read_record(path, EvaluationRecord))["questions"]:
                results[p][q["question"]] = _answer_record(user, p, q)
        atomic_write_json(udir / "overall_results.json", results)
        if not complete or any(r is None for row in results for r in row):
            continue
        accuracy = [[r["scores"]["accuracy"] for r in row if r is not None] for row in results]
        atomic_write_json(udir / "overall_metrics.json", {"accuracy": accuracy})
        outcomes, _ = outcomes_of(user, rundir, "original")
        diag = diagnose(outcomes)
        shape = [[0] * len(user.qas) for _ in user.periods]
        write, read, success = [list(r) for r in shape], [list(r) for r in shape], [list(r) for r in shape]
        for (_, p, q), d in diag.items():
            labels = list(d["variables"].values())
            write[p][q], read[p][q] = labels.count("write"), labels.count("read")
            success[p][q] = int(write[p][q] + read[p][q] == 0)
        atomic_write_json(udir / "diagnosis_metrics.json",
                          {"write_failure": write, "read_failure": read, "memory_success": success})


def is_original_folder(path: Path) -> bool:
    """Whether ``path`` looks like one agent's original output folder (not an amemgym run directory)."""
    if (path / MANIFEST).exists():
        return False
    return any((child / "interactions").is_dir() for child in path.iterdir() if child.is_dir())


def import_original_interactions(src: Path, env: Environment, rounds_cfg: Any, dest: Path) -> Path:
    """Turn an original output folder's interactions into an amemgym run directory for off-policy replay.

    Checks what the original checked before replaying: every session's first message is its opening
    utterance with the time prefix, and it holds exactly two messages per round of the protocol.

    Raises:
        ConfigError: one line naming the first missing or mismatching file.
    """
    target = RunDir(dest)
    for user in env.users:
        folder = src / user.id / "interactions"
        lines: list[str] = []
        for p, period in enumerate(user.periods):
            path = folder / f"period_{p:02d}.json"
            try:
                sessions = json.loads(path.read_text(encoding="utf-8"))
            except FileNotFoundError:
                raise ConfigError(f"{path}: missing; --off_policy_dir needs every period of every user") from None
            except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise ConfigError(f"{path}: unreadable ({exc})") from None
            if not isinstance(sessions, list) or len(sessions) != len(period.sessions):
                raise ConfigError(f"{path}: expected a list of {len(period.sessions)} sessions")
            rounds = rounds_for(user, rounds_cfg, p)
            for s, (session, msgs) in enumerate(zip(period.sessions, sessions, strict=True)):
                ok = isinstance(msgs, list) and all(
                    isinstance(m, dict) and isinstance(m.get("content"), str) and m.get("role") in ("user", "assistant")
                    for m in msgs)
                if not ok or len(msgs) != 2 * rounds:
                    raise ConfigError(f"{path}: session {s}: expected {2 * rounds} messages of role and content")
                if msgs[0]["content"] != opening_message(session):
                    raise ConfigError(f"{path}: session {s}: the first message is not this session's opening")
                lines.append(json.dumps({"period": p, "session": s, "time": session.session_time,
                                         "messages": [{"role": m["role"], "content": m["content"]} for m in msgs]},
                                        ensure_ascii=False))
        atomic_write_text(target.sessions(user.id), "".join(line + "\n" for line in lines))
    atomic_write_json(target.manifest, {"imported_from": str(src), "format": IMPORT_FORMAT,
                                        "users": [u.id for u in env.users]})
    return dest
