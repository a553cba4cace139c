"""Memory agents: the contract, the registry, the built-in agents and the conformance checker."""

from .awe import AweAgent
from .awi import AwiAgent
from .base import AgentContext, AgentFactory, MemoryAgent
from .buffered import BufferedAgent, MessageBuffer
from .checker import CheckReport, CheckResult, check_agent
from .rag import RagAgent
from .registry import AgentSpec, known_agents, register, resolve_agent
from .vector_store import MemoryRecord, NumpyVectorStore, VectorStore

__all__ = [
    "AgentContext", "AgentFactory", "AgentSpec", "AweAgent", "AwiAgent", "BufferedAgent", "CheckReport", "CheckResult",
    "MemoryAgent", "MemoryRecord", "MessageBuffer", "NumpyVectorStore", "RagAgent", "VectorStore", "check_agent",
    "known_agents", "register", "resolve_agent",
]
