"""Registration of the built-in agents (imported lazily by the registry).

Names select an agent and its buffer knobs: ``rag-2-4-30`` / ``awe-2-4-30`` are (freq, ns, topk),
``awi-2-4`` and ``awi-oracle-2-4`` are (freq, ns); bare ``rag``, ``awe``, ``awi``, ``awi-oracle`` use the
defaults (2, 4, 30). An agent config file may instead (not additionally) set the same knobs as options.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import ConfigError
from ..llm.client import LLMClient
from .awe import AweAgent
from .awi import AwiAgent, oracle_policy
from .base import AgentContext, AgentFactory
from .mem0_adapter import mem0_factory
from .native import native
from .rag import RagAgent
from .registry import register


class BufferOptions(BaseModel):
    """Knobs shared by the buffered agents."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    freq: int = Field(2, ge=1, description="messages written to memory at a time")
    ns: int = Field(4, ge=0, description="messages kept in context after a write")
    overlap: bool = Field(True, description="write memory in the background, overlapping the next call")


class RetrievalOptions(BufferOptions):
    """Knobs of RAG and AWE."""

    topk: int = Field(30, ge=1, description="memories retrieved per reply")
    max_memories: int | None = Field(None, ge=1, description="evict the oldest memories past this many")


class AweOptions(RetrievalOptions):
    """Knobs of AWE."""

    similar: int = Field(5, ge=1, description="stored memories retrieved per new fact for reconciliation")


class Mem0Options(BufferOptions):
    """Knobs of the mem0 adapter."""

    topk: int = Field(30, ge=1, description="memories retrieved per reply")


class AwiOptions(BufferOptions):
    """Knobs of AWI."""

    policy: str | None = Field(None, description="what kinds of information to keep (the evolvable section)")


def _options(model: type[BaseModel], name: str, raw: dict[str, Any]) -> Any:
    try:
        return model(**raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "options"
        raise ConfigError(f"agent {name}: {where}: {first['msg']}") from None


def _build_rag(opts: RetrievalOptions, llm: LLMClient, ctx: AgentContext) -> RagAgent:
    return RagAgent(llm, ctx, **opts.model_dump())


def _build_awe(opts: AweOptions, llm: LLMClient, ctx: AgentContext) -> AweAgent:
    return AweAgent(llm, ctx, **opts.model_dump())


def _build_awi(opts: AwiOptions, oracle: bool, llm: LLMClient, ctx: AgentContext) -> AwiAgent:
    kwargs = opts.model_dump()
    if oracle and kwargs["policy"] is None:
        kwargs["policy"] = oracle_policy(ctx.state_schema)
    return AwiAgent(llm, ctx, **kwargs)


@register(r"native", "native (whole conversation in context)", roles=("agent",))
def _native(**options: Any) -> AgentFactory:
    if options:
        raise TypeError(f"native takes no options, got {sorted(options)}")
    return native


@register(r"rag(?:-(?P<freq>\d+)-(?P<ns>\d+)-(?P<topk>\d+))?",
          "rag[-FREQ-NS-TOPK] (raw messages in a vector store; default 2-4-30)", roles=("agent", "embedder"))
def _rag(**options: Any) -> AgentFactory:
    return partial(_build_rag, _options(RetrievalOptions, "rag", options))


@register(r"awe(?:-(?P<freq>\d+)-(?P<ns>\d+)-(?P<topk>\d+))?",
          "awe[-FREQ-NS-TOPK] (extracted facts reconciled mem0-style; default 2-4-30)",
          roles=("agent", "memory", "embedder"))
def _awe(**options: Any) -> AgentFactory:
    return partial(_build_awe, _options(AweOptions, "awe", options))


@register(r"awi(?:-(?P<freq>\d+)-(?P<ns>\d+))?", "awi[-FREQ-NS] (in-context notes dictionary; default 2-4)",
          roles=("agent", "memory"))
def _awi(**options: Any) -> AgentFactory:
    return partial(_build_awi, _options(AwiOptions, "awi", options), False)


@register(r"awi-oracle(?:-(?P<freq>\d+)-(?P<ns>\d+))?",
          "awi-oracle[-FREQ-NS] (awi told the state variable names; ablation)", roles=("agent", "memory"))
def _awi_oracle(**options: Any) -> AgentFactory:
    return partial(_build_awi, _options(AwiOptions, "awi-oracle", options), True)


@register(r"mem0(?:-(?P<topk>\d+))?", "mem0[-TOPK] (the mem0ai library, optional extra 'mem0')",
          roles=("agent", "memory", "embedder"))
def _mem0(**options: Any) -> AgentFactory:
    # The knobs are checked here, as every built-in's are, not first by mem0's vector store mid-run.
    opts = _options(Mem0Options, "mem0", options)
    return mem0_factory(**opts.model_dump())
