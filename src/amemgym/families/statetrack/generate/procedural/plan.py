"""Which domains, variables and questions a user gets (the structure that a salt never changes)."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from .....config import EnvConfig
from .....errors import ConfigError
from .pack import Domain, Question, Variable

MAX_VALUES = 4
MAX_QUESTION_VARIABLES = 3
MIN_DOMAINS = 2


@dataclass(frozen=True)
class UserVariable:
    """A pack variable as one user holds it: with that user's subset of values (pack order)."""

    domain: Domain
    variable: Variable
    values: tuple[str, ...]

    @property
    def name(self) -> str:
        """The variable's name."""
        return self.variable.name


@dataclass(frozen=True)
class UserQuestion:
    """A pack question as one user is asked it: over ``variables`` (a subset, in answer order)."""

    domain: Domain
    question: Question
    variables: tuple[str, ...]


@dataclass(frozen=True)
class UserPlan:
    """The structural choices for one user."""

    domains: tuple[Domain, ...]
    variables: tuple[UserVariable, ...]
    questions: tuple[UserQuestion, ...]


def variables_needed(cfg: EnvConfig) -> int:
    """How many variables a user needs so that every period can find enough variables to change.

    Each variable changes at most ``max_changes_per_state`` times, so ``num_periods`` periods of about
    ``num_changes_per_period`` changes need that many change slots, plus room for the n+1 periods and
    for a choice among variables late in the timeline.
    """
    slots = cfg.num_periods * cfg.num_changes_per_period * 1.1 / cfg.max_changes_per_state
    return max(math.ceil(slots) + 2, cfg.num_changes_per_period + 2)


def check_config(cfg: EnvConfig, domains: tuple[Domain, ...], *, with_job: bool = True) -> None:
    """Raise :class:`ConfigError` if the pack cannot satisfy ``cfg`` for a user.

    Args:
        cfg: the environment sizes.
        domains: the content pack.
        with_job: whether domains that assume a job may be used.
    """
    usable = [d for d in domains if with_job or not d.needs_job]
    if cfg.num_choices_per_state > MAX_VALUES:
        raise ConfigError(
            f"config {cfg.name}: num_choices_per_state={cfg.num_choices_per_state}, but the procedural "
            f"content pack has {MAX_VALUES} values per variable"
        )
    if cfg.num_states_per_question > MAX_QUESTION_VARIABLES:
        raise ConfigError(
            f"config {cfg.name}: num_states_per_question={cfg.num_states_per_question}, but procedural "
            f"questions depend on at most {MAX_QUESTION_VARIABLES} variables"
        )
    if cfg.min_state_variants > cfg.num_choices_per_state**cfg.num_states_per_question:
        raise ConfigError(
            f"config {cfg.name}: min_state_variants={cfg.min_state_variants} exceeds the "
            f"{cfg.num_choices_per_state}^{cfg.num_states_per_question} possible value combinations"
        )
    have_vars = sum(len(d.variables) for d in usable)
    have_questions = sum(len(d.questions) for d in usable)
    need_vars = variables_needed(cfg)
    if have_vars < need_vars or have_questions < cfg.num_questions:
        who = "" if with_job else " for a user without a job"
        raise ConfigError(
            f"config {cfg.name}: each user needs {need_vars} state variables (num_periods * "
            f"num_changes_per_period / max_changes_per_state, with slack) and {cfg.num_questions} questions, "
            f"but the procedural content pack offers {have_vars} variables and {have_questions} "
            f"questions{who}; "
            "lower num_periods or num_changes_per_period, raise max_changes_per_state, or ask fewer questions"
        )


def plan_user(cfg: EnvConfig, rng: random.Random, domains: tuple[Domain, ...], *, with_job: bool) -> UserPlan:
    """Pick a seeded mix of domains, the user's value subsets and the questions.

    Domains are added in a shuffled order until the user has enough variables for the dynamics and
    enough questions; questions are then chosen to cover as many variables as possible, and the
    schema is their variables plus, if the dynamics need more, other variables of those domains.

    Raises:
        ConfigError: if the pack cannot satisfy ``cfg``.
    """
    check_config(cfg, domains, with_job=with_job)
    order = [d for d in domains if with_job or not d.needs_job]
    rng.shuffle(order)
    need_vars = variables_needed(cfg)
    chosen: list[Domain] = []
    for dom in order:
        chosen.append(dom)
        n_vars = sum(len(d.variables) for d in chosen)
        n_questions = sum(len(d.questions) for d in chosen)
        if n_vars >= need_vars and n_questions >= cfg.num_questions and len(chosen) >= MIN_DOMAINS:
            break
    questions = _pick_questions(rng, chosen, cfg.num_questions, cfg.num_states_per_question)
    # As in the original data, the schema is first the variables that questions ask about; other
    # variables of the chosen domains join only when the dynamics need more of them.
    keep = {v for uq in questions for v in uq.variables}
    spare = [v.name for d in chosen for v in d.variables if v.name not in keep]
    rng.shuffle(spare)
    keep.update(spare[: max(0, need_vars - len(keep))])
    variables = tuple(
        UserVariable(d, v, _value_subset(rng, v, cfg.num_choices_per_state))
        for d in chosen
        for v in d.variables
        if v.name in keep
    )
    used = tuple(d for d in chosen if any(uv.domain is d for uv in variables))
    return UserPlan(used, variables, questions)


def _value_subset(rng: random.Random, variable: Variable, k: int) -> tuple[str, ...]:
    keep = sorted(rng.sample(range(len(variable.values)), k))
    return tuple(variable.values[i].name for i in keep)


def _pick_questions(
    rng: random.Random, domains: list[Domain], count: int, n_vars: int
) -> tuple[UserQuestion, ...]:
    pool = [(d, q) for d in domains for q in d.questions]
    rng.shuffle(pool)
    covered: set[str] = set()
    picked: list[UserQuestion] = []
    while len(picked) < count:
        best_score, best_i = -1, -1
        best_vars: tuple[str, ...] = ()
        for i, (_, q) in enumerate(pool):
            # Uncovered variables first, then a random order; the answer keeps the pack's order.
            ranked = sorted(q.variables, key=lambda v: (v in covered, rng.random()))
            subset = tuple(v for v in q.variables if v in ranked[:n_vars])
            score = sum(v not in covered for v in subset)
            if score > best_score:
                best_score, best_i, best_vars = score, i, subset
        dom, q = pool.pop(best_i)
        covered.update(best_vars)
        picked.append(UserQuestion(dom, q, best_vars))
    return tuple(picked)
