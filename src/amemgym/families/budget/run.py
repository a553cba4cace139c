"""One budget episode: play it, check the answers, write ``results.json`` (``batch.py`` runs many)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...errors import ConfigError, RunError
from ...llm.client import LLMClient
from ...storage import atomic_write_json
from .harness import Harness, env_digest, wall_clock
from .io import load_episode
from .scoring import score_episode
from .validity import judge

#: Agent names this family runs -> (harness policy, store): the tool-using LLM agent with the notes store
#: (hybrid BM25 + embedder search) or the vector store, and the long-context reference.
AGENTS = {"native": ("budget", "notes"), "llm": ("budget", "notes"), "vector": ("budget", "vector"),
          "long-context": ("long-context", "notes")}
RESULTS_VERSION = 1


def policy_of(agent: str) -> tuple[str, str]:
    """The harness policy and store mode of an ``--agent`` name.

    Raises:
        ConfigError: for agents this family cannot run yet.
    """
    try:
        return AGENTS[agent]
    except KeyError:
        raise ConfigError(f"agent {agent!r} cannot run a budget-family episode yet; use one of: "
                          f"{', '.join(AGENTS)}") from None


async def run_episode(env: Path, agent: str, out_dir: Path, llm: LLMClient) -> dict[str, Any]:
    """Run (or resume) one episode and return the results record (also written to ``results.json``)."""
    policy, store_mode = policy_of(agent)
    episode, raw = load_episode(env)
    t0 = wall_clock()
    harness = Harness(episode, llm, out_dir, policy=policy, digest=env_digest(raw), store_mode=store_mode)
    state = await harness.run()
    verdicts = judge(episode, state.answers)
    notes = list(harness.store.notes.values())
    score = score_episode(episode, verdicts, harness.store.writes_used, notes)
    per_kind: dict[str, list[int]] = {}
    for q in episode.questions:
        per_kind.setdefault(q.kind, [0, 0])
        per_kind[q.kind][0] += verdicts[q.id].correct
        per_kind[q.kind][1] += 1
    results = {
        "family": "budget", "format_version": RESULTS_VERSION, "environment_file": str(env),
        "environment_sha256": env_digest(raw), "agent": agent, "policy": policy, "store": store_mode,
        "search_embedder_problem": harness.embedder_problem, "tier": episode.tier.name,
        "domain": episode.domain, "seed": episode.seed, "salt": episode.salt,
        "score": score.to_dict(),
        "per_kind": {k: {"correct": c, "total": n} for k, (c, n) in sorted(per_kind.items())},
        "answers": {q.id: {"kind": q.kind, "reply": state.answers.get(q.id), "gold": q.gold,
                           "correct": verdicts[q.id].correct, "reason": verdicts[q.id].reason}
                    for q in episode.questions},
        "writes_over_time": state.writes_over_time,
        "ledger": [e.__dict__ for e in harness.store.ledger],
        "usage": llm.ledger.to_dict(),
        "wall_seconds_last_invocation": round(wall_clock() - t0, 3),
        "definitions": {"composite": "0.30 breadth + 0.25 maintenance + 0.25 reasoning + 0.20 efficiency",
                        "maintenance": "update-kind accuracy x storage gate",
                        "efficiency": "non-abstention accuracy x min(1, reference writes / writes used)"},
    }
    atomic_write_json(out_dir / "results.json", results)
    return results


MODEL_FILE = "model.json"


def check_model(out_dir: Path, served: str, *, allow_change: bool) -> list[dict[str, str]]:
    """Pin the agent's served model to the run directory; refuse to resume with another one unless allowed.

    Returns the model changes recorded so far (each ``{"from", "to"}``).

    Raises:
        RunError: when the directory was run with another model and ``allow_change`` is off.
    """
    import json

    path = out_dir / MODEL_FILE
    if not path.exists():
        atomic_write_json(path, {"format_version": 1, "agent_model": served, "changes": []})
        return []
    try:
        pinned = json.loads(path.read_text(encoding="utf-8"))
        old, changes = str(pinned["agent_model"]), list(pinned.get("changes", []))
    except (OSError, ValueError, KeyError, TypeError):
        raise RunError(f"{path}: unreadable or wrong shape; remove the run directory to start again") from None
    if old == served:
        return changes
    if not allow_change:
        raise RunError(f"{out_dir}: was run with agent model {old!r}, now {served!r}; refusing to mix models in one "
                       "episode (use a new --out directory, or pass --allow-model-change)")
    changes.append({"from": old, "to": served})
    atomic_write_json(path, {"format_version": 1, "agent_model": served, "changes": changes})
    return changes
