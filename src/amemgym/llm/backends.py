"""The backend contract and the errors a single attempt may raise.

A backend performs exactly one attempt; retries, caching, limits and accounting live in
:class:`amemgym.llm.client.LLMClient`, so every backend gets them for free.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from .types import ChatRequest, ChatResult

if TYPE_CHECKING:
    import numpy as np


class TransientError(Exception):
    """An attempt failed in a way worth retrying (429, 5xx, timeout, reset, malformed body, empty reply)."""

    def __init__(self, kind: str, message: str = "", retry_after: float | None = None) -> None:
        super().__init__(message or kind)
        self.kind = kind
        self.retry_after = retry_after
        #: What the server says the rejected reply cost (prompt, completion, prompt tokens processed), when the
        #: reply arrived and carried its usage: spent all the same, so it is counted.
        self.spent: tuple[int, int, int] | None = None
        #: A reply arrived (and was rejected): without ``spent`` its tokens are unknown, counted as uncounted.
        self.arrived = False


class PermanentError(Exception):
    """An attempt failed deterministically (a 4xx such as 400/401/404): retrying cannot help."""

    def __init__(self, kind: str, message: str = "") -> None:
        super().__init__(message or kind)
        self.kind = kind


@runtime_checkable
class ChatBackend(Protocol):
    """Something that can answer one chat request."""

    @property
    def backend_id(self) -> str:
        """Identifies the server and model family for the response cache (no secrets)."""
        ...

    async def complete(self, req: ChatRequest) -> ChatResult:
        """Make one attempt. Raises TransientError or PermanentError on failure."""
        ...


@runtime_checkable
class EmbedBackend(Protocol):
    """Something that turns texts into unit-length vectors."""

    @property
    def backend_id(self) -> str:
        """Identifies the embedding model (no secrets)."""
        ...

    @property
    def dim(self) -> int:
        """Vector size."""
        ...

    async def embed(self, texts: list[str]) -> np.ndarray:
        """Embed ``texts`` into a float32 array of shape (len(texts), dim), rows L2-normalised."""
        ...
