"""Memory agents: the contract, the registry and the built-in agents."""

from .base import AgentContext, AgentFactory, MemoryAgent
from .registry import AgentSpec, known_agents, register, resolve_agent

__all__ = ["AgentContext", "AgentFactory", "AgentSpec", "MemoryAgent", "known_agents", "register", "resolve_agent"]
