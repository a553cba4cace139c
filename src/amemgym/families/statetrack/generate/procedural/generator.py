"""The procedural generator: a whole environment from a content pack, with no LLM (docs/design.md).

Each user draws from two seeded random streams. The *structure* stream (seed and user index) decides
domains, value subsets, the timeline, questions and options; the *surface* stream (seed, salt and
user index) decides the persona, the phrasings, lead-ins, event titles and the id. So a different salt
gives held-out surface forms over the same ground-truth structure.
"""

from __future__ import annotations

import random
import uuid
from collections import Counter
from collections.abc import Sequence
from typing import Any

from .....config import EnvConfig
from .....errors import ConfigError, DataError
from ...data.io import with_protocol
from ...data.model import QA, Environment, Period, Session, StateUpdate, UserEnv
from ..personas import Persona, load_personas, to_user_profile
from . import compose
from .choices import build_choices
from .pack import Domain
from .packs import all_domains, pack_digests, pack_stats
from .plan import UserPlan, check_config, plan_user
from .timeline import PeriodPlan, evolve

GENERATOR = "procedural"


def generate_procedural(
    cfg: EnvConfig,
    *,
    seed: int | None = None,
    num_users: int | None = None,
    salt: int = 0,
    personas: list[Persona] | None = None,
    domains: Sequence[Domain] | None = None,
) -> tuple[Environment, dict[str, Any]]:
    """Generate an environment deterministically from the content pack.

    Args:
        cfg: sizes and dynamics (``num_periods``, ``num_questions``, ...).
        seed: the structure seed; default ``cfg.seed``.
        num_users: users to generate; default ``cfg.num_user_profiles``.
        salt: changes surface forms (persona, phrasings, event titles, ids) but not the structure.
        personas: the persona pool; default the pool shipped with amemgym.
        domains: the life domains to draw from, in order (see ``packs.select_domains``); default the
            built-in pack.

    Returns:
        The environment and a generation report (sizes, change histogram, domain usage, seed).

    Raises:
        ConfigError: if the content pack cannot satisfy ``cfg``.
        DataError: if the persona pool is empty or unusable.
    """
    seed = cfg.seed if seed is None else seed
    n_users = cfg.num_user_profiles if num_users is None else num_users
    if n_users < 1:
        raise ConfigError(f"num_users must be at least 1, got {n_users}")
    domains = all_domains() if domains is None else tuple(domains)
    pool = load_personas() if personas is None else list(personas)
    if not pool:
        raise DataError("the persona pool is empty")
    with_job = any(p.has_job for p in pool)
    check_config(cfg, domains, with_job=with_job)
    used: set[str] = set()
    users: list[UserEnv] = []
    plans: list[UserPlan] = []
    for i in range(n_users):
        structure = random.Random(f"amemgym.procedural/{seed}/{i}/structure")
        surface = random.Random(f"amemgym.procedural/{seed}/{salt}/{i}/surface")
        plan = plan_user(cfg, structure, domains, with_job=with_job)
        timeline = evolve(cfg, structure, plan)
        persona = _pick_persona(surface, pool, used, needs_job=any(d.needs_job for d in plan.domains))
        users.append(_assemble(cfg, seed, salt, structure, surface, plan, timeline, persona))
        plans.append(plan)
    env = Environment(users=users)
    return env, _report(cfg, seed, salt, env, plans, domains)


def _pick_persona(rng: random.Random, pool: list[Persona], used: set[str], *, needs_job: bool) -> Persona:
    # Reuse a persona only once every fitting one has been used, so users differ for as long as possible.
    fits = [p for p in pool if p.has_job or not needs_job]
    fresh = [p for p in fits if p.uuid not in used]
    if not fresh:
        used.difference_update(p.uuid for p in fits)
        fresh = fits
    persona = rng.choice(fresh)
    used.add(persona.uuid)
    return persona


def _assemble(
    cfg: EnvConfig,
    seed: int,
    salt: int,
    structure: random.Random,
    surface: random.Random,
    plan: UserPlan,
    timeline: tuple[PeriodPlan, ...],
    persona: Persona,
) -> UserEnv:
    domain_of: dict[str, Domain] = {uv.name: uv.domain for uv in plan.variables}
    phraser = compose.Phraser(surface, {d.name: d for d in plan.domains})
    first = persona.first_name
    periods = [_period(surface, phraser, domain_of, first, pp) for pp in timeline]
    values = {uv.name: uv.values for uv in plan.variables}
    states = [pp.state for pp in timeline]
    qas = [
        QA(
            query=uq.question.query,
            required_info=list(uq.variables),
            answer_choices=build_choices(structure, uq, values, states, cfg.min_state_variants),
        )
        for uq in plan.questions
    ]
    summary = compose.roleplay_summary(surface, first, persona.persona, persona.place)
    user = UserEnv(
        id=uuid.UUID(int=surface.getrandbits(128), version=4).hex,
        start_time=cfg.start_date,
        user_profile=to_user_profile(persona, summary),
        state_schema={name: list(vals) for name, vals in values.items()},
        periods=periods,
        qas=qas,
    )
    return with_protocol(
        user,
        generator=GENERATOR,
        seed=seed,
        salt=salt,
        config_name=cfg.name,
        num_rounds_init=cfg.num_rounds_init,
        num_rounds_update=cfg.num_rounds_update,
        packs=pack_digests(sorted(plan.domains, key=lambda d: d.name)),
    )


def _period(
    rng: random.Random, phraser: compose.Phraser, domain_of: dict[str, Domain], first: str, pp: PeriodPlan
) -> Period:
    sessions: list[Session] = []
    events: list[str] = []
    for group, when in zip(pp.sessions, pp.session_times, strict=True):
        dom = domain_of[group[0].variable]
        if pp.index == 0:
            query, event = phraser.initial_utterance(dom.name, group), None
        else:
            query = phraser.change_utterance(dom.name, group)
            event = compose.event_text(rng, dom, group)
            events.append(event)
        sessions.append(
            Session(
                event=event, exposed_states={c.variable: c.new for c in group}, query=query, session_time=when
            )
        )
    summary = (
        compose.initial_summary(first, pp.state)
        if pp.index == 0
        else compose.period_summary(first, pp.start, pp.end, len(pp.changes), events)
    )
    return Period(
        period_start=pp.start,
        period_end=pp.end,
        period_summary=summary,
        state=dict(pp.state),
        updates={c.variable: StateUpdate(old=c.old, new=c.new) for c in pp.changes},
        update_cnts=dict(pp.update_cnts),
        sessions=sessions,
    )


def _report(
    cfg: EnvConfig, seed: int, salt: int, env: Environment, plans: list[UserPlan], domains: tuple[Domain, ...]
) -> dict[str, Any]:
    changes = Counter(len(p.updates) for u in env.users for p in u.periods[1:])
    return {
        "generator": GENERATOR,
        "config": cfg.name,
        "seed": seed,
        "salt": salt,
        "users": len(env.users),
        "periods_per_user": cfg.num_periods + 1,
        "variables_per_user": [len(u.state_schema) for u in env.users],
        "questions_per_user": cfg.num_questions,
        "changes_per_period": {str(k): changes[k] for k in sorted(changes)},
        "sessions": sum(len(p.sessions) for u in env.users for p in u.periods),
        "domains": dict(sorted(Counter(d.name for plan in plans for d in plan.domains).items())),
        "questions": dict(sorted(Counter(q.question.key for plan in plans for q in plan.questions).items())),
        "pack": pack_stats(domains),
        "packs": pack_digests(domains),
    }
