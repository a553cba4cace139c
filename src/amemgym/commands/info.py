"""``amemgym info``, ``check-llm`` and ``version``: what this installation is and whether its models answer."""

from __future__ import annotations

import asyncio
import sys
import time

import typer
from rich.table import Table

from .. import __version__
from ..cli_common import ConfigOpt, SetOpt, err, handled, out
from ..config import load_config
from ..engine.progress import STALL_SECONDS, stall_text
from ..llm.client import LLMClient, default_cache_dir
from ..llm.embedded_model import model_status
from ..llm.embedder import embedder_status
from ..llm.preflight import preflight


def info(config: ConfigOpt = None, set_: SetOpt = None) -> None:
    """Versions, which backend each role resolves to, and whether the embedded model is installed."""
    cfg = load_config(config, set_)
    out.print(f"amemgym {__version__} (Python {sys.version.split()[0]})")
    table = Table("role", "backend", "model / endpoint")
    for role, desc in LLMClient(cfg.llm).describe().items():
        where = desc.get("base_url") or ""
        table.add_row(role, desc["backend"], f"{desc.get('model') or ''} {where}".strip())
    out.print(table)
    ok, detail = model_status(cfg.llm.embedded.model)
    out.print(f"embedded model {cfg.llm.embedded.model}: {'installed' if ok else 'NOT installed'} ({detail})")
    ok, detail = embedder_status()
    out.print(f"embedded embedder: {'installed' if ok else 'NOT installed'} ({detail})")
    out.print(f"cache dir: {default_cache_dir()}")


def check_llm(config: ConfigOpt = None, set_: SetOpt = None) -> None:
    """One real round trip per role (chat, structured output, embeddings), with latency, tokens and the model
    that answered. A role whose endpoint does not list its configured model fails before any call."""
    cfg = load_config(config, set_)
    preflight(cfg.llm, ["generator", "simulator", "agent", "memory", "judge", "embedder"])

    async def waiting(llm: LLMClient) -> None:
        # As a run does: a server that takes the request and never answers is said every 30 s, not sat out in
        # silence until the read limit (300 s by default, per attempt).
        while True:
            await asyncio.sleep(STALL_SECONDS)
            stall = stall_text(llm.ledger, STALL_SECONDS)
            if stall:
                err.print(f"still waiting: {stall}; each attempt ends after llm.*.read_timeout_s without a byte",
                          highlight=False)

    async def main() -> None:
        llm = LLMClient(cfg.llm)  # no cache: this must reach the model
        watcher = asyncio.create_task(waiting(llm))
        table = Table("role", "call", "seconds", "prompt tok", "completion tok", "reply")
        answered: dict[str, str] = {}
        schema = {"type": "object", "properties": {"colour": {"type": "string", "enum": ["red", "green", "blue"]}},
                  "required": ["colour"], "additionalProperties": False}
        try:
            for role in ("generator", "simulator", "agent", "memory", "judge"):
                t0 = time.perf_counter()
                res = await llm.chat(role, [{"role": "user", "content": "Say hello in five words or fewer."}],
                                     max_tokens=24, use_cache=False, tag="check")
                answered[role] = res.model
                table.add_row(role, "chat", f"{time.perf_counter() - t0:.2f}", str(res.prompt_tokens),
                              str(res.completion_tokens), res.text.strip()[:60])
            t0 = time.perf_counter()
            value, res = await llm.chat_json(
                "agent", [{"role": "user", "content": "Pick the colour of a clear daytime sky. Answer in JSON."}],
                schema, check=lambda v: None if isinstance(v, dict) and "colour" in v else "missing colour",
                max_tokens=24, use_cache=False, tag="check")
            table.add_row("agent", "structured", f"{time.perf_counter() - t0:.2f}", str(res.prompt_tokens),
                          str(res.completion_tokens), str(value))
            t0 = time.perf_counter()
            vecs = await llm.embed(["a cat sat on the mat", "a kitten rested on the rug", "quarterly tax filing"])
            sims = vecs @ vecs.T
            table.add_row("embedder", "embed x3", f"{time.perf_counter() - t0:.2f}", "", "",
                          f"dim {vecs.shape[1]}; sim(cat,kitten)={sims[0, 1]:.2f} sim(cat,tax)={sims[0, 2]:.2f}")
        finally:
            watcher.cancel()
            await llm.aclose()
        out.print(table)
        # The name each reply carried: a server may answer a name with a snapshot or a different model.
        out.print("answered by: " + ", ".join(f"{role} {model or '(unnamed)'}" for role, model in answered.items()),
                  highlight=False, markup=False)

    asyncio.run(main())


def version() -> None:
    """Print the version."""
    out.print(__version__)


def register(app: typer.Typer) -> None:
    """Add the ``info``, ``check-llm`` and ``version`` commands."""
    app.command("info")(handled(info))
    app.command("check-llm")(handled(check_llm))
    app.command("version")(handled(version))
