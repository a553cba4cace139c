"""One budget episode: play it, check the answers, write ``results.json`` (``batch.py`` runs many)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...errors import ConfigError, RunError
from ...llm.client import LLMClient
from ...storage import atomic_write_json
from .checker import Verdict
from .harness import Harness, ToolAgent, env_digest, wall_clock
from .io import load_episode
from .judging import judge_answers, judge_identity, merged
from .model import Episode
from .scoring import DEFINITIONS, EpisodeScore, score_episode
from .tool_agents import (
    EpisodeView,
    ProtocolChoice,
    ToolAgentContext,
    builtin_tool_agent,
    choose_protocol,
    keep_pin,
    resolve_tool_agent,
)
from .validity import judge as rule_verdicts

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
    verdicts = rule_verdicts(harness.episode, harness.state.answers)
    return verdicts, score_episode(harness.episode, verdicts, harness.store.writes_used, harness.store.ledger)


def refuse_judge(judge: bool) -> None:
    """A memory agent's run has no judge: its answers come through the MemoryAgent contract, not the harness.

    Raises:
        ConfigError: when a judge was asked for.
    """
    if judge:
        raise ConfigError("the optional judge is available for tool agents only; run the memory agent without "
                          "--judge-model / budget.judge")


def plugin_context(episode: Episode) -> ToolAgentContext:
    """The context a plug-in factory gets: the episode's rules for a tool agent, a metered store for a memory
    agent; never its content (questions, golds, events, changes).

    Deciding which contract a plug-in implements means building it once; the store it may build then is a
    throwaway with no budget (the memory path builds the agent again with the episode's meter).
    """
    from .memory_agents import Meter, MeteredVectorStore

    return ToolAgentContext(user_id=f"{episode.domain}-seed{episode.seed}", episode=EpisodeView.of(episode),
                            store_factory=lambda: MeteredVectorStore(Meter(0, 1)))


def interface_of(agent: str, env: Path, llm: LLMClient) -> str:
    """``tool`` for the built-in tool agents and tool-agent plug-ins; ``memory`` for MemoryAgent-contract
    agents (rag, awe, awi, memory-agent plug-ins), which the harness meters (``memory_agents.py``).

    Raises:
        ConfigError: a plug-in that cannot be loaded, whose factory raised, or that built neither kind.
    """
    if agent in AGENTS:
        return "tool"
    if ":" in agent:
        episode, _ = load_episode(env)
        if resolve_tool_agent(agent, llm, plugin_context(episode)) is not None:
            return "tool"
    return "memory"


async def tool_agent_for(agent: str, plugin: ToolAgent | None, llm: LLMClient, out_dir: Path,
                         tools: str) -> tuple[str, str, ToolAgent, ProtocolChoice]:
    """The harness policy, store mode, tool agent and tool protocol of ``--agent``: a built-in name, or the
    tool agent ``plugin`` its plug-in factory built.

    Raises:
        RunError: when the run directory was run with another tool protocol.
    """
    if plugin is not None:
        choice = keep_pin(out_dir, ProtocolChoice("plugin", f"plug-in tool agent {agent}"))
        return "budget", "notes", plugin, choice
    policy, store_mode = AGENTS[agent]
    choice = await choose_protocol(llm, tools, out_dir)
    return policy, store_mode, builtin_tool_agent(llm, choice.protocol), choice


async def run_episode(env: Path, agent: str, out_dir: Path, llm: LLMClient, *, tools: str = "text",
                      judge: bool = False) -> dict[str, Any]:
    """Run (or resume) one episode and return the results record (also written to ``results.json``).

    ``tools`` is ``budget.tools`` (how the built-in agent calls tools); ``judge`` sends the answers the rule
    checker marks wrong to the judge role (refused, before any call, when that is the model under test).

    Raises:
        ConfigError: for an agent this family cannot run, or the judge asked of a memory agent's run.
    """
    episode, raw = load_episode(env)
    plugin = None if agent in AGENTS else resolve_tool_agent(agent, llm, plugin_context(episode))
    if agent not in AGENTS and plugin is None:  # a MemoryAgent: metered by the harness (memory_agents.py)
        refuse_judge(judge)
        from .memory_agents import run_memory_episode

        return await run_memory_episode(env, episode, raw, agent, out_dir, llm)
    judge_model = await judge_identity(llm) if judge else None
    policy, store_mode, tool_agent, choice = await tool_agent_for(agent, plugin, llm, out_dir, tools)
    t0 = wall_clock()
    harness = Harness(episode, llm, out_dir, policy=policy, digest=env_digest(raw), store_mode=store_mode,
                      agent=tool_agent)
    state = await harness.run()
    verdicts, score = score_harness(harness)
    judged = await judge_answers(llm, episode, state.answers, verdicts) if judge else {}
    judge_errors = sum(v.error is not None for v in judged.values())
    score_judged = (score_episode(episode, merged(verdicts, judged), harness.store.writes_used, harness.store.ledger)
                    if judge and not judge_errors else None)
    per_kind: dict[str, list[int]] = {}
    for q in episode.questions:
        per_kind.setdefault(q.kind, [0, 0])
        per_kind[q.kind][0] += verdicts[q.id].correct
        per_kind[q.kind][1] += 1
    results = {
        "family": "budget", "format_version": RESULTS_VERSION, "environment_file": str(env),
        "environment_sha256": env_digest(raw), "agent": agent, "policy": policy, "store": store_mode,
        "tool_protocol": choice.protocol, "tool_protocol_reason": choice.reason,
        "search_embedder_problem": harness.embedder_problem, "tier": episode.tier.name,
        "domain": episode.domain, "seed": episode.seed, "salt": episode.salt,
        "score": score.to_dict(),
        "score_judged": score_judged.to_dict() if score_judged is not None else None,
        "judge": None if judge_model is None else {
            "model": judge_model, "sent": len(judged), "overturned": sum(v.correct for v in judged.values()),
            "errors": judge_errors},
        "per_kind": {k: {"correct": c, "total": n} for k, (c, n) in sorted(per_kind.items())},
        "answers": {q.id: {"kind": q.kind, "reply": state.answers.get(q.id), "gold": q.gold,
                           "correct": verdicts[q.id].correct, "reason": verdicts[q.id].reason,
                           "judge": judged[q.id].to_dict() if q.id in judged else None}
                    for q in episode.questions},
        "writes_over_time": state.writes_over_time,
        "ledger": [e.__dict__ for e in harness.store.ledger],
        "usage": llm.ledger.to_dict(),
        "wall_seconds_last_invocation": round(wall_clock() - t0, 3),
        "definitions": {**DEFINITIONS,
                        "score_judged": "the same scores with the answers the judge found right counted right "
                                        "(rule verdicts elsewhere); null without a judge or when a judge call "
                                        "failed"},
    }
    atomic_write_json(out_dir / "results.json", results)
    return results


MODEL_FILE = "model.json"


def check_model(out_dir: Path, served: str, *, allow_change: bool,
                roles: dict[str, str] | None = None) -> list[dict[str, str]]:
    """Pin the served models to the run directory; refuse to resume with another one unless allowed.

    ``served`` is the agent role's model; ``roles`` the other roles the agent calls (a memory agent's
    ``memory`` role), pinned the same way. Returns the model changes recorded so far (each ``{"from", "to"}``,
    with ``"role"`` for a role other than the agent's).

    Raises:
        RunError: when the directory was run with another model for any pinned role and ``allow_change`` is off.
    """
    import json

    path = out_dir / MODEL_FILE
    current = {"agent": served, **(roles or {})}
    if not path.exists():
        atomic_write_json(path, {"format_version": 1, "agent_model": served, "role_models": roles or {},
                                 "changes": []})
        return []
    try:
        pinned = json.loads(path.read_text(encoding="utf-8"))
        before = {"agent": str(pinned["agent_model"]), **{str(k): str(v) for k, v in
                                                          dict(pinned.get("role_models") or {}).items()}}
        changes = list(pinned.get("changes", []))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        raise RunError(f"{path}: unreadable or wrong shape; remove the run directory to start again") from None
    moved = {r: (before[r], m) for r, m in current.items() if r in before and before[r] != m}
    if moved and not allow_change:
        what = "; ".join(f"{r} model {old!r}, now {new!r}" for r, (old, new) in moved.items())
        raise RunError(f"{out_dir}: was run with {what}; refusing to mix models in one episode (use a new --out "
                       "directory, or pass --allow-model-change)")
    for r, (old, new) in moved.items():
        changes.append({"from": old, "to": new} if r == "agent" else {"role": r, "from": old, "to": new})
    if moved or set(current) - set(before):
        atomic_write_json(path, {"format_version": 1, "agent_model": served,
                                 "role_models": {**{r: m for r, m in before.items() if r != "agent"}, **(roles or {})},
                                 "changes": changes})
    return changes
