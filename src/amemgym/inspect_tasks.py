"""amemgym as Inspect AI tasks (optional extra ``inspect``): ``inspect eval`` on any Inspect model provider.

Each sample is one simulated user. Its solver runs that user's whole episode with amemgym's own engine
(the same one ``amemgym run`` uses) into a run directory of its own, with every chat call of the agent
(and its memory writes) sent to the model under evaluation, and the simulated user sent to the Inspect
model role ``simulator`` (default: the same model). Its scorer reads the user's numbers from that run's
``metrics.json``, so memory scoring is amemgym's, not a re-implementation: per user the mean over
periods of overall accuracy, upper bound, random baseline and normalised memory score; Inspect's metrics
average them over users, which is how ``amemgym run`` computes its headline numbers.

Examples::

    inspect eval amemgym/amemgym_memory --model openai/gpt-4.1-mini -T agent=awe -T config=small
    inspect eval amemgym/amemgym_memory --model ollama/qwen2.5:7b --model-role simulator=openai/gpt-4.1-mini

The run directories (``-T out=DIR``, default a fresh temporary directory) are ordinary amemgym runs:
``amemgym report DIR/<user>`` shows their conversations. The embedder stays the local MiniLM unless the
config gives the ``embedder`` role an endpoint.

An environment of a family on the engine's unit contract (a budget episode file or a folder of them) gives
one sample per unit instead: the solver plays it through the engine (``amemgym.engine.runner.play_file``,
the path ``amemgym run`` takes) into ``DIR/<unit>``, and the scorer reports the family's registered unit
metrics from the record the engine wrote, averaged over units by Inspect (per group, as ``amemgym run`` does,
only when every unit shares one group)::

    inspect eval amemgym/amemgym_memory --model openai/gpt-4.1-mini -T env=budget/lite -T agent=native
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    GenerateConfig,
    Model,
    ResponseSchema,
    get_model,
)
from inspect_ai.scorer import SampleScore, Score, Target, metric, scorer
from inspect_ai.solver import Generate, TaskState, solver
from inspect_ai.util import JSONSchema

from .agents.registry import resolve_agent
from .config import load_config
from .engine.play import play_file
from .engine.rundir import UnitRunDir
from .errors import ConfigError, RunError
from .families import family_for_env, get_family
from .families.statetrack.command import generated_with
from .families.statetrack.cut import first_users
from .families.statetrack.data.io import load_environment
from .families.statetrack.data.model import Environment
from .families.statetrack.driver import default_environment
from .families.statetrack.layout import RunDir
from .families.statetrack.metrics import result_flags
from .families.statetrack.runner import Runner
from .families.statetrack.validity.sim_audit import DEGENERATE_WARN
from .llm.backends import TransientError
from .llm.client import LLMClient
from .llm.types import ChatRequest, ChatResult
from .scoring.registry import in_display_order, unit_metrics

__all__ = ["InspectBackend", "amemgym_memory", "score_keys", "unit_score"]


def score_keys() -> tuple[str, ...]:
    """The per-user numbers each sample's score carries: the registry's per-cell metrics, in display order."""
    return tuple(m.name for m in in_display_order("cell"))

_ROLE_CLASSES = {"system": ChatMessageSystem, "user": ChatMessageUser, "assistant": ChatMessageAssistant}


def _schema(schema: dict[str, Any] | None) -> JSONSchema | None:
    """The schema as Inspect's type, or None when Inspect's type cannot hold it exactly (e.g. ``$ref``).

    amemgym parses and checks every structured reply itself, so leaving a schema out costs at most a retry.
    """
    if schema is None:
        return None
    try:
        converted = JSONSchema.model_validate(schema)
    except ValueError:
        return None
    # Inspect's type silently drops keywords it does not know; only a lossless round trip is used.
    if converted.model_dump(exclude_none=True) != schema:
        return None
    return converted


class InspectBackend:
    """An amemgym chat backend that answers through an Inspect model (one attempt per call).

    Args:
        model: the Inspect model.
    """

    def __init__(self, model: Model) -> None:
        self.model = model
        self.backend_id = f"inspect:{model}"

    async def complete(self, req: ChatRequest) -> ChatResult:
        """Send ``req`` to the Inspect model; Inspect does its own retries, a failure is transient here."""
        messages: list[ChatMessage] = [_ROLE_CLASSES[m["role"]](content=m["content"]) for m in req.messages]
        schema = _schema(req.json_schema)
        config = GenerateConfig(
            temperature=req.temperature, max_tokens=req.max_tokens, seed=req.seed,
            response_schema=ResponseSchema(name=req.schema_name, json_schema=schema) if schema else None,
        )
        start = time.perf_counter()
        try:
            output = await self.model.generate(messages, config=config)
        except Exception as exc:  # providers raise their own types; LLMClient bounds the retries
            raise TransientError("inspect_error", f"{type(exc).__name__}: {exc}") from None
        usage = output.usage
        return ChatResult(
            text=output.completion, model=str(output.model or self.model), seconds=time.perf_counter() - start,
            prompt_tokens=usage.input_tokens if usage else 0, completion_tokens=usage.output_tokens if usage else 0,
            finish_reason=output.stop_reason,
        )


def _one_user(env: Environment, user_id: str) -> Environment:
    return env.model_copy(update={"users": [u for u in env.users if u.id == user_id]})


def refuse_unfinished(user: str, failures: list[dict[str, Any]], metrics: dict[str, Any], rundir: Path) -> None:
    """Fail the sample, as `amemgym run` exits 1, when the user's episode has failures or is incomplete: a user
    scored on the periods it happened to finish (or on none, which Inspect would count as 0) is not a
    measurement.

    Raises:
        RunError: naming the first failure and the run directory.
    """
    if failures or metrics.get("complete") is False:
        first = failures[0].get("error", "") if failures else "the episode is incomplete"
        raise RunError(f"user {user}: {len(failures)} failure(s) (first: {first}); see {rundir}; re-run the eval "
                       "to resume it")


@solver
def amemgym_episode(env_path: str, agent: str, config: str | None, out: str) -> Any:
    """Run one user's episode (the sample's ``user``) with amemgym's engine, the agent on the eval model.
    ``config`` is the preset or config file (see :func:`_config_ref`)."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        cfg = load_config(config)
        env = _one_user(load_environment(Path(env_path)), str(state.metadata["user"]))
        model = get_model()
        agent_backend = InspectBackend(model)
        simulator = InspectBackend(get_model(role="simulator", default=model))
        llm = LLMClient(cfg.llm, backends={"agent": agent_backend, "memory": agent_backend, "simulator": simulator})
        rundir = Path(out) / str(state.metadata["user"])
        try:
            outcome = await Runner(env, resolve_agent(agent), rundir, cfg, llm, env_path=Path(env_path)).run()
        finally:
            await llm.aclose()
        state.metadata["rundir"] = str(rundir)
        state.metadata["failures"] = len(outcome.failures)
        refuse_unfinished(env.users[0].id, outcome.failures, outcome.metrics, rundir)
        state.output.completion = f"amemgym episode of user {env.users[0].id}: {rundir}"
        state.completed = True
        return state

    return solve


