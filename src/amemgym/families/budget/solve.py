"""Gold answers: one solver per question kind, reading facts through a view.

Gold answers come from the final world's view; scripted strategies call the same solvers on what they
stored, so a strategy is right exactly when it stored (and kept up to date) the facts a question needs.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable

from .domain import DomainTemplate
from .model import AnswerType, QuestionSpec
from .views import FactView, Missing

Answer = tuple[AnswerType, int | float | str | None]
Solver = Callable[[QuestionSpec, FactView, DomainTemplate], Answer]

#: Kinds scored on the breadth axis.
BREADTH_KINDS = ("retrieval",)
#: Kinds scored on the maintenance axis (they depend on corrections and contradictions).
MAINTENANCE_KINDS = ("update", "delta", "counterfactual")
#: Kinds scored on the reasoning axis.
REASONING_KINDS = ("synthesis_max", "synthesis_min", "aggregation", "average", "comparison", "ratio",
                   "conditional", "cross_category", "multi_hop", "outlier", "temporal_trend", "temporal_extreme",
                   "trend_label", "text_match", "enum_filter", "multi_count", "relation_lookup", "relation_hop",
                   "relation_chain", "relation_filter", "relation_count")
#: Words of a trend label, one per step between successive readings.
STEP_WORDS = ("up", "down", "flat")
ABSTENTION_KINDS = ("abstention",)
ALL_KINDS = BREADTH_KINDS + MAINTENANCE_KINDS + REASONING_KINDS + ABSTENTION_KINDS


def axis_of(kind: str) -> str:
    """The score axis a kind counts toward: breadth, maintenance, reasoning or abstention."""
    if kind in BREADTH_KINDS:
        return "breadth"
    if kind in MAINTENANCE_KINDS:
        return "maintenance"
    if kind in REASONING_KINDS:
        return "reasoning"
    if kind in ABSTENTION_KINDS:
        return "abstention"
    raise KeyError(kind)


def _number(domain: DomainTemplate, attr: str, x: float) -> Answer:
    a = domain.attribute(attr)
    if a.type == "int" or (a.type == "series" and a.decimals == 0):
        return "int", int(round(x))
    return "float", round(x, max(a.decimals, 2))


def _typed(domain: DomainTemplate, attr: str, v: object) -> Answer:
    a = domain.attribute(attr)
    if a.type in ("int", "float"):
        assert isinstance(v, int | float)
        return _number(domain, attr, float(v))
    if a.type == "date":
        return "date", str(v)
    if a.type in ("text", "enum"):
        return "text", str(v)
    raise Missing(f"{attr} has no single value")


def retrieval(s: QuestionSpec, v: FactView, d: DomainTemplate) -> Answer:
    """The current value of one attribute."""
    return _typed(d, s.attrs[0], v.get(s.entities[0], s.attrs[0]))


def counterfactual(s: QuestionSpec, v: FactView, d: DomainTemplate) -> Answer:
    """The value first reported, before its revision."""
    return _typed(d, s.attrs[0], v.get(s.entities[0], f"{s.attrs[0]}@old"))


def delta(s: QuestionSpec, v: FactView, d: DomainTemplate) -> Answer:
    """Current minus first-reported value."""
    e, a = s.entities[0], s.attrs[0]
    return _number(d, a, v.number(e, a) - v.number(e, f"{a}@old"))


def _extreme(s: QuestionSpec, v: FactView, highest: bool) -> str:
    values = {e: v.number(e, s.attrs[0]) for e in s.entities}
    pick = max if highest else min
    return pick(values, key=lambda e: values[e])


def synthesis_max(s: QuestionSpec, v: FactView, d: DomainTemplate) -> Answer:
    """The named entity with the highest value."""
    return "name", _extreme(s, v, True)


def synthesis_min(s: QuestionSpec, v: FactView, d: DomainTemplate) -> Answer:
    """The named entity with the lowest value."""
    return "name", _extreme(s, v, False)


def aggregation(s: QuestionSpec, v: FactView, d: DomainTemplate) -> Answer:
    """The sum over the named entities."""
    return _number(d, s.attrs[0], sum(v.number(e, s.attrs[0]) for e in s.entities))


def average(s: QuestionSpec, v: FactView, d: DomainTemplate) -> Answer:
    """The mean over the named entities (a float even for an integer attribute)."""
    return "float", round(statistics.fmean(v.number(e, s.attrs[0]) for e in s.entities), 2)


def cross_category(s: QuestionSpec, v: FactView, d: DomainTemplate) -> Answer:
    """Among the named entities: the mean of the spec's category minus the mean of the other category
    (``value``)."""
    a = s.attrs[0]
    groups: dict[str, list[float]] = {}
    for e in s.entities:
        groups.setdefault(str(v.get(e, "category")), []).append(v.number(e, a))
    first, second = groups.get(s.category or ""), groups.get(s.value or "")
    if not first or not second:
        raise Missing("a category has no member in the group")
    return "float", round(statistics.fmean(first) - statistics.fmean(second), 2)


def comparison(s: QuestionSpec, v: FactView, d: DomainTemplate) -> Answer:
    """First entity's value minus the second's."""
    a = s.attrs[0]
    return _number(d, a, v.number(s.entities[0], a) - v.number(s.entities[1], a))


def ratio(s: QuestionSpec, v: FactView, d: DomainTemplate) -> Answer:
    """First entity's value divided by the second's."""
    a = s.attrs[0]
    den = v.number(s.entities[1], a)
    if den == 0:
        raise Missing("ratio with a zero denominator")
    return "float", round(v.number(s.entities[0], a) / den, 4)


def conditional(s: QuestionSpec, v: FactView, d: DomainTemplate) -> Answer:
    """The second attribute of the entity that is highest on the first."""
    top = _extreme(s, v, True)
    return _typed(d, s.attrs[1], v.get(top, s.attrs[1]))


def multi_hop(s: QuestionSpec, v: FactView, d: DomainTemplate) -> Answer:
    """An attribute of the single relation target."""
    targets = v.targets(s.entities[0], s.relations[0])
    if len(targets) != 1:
        raise Missing("multi-hop needs exactly one target")
    return _typed(d, s.attrs[0], v.get(targets[0], s.attrs[0]))


def outlier(s: QuestionSpec, v: FactView, d: DomainTemplate) -> Answer:
    """The named entity furthest from the group's median."""
    values = {e: v.number(e, s.attrs[0]) for e in s.entities}
    med = statistics.median(values.values())
    return "name", max(values, key=lambda e: abs(values[e] - med))


