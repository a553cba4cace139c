"""Machinery shared by the LLM pipeline stages.

Derived seeds, per-step usage and acceptance counters, and :func:`ask_json`: the structured call that,
when a reply breaks a rule, shows the model its own reply and the problem, and asks again (bounded).
"""

from __future__ import annotations

import asyncio
import hashlib
import random
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import asdict, dataclass, field, fields
from typing import Any, TypeVar

from .....config import EnvConfig
from .....errors import AMemGymError, LLMError, MalformedOutput
from .....llm import ChatResult, LLMClient
from .....prompts import render
from .formats import schema_problem

#: The checkpointed stages of one user, in order.
STAGES: tuple[str, ...] = (
    "profile", "questions", "schema", "initial_state", "evolution", "answers", "utterances", "assemble",
)

ROLE = "generator"

#: Temperature of a retry after a broken reply: at the role's low temperature a model repeats its mistake.
RETRY_TEMPERATURE = 0.7

T = TypeVar("T")


class StepFailure(AMemGymError):
    """A step of one user's generation failed for good (after its bounded retries).

    Attributes:
        step: the step that failed (e.g. ``"answers.reflection"``).
        reason: what went wrong, in one line.
        last: the last schema-valid reply that broke a rule, for callers that can repair it (else None).
    """

    def __init__(self, step: str, reason: str, last: Any = None) -> None:
        super().__init__(f"{step}: {reason}")
        self.step = step
        self.reason = reason
        self.last = last


class CallFailure(AMemGymError):
    """A step could not call the model at all (retries exhausted); unlike :class:`StepFailure`, no
    fallback applies: the user fails and a rerun retries it.

    Attributes:
        step: the step whose call failed.
        reason: what went wrong, in one line.
    """

    def __init__(self, step: str, reason: str) -> None:
        super().__init__(f"{step}: {reason}")
        self.step = step
        self.reason = reason


@dataclass(frozen=True)
class Limits:
    """Retry bounds of the pipeline.

    Attributes:
        attempts: tries of one structured call, the first included; later tries show the model its error.
        refinements: refinements of one answer (reflection) or one utterance (exposure check).
        json_attempts: samples per try when a reply is not JSON at all (handled by ``chat_json``).
        strict_checks: when True, an answer or utterance that still fails its reflection or exposure check
            after the refinements fails its user; when False (the default) it is kept, counted as failed in
            the check's pass rate and listed under the user's ``unverified`` items in the report.
    """

    attempts: int = 3
    refinements: int = 3
    json_attempts: int = 2
    strict_checks: bool = False


@dataclass
class StepStats:
    """Usage and acceptance of one step.

    A *unit* is one thing the step must produce (a question list, one period's changes, one answer that
    must pass reflection, ...): accepted on the first try, accepted after a retry or refinement, or failed.
    """

    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    units: int = 0
    first_try: int = 0
    after_retry: int = 0
    failed: int = 0

    def add_call(self, res: ChatResult) -> None:
        """Count one completed call."""
        self.calls += 1
        self.cache_hits += int(res.cached)
        self.prompt_tokens += res.prompt_tokens
        self.completion_tokens += res.completion_tokens

    def add_unit(self, outcome: str) -> None:
        """Count one unit whose outcome is ``first_try``, ``after_retry`` or ``failed``."""
        self.units += 1
        setattr(self, outcome, getattr(self, outcome) + 1)

    def merge(self, other: StepStats) -> None:
        """Add ``other``'s counters."""
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def to_dict(self) -> dict[str, Any]:
        """Counters plus the first-try and final acceptance rates (None when there were no units)."""
        d: dict[str, Any] = asdict(self)
        d["first_try_rate"] = round(self.first_try / self.units, 4) if self.units else None
        d["acceptance_rate"] = round((self.first_try + self.after_retry) / self.units, 4) if self.units else None
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> StepStats:
        """Rebuild from :meth:`to_dict` output."""
        return cls(**{f.name: int(d.get(f.name, 0)) for f in fields(cls)})


Stats = dict[str, StepStats]


def merge_stats(into: Stats, other: Stats) -> None:
    """Add every step of ``other`` into ``into``."""
    for step, s in other.items():
        into.setdefault(step, StepStats()).merge(s)


def stats_to_dict(stats: Stats) -> dict[str, dict[str, Any]]:
    """JSON-ready stats, steps sorted by name."""
    return {k: stats[k].to_dict() for k in sorted(stats)}


def stats_from_dict(d: dict[str, Any]) -> Stats:
    """Inverse of :func:`stats_to_dict`."""
    return {k: StepStats.from_dict(v) for k, v in d.items()}


