"""The built-in content pack: one module per life domain, each exposing ``DOMAIN``."""

from __future__ import annotations

from functools import cache

from ..pack import Domain


@cache
def all_domains() -> tuple[Domain, ...]:
    """Every built-in domain, in a fixed order."""
    from . import (
        cooking,
        digital,
        family,
        finance,
        fitness,
        health,
        hobbies,
        housing,
        learning,
        social,
        travel,
        work,
    )

    modules = (
        cooking, fitness, work, travel, family, finance, hobbies, health, housing, learning, social, digital
    )
    return tuple(m.DOMAIN for m in modules)


def pack_stats(domains: tuple[Domain, ...] | None = None) -> dict[str, int]:
    """Sizes of a pack: domains, variables, values, phrasings, questions and answer clauses."""
    doms = all_domains() if domains is None else domains
    variables = [v for d in doms for v in d.variables]
    questions = [q for d in doms for q in d.questions]
    return {
        "domains": len(doms),
        "variables": len(variables),
        "values": sum(len(v.values) for v in variables),
        "phrasings": sum(len(x.phrasings) for v in variables for x in v.values),
        "questions": len(questions),
        "clauses": sum(len(c) for q in questions for c in q.clauses.values()),
    }