def _series(s: QuestionSpec, v: FactView) -> list[float]:
    x = v.get(s.entities[0], s.attrs[0])
    if not isinstance(x, list) or not x:
        raise Missing("not a series")
    return [float(y) for y in x]


def temporal_trend(s: QuestionSpec, v: FactView, d: DomainTemplate) -> Answer:
    """Last reading minus first reading."""
    xs = _series(s, v)
    return _number(d, s.attrs[0], xs[-1] - xs[0])


def temporal_extreme(s: QuestionSpec, v: FactView, d: DomainTemplate) -> Answer:
    """The highest reading."""
    return _number(d, s.attrs[0], max(_series(s, v)))


def step_label(xs: list[float]) -> str:
    """``up``, ``down`` or ``flat`` for each step between successive readings, comma-separated."""
    return ", ".join(STEP_WORDS[0] if b > a else STEP_WORDS[1] if b < a else STEP_WORDS[2]
                     for a, b in zip(xs, xs[1:], strict=False))


def trend_label(s: QuestionSpec, v: FactView, d: DomainTemplate) -> Answer:
    """The direction of every step of a series, in order."""
    xs = _series(s, v)
    if len(xs) < 2:
        raise Missing("a trend needs two readings")
    return "text", step_label(xs)


def text_match(s: QuestionSpec, v: FactView, d: DomainTemplate) -> Answer:
    """The one entity (among all the view knows) whose text attribute equals the value."""
    hits = []
    for e in v.names():
        try:
            if v.get(e, s.attrs[0]) == s.value:
                hits.append(e)
        except Missing:
            continue
    if len(hits) != 1:
        raise Missing(f"{len(hits)} entities match")
    return "name", hits[0]


