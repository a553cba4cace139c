"""``amemgym run`` for a budget-family file: play the episode, check the answers, write ``results.json``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from ...config import AppConfig
from ...errors import ConfigError, RunError
from ...llm.client import LLMClient
from ...run.lock import run_lock
from ...storage import atomic_write_json
from .checker import Verdict
from .harness import Harness, env_digest, wall_clock
from .io import load_episode
from .scoring import AXES, EpisodeScore, score_episode
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


def score_harness(harness: Harness) -> tuple[dict[str, Verdict], EpisodeScore]:
    """The verdict on every question and the episode's score, from the answers and store a harness holds."""
    verdicts = judge(harness.episode, harness.state.answers)
    notes = list(harness.store.notes.values())
    return verdicts, score_episode(harness.episode, verdicts, harness.store.writes_used, notes)


async def run_episode(env: Path, agent: str, out_dir: Path, llm: LLMClient) -> dict[str, Any]:
    """Run (or resume) one episode and return the results record (also written to ``results.json``)."""
    if agent not in AGENTS:  # a MemoryAgent (rag, awe, awi, a plug-in), metered by the harness
        from .memory_agents import run_memory_episode

        return await run_memory_episode(env, agent, out_dir, llm)
    policy, store_mode = policy_of(agent)
    episode, raw = load_episode(env)
    t0 = wall_clock()
    harness = Harness(episode, llm, out_dir, policy=policy, digest=env_digest(raw), store_mode=store_mode)
    state = await harness.run()
    verdicts, score = score_harness(harness)
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


def run_budget(cfg: AppConfig, env: Path, agent: str, out_dir: Path, *, console: Console, serial: bool = False,
               unsupported: list[str] | None = None, no_cache: bool = False,
               allow_model_change: bool = False) -> int:
    """The ``run`` command for a budget-family file; returns the exit code.

    Raises:
        ConfigError: for an agent or a flag this family does not support yet.
        RunError: when the directory is in use, or was run with another agent model.
    """
    if unsupported:
        raise ConfigError(f"{', '.join(unsupported)} not supported for budget-family episodes yet")
    llm_cfg = cfg.llm.model_copy(update={"cache": False}) if no_cache else cfg.llm
    llm = LLMClient.from_config(llm_cfg, serial=serial or cfg.run.serial)
    if agent not in AGENTS:
        from .memory_agents import plan_agent

        plan_agent(agent, llm)  # an agent whose memory cannot be metered is refused before anything is written

    async def go() -> dict[str, Any]:
        try:
            served = await llm.model_identity("agent")
            changes = check_model(out_dir, served, allow_change=allow_model_change)
            results = await run_episode(env, agent, out_dir, llm)
            results.update(agent_model=served, model_changes=changes)
            atomic_write_json(out_dir / "results.json", results)
            return results
        finally:
            await llm.aclose()

    out_dir.mkdir(parents=True, exist_ok=True)
    with run_lock(out_dir, "amemgym run"):
        results = asyncio.run(go())
    s = results["score"]
    table = Table("axis", "score", title=f"budget/{results['tier']} {results['domain']} seed {results['seed']} - "
                                         f"{agent} ({results['policy']})")
    for name in (*AXES, "composite", "abstention", "accuracy"):
        v = s[name]
        table.add_row(name, "n/a" if v is None else f"{v:.3f}")
    console.print(table)
    total = results["usage"]["total"]
    console.print(f"writes used {s['writes_used']} (reference {s['reference_writes']}); {total['calls']} model "
                  f"calls, {total['prompt_tokens']} prompt + {total['completion_tokens']} completion tokens, "
                  f"{results['wall_seconds_last_invocation']:.1f} s; results: {out_dir / 'results.json'}",
                  highlight=False)
    if "refused_writes" in results:
        console.print(f"the harness's meter refused {results['refused_writes']} memory write(s) and cut "
                      f"{results['truncated_writes']} to the note cap", highlight=False)
    return 0
