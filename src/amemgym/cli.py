"""The ``amemgym`` command line. Every command turns an amemgym error into one line and an exit code.

Commands live in ``amemgym.commands.<name>`` modules, each with ``register(app)``.
"""

from __future__ import annotations

import importlib
import sys
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from . import __version__
from .cli_common import (
    ConfigOpt,
    JudgeModelOpt,
    LimitOpt,
    MaxConnectionsOpt,
    ModelOpt,
    SetOpt,
    UserModelOpt,
    app_config,
    handled,
    out,
)

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="amemgym: measure and improve the memory of LLM assistants in long conversations.")

#: Command modules under amemgym.commands, registered in this order.
COMMAND_MODULES: tuple[str, ...] = ("generate", "check_agent", "report", "validate", "export", "evolve")


@app.command()
@handled
def info(config: ConfigOpt = None, set_: SetOpt = None) -> None:
    """Versions, which backend each role resolves to, and whether the embedded model is installed."""
    from .llm.client import LLMClient, default_cache_dir

    cfg = app_config(config, set_)
    out.print(f"amemgym {__version__} (Python {sys.version.split()[0]})")
    table = Table("role", "backend", "model / endpoint")
    for role, desc in LLMClient(cfg.llm).describe().items():
        where = desc.get("base_url") or ""
        table.add_row(role, desc["backend"], f"{desc.get('model') or ''} {where}".strip())
    out.print(table)
    try:
        from .llm.embedded import model_status

        ok, detail = model_status(cfg.llm.embedded.model)
        out.print(f"embedded model {cfg.llm.embedded.model}: {'installed' if ok else 'NOT installed'} ({detail})")
    except ImportError as exc:
        out.print(f"embedded model: unavailable ({exc})")
    try:
        from .llm.embedder import embedder_status

        ok, detail = embedder_status()
        out.print(f"embedded embedder: {'installed' if ok else 'NOT installed'} ({detail})")
    except ImportError as exc:
        out.print(f"embedded embedder: unavailable ({exc})")
    out.print(f"cache dir: {default_cache_dir()}")


@app.command("check-llm")
@handled
def check_llm(config: ConfigOpt = None, set_: SetOpt = None) -> None:
    """One real round trip per role (chat, structured output, embeddings), with latency and tokens."""
    from .llm.client import LLMClient

    cfg = app_config(config, set_)

    async def main() -> None:
        llm = LLMClient(cfg.llm)  # no cache: this must reach the model
        table = Table("role", "call", "seconds", "prompt tok", "completion tok", "reply")
        schema = {"type": "object", "properties": {"colour": {"type": "string", "enum": ["red", "green", "blue"]}},
                  "required": ["colour"], "additionalProperties": False}
        try:
            for role in ("generator", "simulator", "agent", "memory", "judge"):
                t0 = time.perf_counter()
                res = await llm.chat(role, [{"role": "user", "content": "Say hello in five words or fewer."}],
                                     max_tokens=24, use_cache=False, tag="check")
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
            await llm.aclose()
        out.print(table)

    import asyncio  # here, not at the top: --help should not load the event loop machinery

    asyncio.run(main())


@app.command()
@handled
def run(
    out_dir: Annotated[Path, typer.Option("--out", "-o", help="Run directory (created; re-running resumes).")],
    env: Annotated[Path | None, typer.Option("--env", help="Environment file (default: the bundled tiny one).")] = None,
    agent: Annotated[str, typer.Option("--agent", "-a", help="Agent name, module:factory, or agent config file.")]
    = "native",
    config: ConfigOpt = None,
    set_: SetOpt = None,
    off_policy: Annotated[Path | None, typer.Option("--off-policy", help="Replay this run's conversations.")] = None,
    serial: Annotated[bool, typer.Option("--serial", help="One call at a time (debugging).")] = False,
    trials: Annotated[int, typer.Option("--trials", min=1, help="Independent trials (seeds run.seed+k) under "
                                        "OUT/trial_k, with the spread between them.")] = 1,
    executor: Annotated[str, typer.Option("--executor", help="Where episodes run: local (default) or ray.")]
    = "local",
    ray_address: Annotated[str | None, typer.Option("--ray-address", help="Ray cluster to join (auto, HOST:6379); "
                                                    "default: start a local one.")] = None,
    models: Annotated[Path | None, typer.Option("--models", help="YAML map of role -> endpoint settings.")] = None,
    resimulate_leaks: Annotated[bool, typer.Option("--resimulate-leaks", help="Redraw a simulator turn that names "
                                                   "a state value its session did not expose (bounded).")] = False,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Neither read nor write the response cache in this "
                                           "invocation: every call reaches the model.")] = False,
    allow_model_change: Annotated[bool, typer.Option("--allow-model-change", help="Resume a run although a role's "
                                                     "model changed; each session records its model.")] = False,
    model: ModelOpt = None,
    user_model: UserModelOpt = None,
    judge_model: JudgeModelOpt = None,
    max_connections: MaxConnectionsOpt = None,
    limit: LimitOpt = None,
) -> None:
    """Run an agent on an environment (on-policy), evaluate every period, and write metrics."""
    from .families import RunRequest, family_for_env

    request = RunRequest(out_dir=out_dir, env=env, agent=agent, config=config, sets=set_, off_policy=off_policy,
                         serial=serial, trials=trials, executor=executor, ray_address=ray_address, models=models,
                         resimulate_leaks=resimulate_leaks, no_cache=no_cache, allow_model_change=allow_model_change,
                         model=model, user_model=user_model, judge_model=judge_model,
                         max_connections=max_connections, limit=limit)
    raise typer.Exit(family_for_env(env).run(request, out))


@app.command()
@handled
def version() -> None:
    """Print the version."""
    out.print(__version__)


def _register_commands() -> None:
    for name in COMMAND_MODULES:
        importlib.import_module(f"{__package__}.commands.{name}").register(app)


_register_commands()


def main() -> None:
    """Console-script entry point."""
    from .fastexit import exit_now

    try:
        app()
    except SystemExit as done:
        exit_now(done.code)
        raise
