"""The agent names the budget family runs itself, each with its harness policy and store."""

from __future__ import annotations

from ...errors import ConfigError

__all__ = ["AGENTS", "policy_of"]

#: Agent names this family runs -> (harness policy, store): the tool-using LLM agent with the notes store
#: (hybrid BM25 + embedder search) or the vector store, and the long-context reference.
AGENTS = {"native": ("budget", "notes"), "llm": ("budget", "notes"), "vector": ("budget", "vector"),
          "long-context": ("long-context", "notes")}


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