def task_flags(means: dict[str, float | None], samples: list[dict[str, Any]]) -> list[str]:
    """The degeneracy flags of the whole task, as ``amemgym run`` would flag one run of all its users.

    ``means`` are the user means; each sample's score metadata carries its cells without a memory score and
    its simulator's degenerate turns, pooled here as the run pools them.
    """
    undefined = sum(int(m.get("undefined_cells") or 0) for m in samples)
    total = sum(int(m.get("total_cells") or 0) for m in samples)
    turns = sum(int(m.get("simulator_turns") or 0) for m in samples)
    bad = sum(int(m.get("simulator_degenerate") or 0) for m in samples)
    overall: dict[str, Any] = {k: {"mean": v} for k, v in means.items()}
    overall |= {"memory_cells": {"total": total}, "undefined_memory_cells": undefined}
    return result_flags(overall, {"warn": bool(turns) and bad / turns > DEGENERATE_WARN})


@metric
def user_mean() -> Any:
    """Mean of each score key over users where it is defined (as ``amemgym run`` averages users)."""

    def compute(scores: list[SampleScore]) -> dict[str, float | None]:
        out: dict[str, float | None] = {}
        for key in score_keys():
            xs = [float(v) for s in scores if isinstance(s.score.value, dict)
                  and isinstance(v := s.score.value.get(key), int | float)]
            out[key] = sum(xs) / len(xs) if xs else None
        out["degenerate"] = 1.0 if task_flags(out, [s.score.metadata or {} for s in scores]) else 0.0
        return out

    return compute


