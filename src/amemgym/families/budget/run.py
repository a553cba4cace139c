"""One budget episode: play it and check the answers into its results record (the engine runs many and writes it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...agents.registry import may_be_plugin
from ...engine.checkpoint import Checkpoint
from ...errors import ConfigError
from ...llm.client import LLMClient
from .checker import Verdict
from .harness import Harness, ToolAgent, env_digest, wall_clock
from .io import load_episode
from .judging import judge_answers, judge_identity, merged
from .memory_agents import Meter, MeteredVectorStore, run_memory_episode
from .model import Episode
from .policies import AGENTS
from .scoring import DEFINITIONS, EpisodeScore, score_episode
from .tool_agents import EpisodeView, ProtocolChoice, ToolAgentContext, builtin_tool_agent, resolve_tool_agent
from .validity import judge as rule_verdicts

#: The version of the results record an episode writes.
RESULTS_VERSION = 1


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
    if not may_be_plugin(agent):
        return "memory"  # a built-in memory agent (an unknown name is refused by the memory plan)
    episode, _ = load_episode(env)
    return "memory" if resolve_tool_agent(agent, llm, plugin_context(episode)) is None else "tool"


async def tool_agent_for(agent: str, plugin: ToolAgent | None, llm: LLMClient,
                         choice: ProtocolChoice) -> tuple[str, str, ToolAgent]:
    """The harness policy, store mode and tool agent of ``--agent``: a built-in name speaking the run's tool
    protocol ``choice``, or the tool agent ``plugin`` its plug-in factory built."""
    if plugin is not None:
        return "budget", "notes", plugin
    policy, store_mode = AGENTS[agent]
    return policy, store_mode, builtin_tool_agent(llm, choice.protocol)


async def play_episode(env: Path, agent: str, llm: LLMClient, checkpoint: Checkpoint, *,
                       choice: ProtocolChoice, judge: bool = False) -> dict[str, Any]:
    """Play (or resume from ``checkpoint``) one episode and return its results record (the engine writes it).

    ``choice`` is the run's tool protocol (pinned in its manifest); ``judge`` sends the answers the rule checker
    marks wrong to the judge role (the engine's plan refused it when that is the model under test).

    Raises:
        ConfigError: for an agent this family cannot run, or the judge asked of a memory agent's run.
    """
    episode, raw = load_episode(env)
    plugin = None if agent in AGENTS else resolve_tool_agent(agent, llm, plugin_context(episode))
    if agent not in AGENTS and plugin is None:  # a MemoryAgent: metered by the harness (memory_agents.py)
        refuse_judge(judge)
        return await run_memory_episode(env, episode, raw, agent, checkpoint.dir, llm, checkpoint)
    judge_model = await judge_identity(llm) if judge else None
    policy, store_mode, tool_agent = await tool_agent_for(agent, plugin, llm, choice)
    t0 = wall_clock()
    harness = Harness(episode, llm, checkpoint.dir, policy=policy, digest=env_digest(raw), store_mode=store_mode,
                      agent=tool_agent, checkpoint=checkpoint)
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
    return {
        "family": "budget", "results_version": RESULTS_VERSION, "environment_file": str(env),
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
        "wall_seconds_last_invocation": round(wall_clock() - t0, 3),
        "definitions": {**DEFINITIONS,
                        "score_judged": "the same scores with the answers the judge found right counted right "
                                        "(rule verdicts elsewhere); null without a judge or when a judge call "
                                        "failed"},
    }
