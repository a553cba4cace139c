"""OpenAI-compatible HTTP backend: hosted APIs, vLLM, SGLang, Ollama, llama.cpp servers."""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import numpy as np
import openai
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletion

from .backends import PermanentError, TransientError
from .types import ChatRequest, ChatResult

_RETRYABLE_STATUS = {408, 409, 425, 429}


def public_url(url: str) -> str:
    """``url`` without credentials or query string, safe to log and to key the cache with."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))


def _retry_after(exc: openai.APIStatusError) -> float | None:
    value = exc.response.headers.get("retry-after") if exc.response is not None else None
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def classify(exc: BaseException) -> TransientError | PermanentError:
    """Map an SDK exception onto our retry decision."""
    if isinstance(exc, openai.APITimeoutError):
        return TransientError("timeout", str(exc))
    if isinstance(exc, openai.APIConnectionError):
        return TransientError("connection", str(exc))
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        if status >= 500 or status in _RETRYABLE_STATUS:
            return TransientError(f"http_{status}", f"HTTP {status}", retry_after=_retry_after(exc))
        return PermanentError(f"http_{status}", f"HTTP {status}: {exc.message}")
    if isinstance(exc, (openai.APIResponseValidationError, json.JSONDecodeError, ValueError, KeyError)):
        return TransientError("malformed_body", str(exc))
    return TransientError("unexpected", f"{type(exc).__name__}: {exc}")


class OpenAIBackend:
    """Chat completions and embeddings through the official ``openai`` SDK (its own retries disabled)."""

    def __init__(self, base_url: str, model: str | None, api_key: str | None, timeout_s: float) -> None:
        self.base_url = public_url(base_url)
        self._model = model
        # The key lives only inside the SDK client object; it is never logged, cached or written.
        self._client = AsyncOpenAI(base_url=base_url, api_key=api_key or "not-needed", max_retries=0,
                                   timeout=timeout_s)

    @property
    def backend_id(self) -> str:
        return f"openai:{self.base_url}"

    async def model(self) -> str:
        """The model name; asks the server's model list when none was configured."""
        if self._model is None:
            try:
                page = await self._client.models.list()
            except Exception as exc:  # noqa: BLE001 - classified and re-raised
                raise classify(exc) from exc
            if not page.data:
                raise PermanentError("no_model", f"{self.base_url} lists no models; set a model name")
            self._model = page.data[0].id
        return self._model

    async def complete(self, req: ChatRequest) -> ChatResult:
        """One chat completion attempt."""
        model = await self.model()
        kwargs: dict[str, Any] = dict(
            model=model, messages=list(req.messages), temperature=req.temperature, max_tokens=req.max_tokens
        )
        if req.seed is not None:
            kwargs["seed"] = req.seed
        if req.json_schema is not None:
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": req.schema_name, "schema": req.json_schema, "strict": True},
            }
        start = time.perf_counter()
        try:
            # The raw post skips the SDK's per-call request transform, which costs about half of the
            # harness CPU per call on long conversations; the body is already plain JSON.
            resp = await self._client.post("/chat/completions", body=kwargs, cast_to=ChatCompletion)
        except Exception as exc:  # noqa: BLE001 - classified and re-raised
            raise classify(exc) from exc
        seconds = time.perf_counter() - start
        if not getattr(resp, "choices", None):
            raise TransientError("empty_choices", "the server returned no choices")
        choice = resp.choices[0]
        text = choice.message.content if choice.message is not None else None
        if text is None:
            raise TransientError("empty_choices", "the server returned a choice without content")
        usage = resp.usage
        timings = (resp.model_extra or {}).get("timings") or {}
        processed = timings.get("prompt_n") if isinstance(timings, dict) else None
        return ChatResult(
            text=text,
            model=resp.model or model,
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
            seconds=seconds,
            finish_reason=choice.finish_reason,
            prompt_tokens_processed=int(processed) if isinstance(processed, int | float) else None,
        )

    async def embed(self, texts: list[str]) -> np.ndarray:
        """Embeddings from the server's ``/embeddings`` route, L2-normalised."""
        model = await self.model()
        try:
            resp = await self._client.embeddings.create(model=model, input=texts)
        except Exception as exc:  # noqa: BLE001
            raise classify(exc) from exc
        vecs = np.asarray([d.embedding for d in resp.data], dtype=np.float32)
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        return vecs / np.maximum(norms, 1e-12)

    async def aclose(self) -> None:
        """Close the HTTP connection pool."""
        await self._client.close()


class OpenAIEmbedBackend:
    """Adapts :class:`OpenAIBackend` to the embedding contract."""

    def __init__(self, backend: OpenAIBackend, dim: int = 0) -> None:
        self._backend = backend
        self.dim = dim
        self.backend_id = backend.backend_id

    async def embed(self, texts: list[str]) -> np.ndarray:
        """Embed through the HTTP endpoint."""
        vecs = await self._backend.embed(texts)
        self.dim = int(vecs.shape[1]) if vecs.size else self.dim
        return vecs