@scorer(metrics=[user_mean()])
def memory_score() -> Any:
    """The user's per-period means of overall, upper bound, random and memory score, from ``metrics.json``."""

    async def score(state: TaskState, target: Target) -> Score:
        user = str(state.metadata["user"])
        metrics = json.loads(RunDir(Path(state.metadata["rundir"])).metrics.read_text(encoding="utf-8"))
        cells = (metrics.get("per_user") or {}).get(user) or {}
        value: dict[str, float | None] = {}
        for key in score_keys():
            xs = [c[key] for c in cells.values() if c.get(key) is not None]
            value[key] = sum(xs) / len(xs) if xs else None
        complete = bool(metrics.get("complete"))
        overall = metrics.get("overall") or {}
        flags = list(overall.get("flags") or [])
        sim = metrics.get("simulator") or {}
        degenerate = f"DEGENERATE ({'; '.join(flags)}): the memory score means little; " if flags else ""
        return Score(value=value, answer=None,  # type: ignore[arg-type]
                     explanation=f"{degenerate}{len(cells)} periods evaluated{'' if complete else ' (incomplete)'}; "
                                 f"run directory {state.metadata['rundir']}",
                     metadata={"complete": complete, "failures": state.metadata.get("failures", 0), "flags": flags,
                               "undefined_cells": overall.get("undefined_memory_cells") or 0,
                               "total_cells": (overall.get("memory_cells") or {}).get("total") or 0,
                               "simulator_turns": sim.get("turns") or 0,
                               "simulator_degenerate": sim.get("degenerate") or 0})

    return score


def _family_units(env_path: Path) -> Any:
    """The engine contract of the environment's family, or None for the statetrack family."""
    return getattr(family_for_env(env_path), "units", None)


