"""One async seam for chat completions and embeddings, used by every role.

Backends: any OpenAI-compatible HTTP endpoint, the embedded llama.cpp model (default), the embedded
MiniLM embedder, and a scripted fake for tests. :class:`LLMClient` adds concurrency limits, retries
with backoff, a persistent response cache, in-flight deduplication and per-role usage accounting.
"""

from .backends import ChatBackend, EmbedBackend, PermanentError, TransientError
from .cache import ResponseCache
from .client import LLMClient
from .parsing import parse_choice, parse_json_reply
from .types import ChatRequest, ChatResult
from .usage import RoleUsage, UsageLedger

__all__ = [
    "ChatBackend",
    "ChatRequest",
    "ChatResult",
    "EmbedBackend",
    "LLMClient",
    "PermanentError",
    "ResponseCache",
    "RoleUsage",
    "TransientError",
    "UsageLedger",
    "parse_choice",
    "parse_json_reply",
]