def derive_seed(*parts: object) -> int:
    """A stable 31-bit seed from ``parts`` (``hash()`` of a str changes between processes)."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "little") % (2**31 - 1)


@dataclass
class GenContext:
    """What a stage needs: the client, the config, this user's seed, the bounds and its counters."""

    llm: LLMClient
    cfg: EnvConfig
    user_seed: int
    limits: Limits = Limits()
    stats: Stats = field(default_factory=dict)
    unverified: dict[tuple[int, ...], str] = field(default_factory=dict)

    def step(self, name: str) -> StepStats:
        """The counters of step ``name``."""
        return self.stats.setdefault(name, StepStats())

    def seed(self, *parts: object) -> int:
        """A seed for one call, derived from the user's seed and the call's identity."""
        return derive_seed(self.user_seed, *parts)

    def rng(self, *parts: object) -> random.Random:
        """A private RNG derived like :meth:`seed`."""
        return random.Random(self.seed(*parts))

    def give_up(self, step: str, key: tuple[int, ...], reason: str) -> None:
        """Record a check that never passed: fail the user (strict) or keep the item and list it.

        Raises:
            StepFailure: under ``strict_checks``.
        """
        self.step(step).add_unit("failed")
        self.keep_unverified(step, key, reason)

    def keep_unverified(self, step: str, key: tuple[int, ...], reason: str) -> None:
        """Like :meth:`give_up` for a unit already counted as failed."""
        if self.limits.strict_checks:
            raise StepFailure(step, reason)
        self.unverified[key] = reason

    def unverified_list(self) -> list[str]:
        """The kept-but-unverified items in a stable order (checks finish in any order)."""
        return [self.unverified[k] for k in sorted(self.unverified)]


# ---- the structured call ------------------------------------------------------------------------------
async def ask_json(
    ctx: GenContext,
    step: str,
    prompt: str,
    schema: dict[str, Any],
    check: Callable[[Any], str | None] | None,
    /,
    *,
    max_tokens: int,
    key: tuple[object, ...] = (),
    temperature: float | None = None,
    count_unit: bool = True,
    **variables: object,
) -> Any:
    """Ask for JSON matching ``schema`` that passes ``check``; on a violation show the error and ask again.

    Each try goes through ``chat_json`` (constrained decoding, a resample for non-JSON) with a seed derived
    from the user, ``step``, ``key`` and the try number, so a rerun over the same cache replays exactly.

    Args:
        ctx: the stage context (its counters record calls, tokens and the unit's outcome).
        step: the step name, used for counters, the request tag and seeds.
        prompt: the template to render with ``variables``.
        schema: the JSON schema of the reply.
        check: a semantic check returning a problem or None.
        max_tokens: completion budget of one try.
        key: what distinguishes this call from others of the same step (question index, period, ...).
        temperature: None for the role's default (low).
        count_unit: whether this call is a unit of ``step`` (False when the caller counts units itself).
        variables: the template's variables (the arguments before ``/`` are positional, so any name works).

    Raises:
        StepFailure: when every try broke a rule (``last`` holds the last reply that had the right shape).
        CallFailure: when the model could not be called.
    """
    stats = ctx.step(step)
    messages = [{"role": "user", "content": render(prompt, **variables)}]
    problem = ""
    last: Any = None
    for attempt in range(ctx.limits.attempts):
        try:
            value, res = await ctx.llm.chat_json(
                ROLE, messages, schema, check=_is_object, attempts=ctx.limits.json_attempts,
                temperature=temperature if attempt == 0 else max(temperature or 0.0, RETRY_TEMPERATURE),
                max_tokens=max_tokens, tag=f"gen.{step}",
                seed=ctx.seed(step, *key, attempt),
            )
        except MalformedOutput as exc:
            problem = str(exc)  # a broken try like any other: the next one samples afresh
            continue
        except LLMError as exc:
            if count_unit:
                stats.add_unit("failed")
            raise CallFailure(step, f"{_where(key)}{exc}") from None
        stats.add_call(res)
        shape = schema_problem(value, schema)
        problem = shape or (check(value) if check else None) or ""
        if not shape:
            last = value
        if not problem:
            if count_unit:
                stats.add_unit("first_try" if attempt == 0 else "after_retry")
            return value
        messages = [
            *messages,
            {"role": "assistant", "content": res.text},
            {"role": "user", "content": render("gen_retry", problem=problem)},
        ]
    if count_unit:
        stats.add_unit("failed")
    raise StepFailure(step, f"{_where(key)}{problem} (still wrong after {ctx.limits.attempts} tries)", last)


def _is_object(value: Any) -> str | None:
    return None if isinstance(value, dict) else "the reply must be a JSON object"


def _where(key: tuple[object, ...]) -> str:
    return f"[{'/'.join(map(str, key))}] " if key else ""


async def gather_in_order(aws: Iterable[Awaitable[T]]) -> list[T]:
    """Run ``aws`` concurrently and return their results in order.

    Raises:
        BaseException: the first failure in input order, so the reported reason does not depend on timing.
    """
    results = await asyncio.gather(*aws, return_exceptions=True)
    for r in results:
        if isinstance(r, BaseException):
            raise r
    return list(results)  # type: ignore[arg-type]