@solver
def amemgym_unit(family: str, agent: str, config: str | None, out: str) -> Any:
    """Play one unit (the sample's ``unit``) through the engine, every role of the agent on the eval model.
    ``config`` is the preset or config file (see :func:`_config_ref`)."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        cfg = load_config(config)
        backend = InspectBackend(get_model())
        llm = LLMClient(cfg.llm, backends={"agent": backend, "memory": backend})
        unit_dir = Path(out) / str(state.metadata["unit"])
        try:
            await play_file(get_family(family).units, Path(state.metadata["path"]), agent,  # type: ignore[attr-defined]
                            unit_dir, llm, cfg)
        finally:
            await llm.aclose()
        state.metadata["unit_dir"] = str(unit_dir)
        state.output.completion = f"amemgym {family} unit {state.metadata['unit']}: {unit_dir}"
        state.completed = True
        return state

    return solve


@metric
def unit_mean(keys: list[str]) -> Any:
    """Mean of each of ``keys`` over the units where it is defined (as ``amemgym run`` averages units)."""

    def compute(scores: list[SampleScore]) -> dict[str, float | None]:
        out: dict[str, float | None] = {}
        for key in keys:
            xs = [float(v) for s in scores if isinstance(s.score.value, dict)
                  and isinstance(v := s.score.value.get(key), int | float)]
            out[key] = sum(xs) / len(xs) if xs else None
        return out

    return compute


def unit_score(family: str) -> Any:
    """The scorer of a unit family: its registered unit metrics, read from the record the engine wrote."""
    keys = [m.name for m in unit_metrics(family)]

    @scorer(metrics=[unit_mean(keys)], name=f"{family}_unit_metrics")
    def unit_metrics_scorer() -> Any:
        async def score(state: TaskState, target: Target) -> Score:
            record = UnitRunDir(Path(state.metadata["unit_dir"])).record(".") or {}
            value = {m.name: m.fn(record) for m in unit_metrics(family)}
            return Score(value=value, answer=None,  # type: ignore[arg-type]
                         explanation=f"{family} unit {state.metadata['unit']}; record in {state.metadata['unit_dir']}",
                         metadata={"group": record.get("group")})

        return score

    return unit_metrics_scorer()


def _config_ref(config: str | None) -> str | None:
    """The preset name or config file the solvers load their settings from, checked now so that a bad one fails
    when the task is created. Inspect records solver arguments in its logs, so the solvers get this reference
    and never the settings themselves, which may hold a base URL with a key in its query string."""
    load_config(config)
    return str(Path(config).resolve()) if config and Path(config).is_file() else config


def _unit_task(units: Any, env_path: Path, agent: str, config: str | None, out: str | None,
               limit: int | None) -> Task:
    """One sample per unit of a unit family's environment (see the module docstring)."""
    chosen = units.units(env_path, limit)
    out_dir = Path(out or tempfile.mkdtemp(prefix="amemgym-inspect-")).resolve()
    dataset = MemoryDataset([Sample(input=f"{units.name} {u.label}", id=u.id if u.id != "." else u.label,
                                    metadata={"unit": u.id, "path": str(u.path.resolve())}) for u in chosen],
                            name=f"amemgym:{env_path.name}")
    return Task(dataset=dataset, solver=amemgym_unit(units.name, agent, _config_ref(config), str(out_dir)),
                scorer=unit_score(units.name), name="amemgym_memory")


@task
def amemgym_memory(env: str | None = None, agent: str = "native", config: str | None = None,
                   out: str | None = None, limit_users: int | None = None) -> Task:
    """The memory benchmark as an Inspect task: one sample per simulated user.

    Args:
        env: environment file (default: the bundled tiny environment).
        agent: the memory agent (a name such as ``awe``, a ``module:factory`` plug-in or an agent file).
        config: a preset or config file, as for ``amemgym run`` (default: the preset the environment was
            generated with, ``tiny`` for the bundled environment, else the defaults).
        out: where the per-user run directories go (default: a fresh temporary directory).
        limit_users: only the first N users (the first N units of a unit family's environment).
    """
    env_path = Path(env) if env else default_environment()
    units = _family_units(env_path)
    if units is not None:  # a family on the engine's unit contract: one sample per unit
        return _unit_task(units, env_path, agent, config if config or env else "tiny", out, limit_users)
    resolve_agent(agent)  # a bad name fails when the task is created, not in every sample
    environment = first_users(load_environment(env_path, limit=limit_users), limit_users)
    # As ``amemgym run``: the preset the environment was generated with, unless ``config`` names another.
    config = _config_ref(config or generated_with(environment) or (None if env else "tiny"))
    if len({u.id for u in environment.users}) != len(environment.users):
        raise ConfigError(f"{env_path}: user ids repeat; each sample needs its own")
    out_dir = out or tempfile.mkdtemp(prefix="amemgym-inspect-")
    dataset = MemoryDataset([Sample(input=f"Simulated user {u.id}", id=u.id, metadata={"user": u.id})
                             for u in environment.users], name=f"amemgym:{env_path.name}")
    return Task(dataset=dataset, solver=amemgym_episode(str(env_path.resolve()), agent, config,
                                                        str(Path(out_dir).resolve())),
                scorer=memory_score(), name="amemgym_memory")
