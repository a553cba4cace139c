"""Structured memory-write calls that tell a malformed reply apart from a failed call.

A memory library that gets unusable JSON from its model loses what it was writing; that is a property
of the agent under test and is counted, not hidden. A call that fails at the transport level (the
endpoint is down after all retries) is not the agent's doing and propagates as :class:`LLMError`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..llm.client import LLMClient
from ..llm.parsing import parse_json_reply
from ..llm.types import ChatMessage
from .buffered import WriteCounters


async def memory_json(
    llm: LLMClient,
    messages: list[ChatMessage],
    schema: dict[str, Any],
    counters: WriteCounters,
    *,
    check: Callable[[Any], str | None],
    tag: str,
    seed: int,
    attempts: int = 2,
    max_tokens: int = 512,
) -> Any | None:
    """The parsed, checked reply of a ``memory``-role call, or None when every attempt was malformed.

    Raises:
        LLMError: when the call itself fails.
    """
    for i in range(attempts):
        res = await llm.chat("memory", messages, json_schema=schema, schema_name=tag.replace(".", "_"),
                             seed=seed + 7919 * i, temperature=0.0 if i == 0 else 0.5, max_tokens=max_tokens,
                             tag=tag)
        counters.memory_calls += 1
        counters.memory_prompt_tokens += res.prompt_tokens
        counters.memory_completion_tokens += res.completion_tokens
        value = parse_json_reply(res.text)
        if value is not None and check(value) is None:
            return value
    counters.malformed_replies += 1
    return None
