"""Every stand-in for a real model or server, in one place (tests, benchmarks and conformance checks).

* :class:`~amemgym.testing.scripted_model.ScriptedBackend`: an in-process model whose reply is a function
  of the request (the conformance checker runs agents against it); ``scripted_client`` wraps it in a real
  client (``ScriptedClient``, whose ``scripted`` backend counts the calls that reached it); and
  ``HashEmbedder``, a model-free embedder (``validate --embedder hash``).
* :class:`~amemgym.testing.run_script.RunScript`: a script that plays every role of a run against a known
  environment (perfect by default, or with chosen wrong answers and probes).
* :class:`~amemgym.testing.fake_endpoint.FakeEndpoint`: a local OpenAI-compatible server with fixed
  latency and seeded fault injection, also runnable as ``python -m amemgym.testing.fake_endpoint``.
* :func:`~amemgym.testing.responder.default_responder`: content-only replies for every amemgym role.
* :mod:`~amemgym.testing.runs`: the real CLI in a subprocess against a fake endpoint, killed at will.

docs/design.md §17 describes how tests use them.
"""

from __future__ import annotations

from typing import Any

__all__ = ["FAULT_KINDS", "FakeEndpoint", "default_responder", "minimal_instance", "request_kind"]


def __getattr__(name: str) -> Any:
    # Lazy, so ``python -m amemgym.testing.fake_endpoint`` does not import its own module twice.
    if name in ("FAULT_KINDS", "FakeEndpoint"):
        from . import fake_endpoint

        return getattr(fake_endpoint, name)
    if name in ("default_responder", "minimal_instance", "request_kind"):
        from . import responder

        return getattr(responder, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
