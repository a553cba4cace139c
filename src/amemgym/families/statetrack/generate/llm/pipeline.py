"""Orchestration: users concurrently, stages in order, per-stage checkpoints, the generation report.

Each user's stages are checkpointed under ``<out>/work/<user_id>/<stage>.json`` with their usage and
acceptance counters, so an interrupted run resumes at the stage it was in and the report still covers
the whole generation. A user that fails is reported with its step and reason; it is retried from its
last checkpoint on the next run (with a response cache, a deterministic failure replays at no cost).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from .....concurrency import gather_or_cancel
from .....config import EnvConfig
from .....errors import AMemGymError, ConfigError, DataError
from .....llm import LLMClient
from .....llm.redact import redact, redact_obj
from .....storage import atomic_write_json
from ...data import Environment, UserEnv, save_environment
from ...data.checks import check_environment
from ..personas import Persona, load_personas, sample_personas
from .answers import run_answers
from .assemble import assemble_user
from .base import (
    ROLE,
    STAGES,
    CallFailure,
    GenContext,
    Limits,
    Stats,
    StepFailure,
    derive_seed,
    merge_stats,
    stats_from_dict,
)
from .evolution import run_evolution
from .initial_state import run_initial_state
from .profile import run_profile
from .questions import run_questions
from .records import (
    STAGE_RECORDS,
    AnswersOut,
    AssembleOut,
    ProfileOut,
    SchemaOut,
    UtterancesOut,
)
from .report import build_report
from .schema import run_schema
from .utterances import run_utterances

#: Called as ``progress(user_id, stage, status)`` with status ``start``, ``done``, ``resumed`` or ``failed``.
Progress = Callable[[str, str, str], None]


@dataclass(frozen=True)
class UserFailure:
    """A user that could not be generated: where and why."""

    user_id: str
    name: str
    step: str
    reason: str


@dataclass
class UserRun:
    """What happened to one user in this run."""

    user_id: str
    name: str
    stats: Stats = field(default_factory=dict)
    resumed: list[str] = field(default_factory=list)
    unverified: list[str] = field(default_factory=list)
    user: UserEnv | None = None
    failure: UserFailure | None = None


@dataclass
class GenerationResult:
    """The outcome of :func:`generate_llm`.

    Attributes:
        environment: the users that succeeded, in the seeded order (None if none did).
        report: the generation report as written to ``generation_report.json``.
        failed: the users that failed, with step and reason.
        data_path: where ``data.json`` was written (None if no user succeeded).
        report_path: where the report was written.
    """

    environment: Environment | None
    report: dict[str, Any]
    failed: list[UserFailure]
    data_path: Path | None
    report_path: Path

    @property
    def ok(self) -> bool:
        """True when every requested user was generated."""
        return not self.failed


class GenerationError(AMemGymError):
    """Some users could not be generated and partial output was not allowed; ``result`` has the details."""

    def __init__(self, result: GenerationResult) -> None:
        first = result.failed[0]
        super().__init__(
            f"{len(result.failed)} of {result.report['users_requested']} users failed (first: {first.user_id} at "
            f"{first.step}: {first.reason}); see {result.report_path}"
        )
        self.result = result


def _fingerprint(cfg: EnvConfig, seed: int, limits: Limits) -> dict[str, Any]:
    # The number of users does not change any one user's data, so a rerun may ask for more or fewer.
    env = cfg.model_dump(exclude={"num_user_profiles"})
    return {"generator": "llm", "seed": seed, "config": env, "limits": asdict(limits)}


def _check_manifest(work: Path, fingerprint: dict[str, Any]) -> None:
    path = work / "manifest.json"
    if path.exists():
        try:
            old = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise DataError(f"{path}: unreadable generation manifest: {exc}") from None
        if old != fingerprint:
            diff = sorted(k for k in fingerprint if old.get(k) != fingerprint[k])
            raise ConfigError(
                f"{work.parent}: holds a generation with a different {', '.join(diff)}; "
                "use another output folder or delete its work/ folder"
            )
    else:
        atomic_write_json(path, fingerprint)


def _load_stage(path: Path, stage: str) -> tuple[BaseModel, Stats] | None:
    if not path.exists():
        return None
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        record = STAGE_RECORDS[stage].model_validate(raw["output"])
        return record, stats_from_dict(raw.get("stats", {}))
    except (OSError, json.JSONDecodeError, KeyError, TypeError, ValidationError) as exc:
        problem = exc.__class__.__name__
        raise DataError(f"{path}: unreadable checkpoint ({problem}); delete it to redo the stage") from None


async def _compute(
    stage: str, ctx: GenContext, persona: Persona, done: dict[str, Any], user_id: str, run_seed: int
) -> BaseModel:
    cfg = ctx.cfg
    months = cfg.num_periods * cfg.num_months_per_period
    if stage == "profile":
        return await run_profile(ctx, persona)
    profile = done["profile"].profile
    if stage == "questions":
        return await run_questions(ctx, profile, months)
    if stage == "schema":
        return await run_schema(ctx, profile, done["questions"])
    schema: SchemaOut = done["schema"]
    if stage == "initial_state":
        return await run_initial_state(ctx, profile, schema.state_schema, months)
    initial = done["initial_state"].state
    if stage == "evolution":
        return await run_evolution(ctx, profile, schema.state_schema, initial)
    periods = done["evolution"].periods
    if stage == "answers":
        states = [initial, *(p.state for p in periods)]
        return await run_answers(ctx, schema.questions, schema.state_schema, states)
    if stage == "utterances":
        return await run_utterances(ctx, profile, schema.state_schema, initial, periods)
    utterances: UtterancesOut = done["utterances"]
    qas: AnswersOut = done["answers"]
    user = assemble_user(ctx, user_id, profile, schema, initial, periods, qas.qas, utterances.periods, run_seed)
    return AssembleOut(user=user)


def _note(run: UserRun, done: dict[str, Any], stage: str) -> None:
    """Take the user's name and the stage's unverified items into ``run``."""
    profile = done.get("profile")
    if isinstance(profile, ProfileOut):
        run.name = profile.profile.name
    run.unverified += getattr(done[stage], "unverified", [])


async def run_user(
    llm: LLMClient, cfg: EnvConfig, persona: Persona, work: Path, run_seed: int, limits: Limits,
    progress: Progress | None = None,
) -> UserRun:
    """Generate one user stage by stage, loading the stages already checkpointed under ``work``."""
    user_id = str(persona.uuid)
    run = UserRun(user_id=user_id, name=str(getattr(persona, "name", "") or ""))
    user_seed = derive_seed(run_seed, user_id)
    done: dict[str, Any] = {}
    notify = progress or (lambda *_: None)
    for stage in STAGES:
        path = work / f"{stage}.json"
        loaded = _load_stage(path, stage)
        if loaded is not None:
            done[stage], stage_stats = loaded
            merge_stats(run.stats, stage_stats)
            run.resumed.append(stage)
            notify(user_id, stage, "resumed")
            _note(run, done, stage)
            continue
        ctx = GenContext(llm=llm, cfg=cfg, user_seed=user_seed, limits=limits)
        notify(user_id, stage, "start")
        try:
            record = await _compute(stage, ctx, persona, done, user_id, run_seed)
        except (StepFailure, CallFailure) as exc:
            run.failure = UserFailure(user_id, run.name, exc.step, redact(exc.reason))
        except AMemGymError as exc:
            run.failure = UserFailure(user_id, run.name, stage, redact(str(exc)))
        merge_stats(run.stats, ctx.stats)
        if run.failure is not None:
            notify(user_id, stage, "failed")
            return run
        atomic_write_json(path, {
            "stage": stage, "user_id": user_id,
            "output": record.model_dump(mode="json", by_alias=True),
            "stats": {k: v.to_dict() for k, v in sorted(ctx.stats.items())},
        })
        done[stage] = record
        notify(user_id, stage, "done")
        _note(run, done, stage)
    run.user = done["assemble"].user
    return run


async def generate_llm(
    cfg: EnvConfig,
    llm: LLMClient,
    out_dir: Path,
    *,
    num_users: int | None = None,
    seed: int | None = None,
    personas: list[Persona] | None = None,
    exclude_ids: Sequence[str] = (),
    allow_partial: bool = False,
    concurrency: int = 4,
    limits: Limits | None = None,
    progress: Progress | None = None,
) -> GenerationResult:
    """Generate an environment with the LLM pipeline (docs/design.md §3) into ``out_dir``.

    Writes ``data.json`` (the users that succeeded, in the seeded order), ``generation_report.json``, and
    per-user, per-stage checkpoints under ``work/``; a rerun into the same folder resumes.

    Args:
        cfg: sizes and dynamics of the environment.
        llm: the client; calls use its ``generator`` role.
        out_dir: the output folder.
        num_users: users to generate (default ``cfg.num_user_profiles``).
        seed: the run seed (default ``cfg.seed``); it picks the personas and derives every call's seed.
        personas: the persona pool (default: the shipped pool).
        exclude_ids: persona ids never to sample.
        allow_partial: return normally when some users fail (they are still listed in the report).
        concurrency: users generated at once (model calls are further bounded by the client).
        limits: retry bounds.
        progress: optional callback ``(user_id, stage, status)``.

    Raises:
        GenerationError: when some users failed and ``allow_partial`` is False (after writing the outputs).
        ConfigError: when ``out_dir`` holds a generation with another config, seed or limits.
    """
    run_seed = cfg.seed if seed is None else seed
    limits = limits or Limits()
    n = cfg.num_user_profiles if num_users is None else num_users
    if n < 1:
        raise ConfigError(f"num_users must be at least 1, got {n}")
    pool = load_personas() if personas is None else personas
    chosen = sample_personas(pool, n, run_seed, exclude_ids=tuple(exclude_ids))
    out_dir = Path(out_dir)
    work = out_dir / "work"
    _check_manifest(work, _fingerprint(cfg, run_seed, limits))
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(persona: Persona) -> UserRun:
        async with gate:
            return await run_user(llm, cfg, persona, work / str(persona.uuid), run_seed, limits, progress)

    runs = await gather_or_cancel(*(one(p) for p in chosen))
    users = [r.user for r in runs if r.user is not None]
    failed = [r.failure for r in runs if r.failure is not None]
    env = Environment(users=users) if users else None
    data_path: Path | None = None
    if env is not None:
        problems = check_environment(env)
        if problems:
            raise DataError(f"generated environment is inconsistent: {problems[0]}")
        data_path = out_dir / "data.json"
        save_environment(env, data_path)
    report = build_report(cfg, run_seed, limits, runs, llm.ledger.role(ROLE).to_dict(), data_path)
    report_path = out_dir / "generation_report.json"
    report = redact_obj(report)
    atomic_write_json(report_path, report)
    result = GenerationResult(env, report, failed, data_path, report_path)
    if failed and not allow_partial:
        raise GenerationError(result)
    return result