def enum_filter(s: QuestionSpec, v: FactView, d: DomainTemplate) -> Answer:
    """The one named entity whose enum attribute equals the value."""
    hits = [e for e in s.entities if v.get(e, s.attrs[0]) == s.value]
    if len(hits) != 1:
        raise Missing(f"{len(hits)} entities match")
    return "name", hits[0]


def multi_count(s: QuestionSpec, v: FactView, d: DomainTemplate) -> Answer:
    """How many named entities are above both thresholds (the first attribute's and the second's)."""
    if s.threshold is None or s.threshold2 is None or len(s.attrs) != 2:
        raise Missing("a multi-constraint count needs two attributes and two thresholds")
    n = sum(1 for e in s.entities if v.number(e, s.attrs[0]) > s.threshold and v.number(e, s.attrs[1]) > s.threshold2)
    return "int", n


def relation_lookup(s: QuestionSpec, v: FactView, d: DomainTemplate) -> Answer:
    """The single relation target."""
    targets = v.targets(s.entities[0], s.relations[0])
    if len(targets) != 1:
        raise Missing("lookup needs exactly one target")
    return "name", targets[0]


def relation_hop(s: QuestionSpec, v: FactView, d: DomainTemplate) -> Answer:
    """The target of the second relation, starting from the first relation's target."""
    first = v.targets(s.entities[0], s.relations[0])
    if len(first) != 1:
        raise Missing("hop needs exactly one first target")
    second = v.targets(first[0], s.relations[1])
    if len(second) != 1:
        raise Missing("hop needs exactly one second target")
    return "name", second[0]


def relation_chain(s: QuestionSpec, v: FactView, d: DomainTemplate) -> Answer:
    """Follow each relation in turn from the start; every step must have a single target."""
    at = s.entities[0]
    for rel in s.relations:
        targets = v.targets(at, rel)
        if len(targets) != 1:
            raise Missing("a chain step needs exactly one target")
        at = targets[0]
    return "name", at


def relation_filter(s: QuestionSpec, v: FactView, d: DomainTemplate) -> Answer:
    """The highest value of the attribute among the start's relation targets."""
    targets = v.targets(s.entities[0], s.relations[0])
    if len(targets) < 2:
        raise Missing("a filter needs several targets")
    return _number(d, s.attrs[0], max(v.number(t, s.attrs[0]) for t in targets))


def relation_count(s: QuestionSpec, v: FactView, d: DomainTemplate) -> Answer:
    """Relation targets summed over the named entities."""
    return "int", sum(len(v.targets(e, s.relations[0])) for e in s.entities)


def abstention(s: QuestionSpec, v: FactView, d: DomainTemplate) -> Answer:
    """Refuse: the entity never appeared. A view that somehow holds it would answer instead."""
    try:
        return retrieval(s, v, d)
    except Missing:
        return "refuse", None


SOLVERS: dict[str, Solver] = {
    "retrieval": retrieval, "update": retrieval, "counterfactual": counterfactual, "delta": delta,
    "synthesis_max": synthesis_max, "synthesis_min": synthesis_min, "aggregation": aggregation,
    "average": average, "comparison": comparison, "ratio": ratio, "conditional": conditional,
    "cross_category": cross_category, "multi_hop": multi_hop, "outlier": outlier,
    "temporal_trend": temporal_trend, "temporal_extreme": temporal_extreme, "trend_label": trend_label,
    "text_match": text_match, "enum_filter": enum_filter, "multi_count": multi_count,
    "relation_lookup": relation_lookup, "relation_hop": relation_hop, "relation_chain": relation_chain,
    "relation_filter": relation_filter, "relation_count": relation_count,
    "abstention": abstention,
}


def solve(kind: str, spec: QuestionSpec, view: FactView, domain: DomainTemplate) -> Answer:
    """The answer to a question of ``kind`` from the facts in ``view``.

    Raises:
        Missing: when the view lacks a fact the answer needs.
    """
    return SOLVERS[kind](spec, view, domain)
