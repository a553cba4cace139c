"""Checks made before the first model call: every role a command will use can actually be served.

A missing tokenizer or a mistyped model name used to surface mid-run, after dozens of calls. Here each
role is checked once, cheaply and without a model call: an HTTP endpoint must answer ``GET /models`` (through
the run's own HTTP client, under the same limits) in JSON, and list the configured model (when it lists
models at all); the embedded chat model must be installed; the
embedder must be installed (local) or reachable (HTTP).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..config import EndpointConfig, LLMConfig
from ..errors import BackendUnavailable, ConfigError
from ..urls import REDIRECT_ADVICE, check_base_url, public_url
from .backends import PermanentError, TransientError
from .client import read_api_key
from .embedded_model import model_status
from .embedder import embedder_status
from .http import Response
from .openai_backend import OpenAIBackend

__all__ = ["RoleCheck", "check_roles", "preflight", "run_roles"]

#: What an agent of unknown make (a plug-in that does not declare ``roles``) may call.
_ALL_AGENT_ROLES: tuple[str, ...] = ("agent", "memory", "embedder")


@dataclass(frozen=True)
class RoleCheck:
    """The verdict for one role: usable or not, and a one-line reason."""

    role: str
    ok: bool
    detail: str
    bad_config: bool = False  # the settings contradict each other (exit 2 as a ConfigError)


def run_roles(agent_roles: Iterable[str] | None, *, off_policy: bool = False, extra: Iterable[str] = ()) -> list[str]:
    """The roles a run (or evolve) will call, in a stable order.

    Args:
        agent_roles: the roles the agent uses (``AgentSpec.roles``); None when unknown (all agent roles).
        off_policy: a replayed run never calls the simulated user.
        extra: roles the command adds (e.g. the recall judge).
    """
    wanted = set(_ALL_AGENT_ROLES if agent_roles is None else agent_roles) | set(extra)
    if not off_policy:
        wanted.add("simulator")
    order = ("simulator", "agent", "memory", "judge", "generator", "embedder")
    return [r for r in order if r in wanted]


def _http_url(cfg: LLMConfig, role: str) -> str | None:
    if role == "embedder":
        return cfg.endpoint("embedder").base_url  # OPENAI_BASE_URL does not redirect embeddings
    return cfg.chat_base_url(role)  # type: ignore[arg-type]


def _served_models(url: str, key: str | None, ep: EndpointConfig) -> tuple[list[str] | None, str | None]:
    """The model ids the endpoint lists (None if it has no usable list), or an error line.

    Read through the same client, limits and size cap as every model call (one attempt, no retries).
    """
    async def probe() -> Response:
        backend = OpenAIBackend(url, ep.model, key, timeout_s=ep.timeout_s, connect_timeout_s=ep.connect_timeout_s,
                                read_timeout_s=ep.read_timeout_s, max_reply_bytes=ep.max_reply_bytes)
        try:
            return await backend.send("GET", "/models")
        finally:
            await backend.aclose()

    where = public_url(url)
    try:
        resp = asyncio.run(probe())
    except PermanentError as exc:
        return None, f"endpoint {where}: {exc}"
    except TransientError as exc:
        if exc.kind == "timeout" and "ConnectTimeout" not in str(exc):
            # Connected, then silence: the server is there, so "unreachable" would send the user the wrong way.
            return None, (f"endpoint {where} accepted the connection but did not answer GET /models within the "
                          f"endpoint's time limits ({exc}); a server still loading its model answers later: re-run "
                          "then, or raise read_timeout_s / timeout_s")
        if exc.kind in ("connection", "timeout", "proxy"):
            return None, f"endpoint {where} is unreachable ({exc.kind}: {exc})"
        return None, f"endpoint {where} gave no usable reply to GET /models ({exc.kind}: {exc})"
    if resp.status in (401, 403):
        return None, f"endpoint {where} rejected the API key (HTTP {resp.status})"
    if 300 <= resp.status < 400:
        target = resp.headers.get("location")
        shown = public_url(target) if target else "elsewhere"
        return None, f"endpoint {where} redirects to {shown} (HTTP {resp.status}); {REDIRECT_ADVICE}"
    try:
        data: Any = json.loads(resp.body)
    except (ValueError, RecursionError):
        # An HTML page (a web server, a login portal, a wrong path) is no OpenAI-compatible API; a server
        # without a model list still answers in JSON.
        kind = (resp.headers.get("content-type") or "no content type").split(";")[0]
        return None, (f"endpoint {where} is not an OpenAI-compatible API (GET /models: HTTP {resp.status}, {kind}); "
                      "check base_url (it usually ends in /v1)")
    try:
        ids = [str(m["id"]) for m in data["data"]] if 200 <= resp.status < 300 else None
    except (KeyError, TypeError):
        ids = None
    return ids, None


def check_roles(cfg: LLMConfig, roles: Iterable[str]) -> list[RoleCheck]:
    """Check each role without making a model call; one endpoint is probed once however many roles share it."""
    probes: dict[tuple[str, str | None], tuple[list[str] | None, str | None]] = {}
    results: list[RoleCheck] = []
    for role in roles:
        ep = cfg.endpoint(role)  # type: ignore[arg-type]
        url = _http_url(cfg, role)
        if url is None:
            results.append(_check_local(cfg, role, ep.model))
            continue
        if not ep.base_url:
            check_base_url(url, "OPENAI_BASE_URL")  # a configured base_url was checked when the config loaded
        key = read_api_key(ep)
        probe_key = (url, key)
        if probe_key not in probes:
            probes[probe_key] = _served_models(url, key, ep)
        served, problem = probes[probe_key]
        where = public_url(url)
        if problem:
            results.append(RoleCheck(role, False, problem))
        elif served is not None and ep.model and ep.model not in served:
            shown = ", ".join(served[:8]) + (" ..." if len(served) > 8 else "") if served else "no models"
            results.append(RoleCheck(role, False, f"model {ep.model!r} is not served by {where} (it lists {shown})"))
        else:
            results.append(RoleCheck(role, True, f"{ep.model or '(server default)'} at {where}"))
    return results


def _check_local(cfg: LLMConfig, role: str, model: str | None) -> RoleCheck:
    if role == "embedder":
        ok, detail = embedder_status()
        return RoleCheck(role, ok, detail)
    emb = cfg.embedded.model
    if model and model != emb:
        # Without an endpoint the embedded model answers; a different name would be recorded but never used.
        return RoleCheck(role, False, f"model {model!r} is set but the role has no endpoint (it would run the "
                                      f"embedded {emb}); set OPENAI_BASE_URL or llm.default.base_url", True)
    if importlib.util.find_spec("xllamacpp") is None:
        return RoleCheck(role, False, "the embedded model needs xllamacpp; install it with: "
                                      "pip install 'amemgym[local]'")
    ok, detail = model_status(emb)
    return RoleCheck(role, ok, f"embedded {detail}")


def preflight(cfg: LLMConfig, roles: Iterable[str]) -> list[RoleCheck]:
    """Check ``roles`` and raise on the first unusable one.

    Raises:
        BackendUnavailable: a role's endpoint is unreachable, its model is not served or its backend is missing
            (one line naming the role; exit code 2).
        ConfigError: a model is named for a role that has no endpoint, or ``$OPENAI_BASE_URL`` cannot work.
    """
    results = check_roles(cfg, roles)
    # Contradictory settings are named first: they are the cause even when something else is also missing.
    for r in results:
        if r.bad_config:
            raise ConfigError(f"preflight: role {r.role}: {r.detail}")
    for r in results:
        if not r.ok:
            raise BackendUnavailable(f"preflight: role {r.role}: {r.detail}")
    return results
