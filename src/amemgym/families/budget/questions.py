"""Question generation: pick what each kind asks about, word it, and compute its gold from the final world.

Generators retry with fresh draws until a question has one clear answer (no ties near the top, no
ambiguous matches); each returns ``None`` when the world offers no such question, and the caller moves on.
"""

from __future__ import annotations

import itertools
import random
import statistics
from collections.abc import Callable
from dataclasses import dataclass

from .domain import DomainTemplate
from .model import Change, EntityRecord, Question, QuestionSpec
from .solve import REASONING_KINDS, STEP_WORDS, solve
from .views import FactView, Missing
from .world import render_number

#: Draws a generator tries before giving up on its kind.
TRIES = 40
#: Named entities in group questions (larger groups make guessing a name hopeless).
GROUP = 16
#: Fewest readings a series needs for a trend-label question (3 steps leave 1 guess in 8 too likely).
TREND_LABEL_READINGS = 5


@dataclass
class Context:
    """What generators may use: the final view, the records, the domain and the changes."""

    domain: DomainTemplate
    view: FactView
    entities: list[EntityRecord]
    changes: list[Change]
    absent: list[str]
    rng: random.Random

    def having(self, attr: str) -> list[str]:
        """Entities that have ``attr``."""
        return [e.name for e in self.entities if attr in e.attrs]

    def attrs_of(self, *types: str) -> list[str]:
        """Attribute keys of the given types."""
        return [a.key for a in self.domain.attributes if a.type in types]

    def value_attrs(self) -> list[str]:
        """Numeric attributes wide enough to be asked for a value (domain.Attribute.wide)."""
        return [a.key for a in self.domain.attributes if a.wide]

    def single_targets(self, relation: str) -> list[str]:
        """Entities with exactly one target for ``relation``."""
        return [e.name for e in self.entities if len(e.relations.get(relation, [])) == 1]


Spec = tuple[QuestionSpec, str]
Generator = Callable[[Context], Spec | None]


def _label(c: Context, attr: str) -> str:
    return c.domain.attribute(attr).label


def _names(names: list[str]) -> str:
    return ", ".join(names[:-1]) + f" and {names[-1]}"


def _group(c: Context, attr: str, k: int) -> list[str] | None:
    pool = c.having(attr)
    return c.rng.sample(pool, k) if len(pool) >= k else None


def _numeric_group(c: Context, k: int, check: Callable[[list[float]], bool]) -> tuple[str, list[str]] | None:
    for _ in range(TRIES):
        attr = c.rng.choice(c.value_attrs())
        group = _group(c, attr, k)
        if group and check([c.view.number(e, attr) for e in group]):
            return attr, group
    return None


def _separated(xs: list[float], highest: bool) -> bool:
    s = sorted(xs, reverse=highest)
    return s[0] != s[1] and abs(s[0] - s[1]) >= 0.05 * max(abs(s[0]), abs(s[1]), 1e-9)


def gen_synthesis(highest: bool) -> Generator:
    def gen(c: Context) -> Spec | None:
        got = _numeric_group(c, GROUP, lambda xs: _separated(xs, highest))
        if not got:
            return None
        attr, group = got
        word = "highest" if highest else "lowest"
        return (QuestionSpec(entities=group, attrs=[attr]),
                f"Among {_names(group)}, which {c.domain.noun} has the {word} {_label(c, attr)}?")
    return gen


def gen_aggregation(c: Context) -> Spec | None:
    k = c.rng.randint(3, 4)
    got = _numeric_group(c, k, lambda xs: True)
    if not got:
        return None
    attr, group = got
    return QuestionSpec(entities=group, attrs=[attr]), f"What is the combined {_label(c, attr)} of {_names(group)}?"


def gen_average(c: Context) -> Spec | None:
    k = c.rng.randint(3, 4)
    got = _numeric_group(c, k, lambda xs: True)
    if not got:
        return None
    attr, group = got
    return QuestionSpec(entities=group, attrs=[attr]), f"What is the average {_label(c, attr)} of {_names(group)}?"


def gen_cross_category(c: Context) -> Spec | None:
    """Two categories inside one named group, compared by their mean (never close to zero apart)."""
    for _ in range(TRIES):
        attr = c.rng.choice(c.value_attrs())
        group = _group(c, attr, GROUP)
        if not group:
            continue
        members: dict[str, list[float]] = {}
        for e in group:
            members.setdefault(str(c.view.get(e, "category")), []).append(c.view.number(e, attr))
        cats = sorted(k for k, xs in members.items() if len(xs) >= 2)
        if len(cats) < 2:
            continue
        a, b = c.rng.sample(cats, 2)
        ma, mb = statistics.fmean(members[a]), statistics.fmean(members[b])
        if abs(ma - mb) < 0.05 * max(abs(ma), abs(mb), 1e-9):
            continue
        return (QuestionSpec(entities=group, attrs=[attr], category=a, value=b),
                f"Among {_names(group)}, by how much does the average {_label(c, attr)} of the {a} "
                f"{c.domain.plural} exceed that of the {b} ones? Give a negative number if it is lower.")
    return None


def gen_comparison(c: Context) -> Spec | None:
    got = _numeric_group(c, 2, lambda xs: abs(xs[0] - xs[1]) > 0.05 * max(abs(xs[0]), abs(xs[1]), 1e-9))
    if not got:
        return None
    attr, (a, b) = got
    if c.view.number(a, attr) < c.view.number(b, attr):
        a, b = b, a
    return (QuestionSpec(entities=[a, b], attrs=[attr]),
            f"How much higher is the {_label(c, attr)} of {a} than that of {b}?")


def gen_ratio(c: Context) -> Spec | None:
    got = _numeric_group(c, 2, lambda xs: min(xs) > 0)
    if not got:
        return None
    attr, (a, b) = got
    return (QuestionSpec(entities=[a, b], attrs=[attr]),
            f"What is the {_label(c, attr)} of {a} divided by that of {b}? Give the ratio as a decimal number.")


def gen_conditional(c: Context) -> Spec | None:
    for _ in range(TRIES):
        first, second = c.rng.sample(c.value_attrs(), 2)
        pool = [e for e in c.having(first) if (e, second) in c.view.facts]
        if len(pool) < 4:
            continue
        group = c.rng.sample(pool, 4)
        if _separated([c.view.number(e, first) for e in group], True):
            return (QuestionSpec(entities=group, attrs=[first, second]),
                    f"Among {_names(group)}, take the {c.domain.noun} with the highest {_label(c, first)}. "
                    f"What is its {_label(c, second)}?")
    return None


def gen_multi_hop(c: Context) -> Spec | None:
    for _ in range(TRIES):
        rel = c.rng.choice(c.domain.relations)
        starts = c.single_targets(rel.key)
        if not starts:
            continue
        start = c.rng.choice(starts)
        target = c.view.targets(start, rel.key)[0]
        attrs = [a for a in c.value_attrs() if (target, a) in c.view.facts]
        if attrs:
            attr = c.rng.choice(attrs)
            return (QuestionSpec(entities=[start], attrs=[attr], relations=[rel.key]),
                    f"{start} {rel.phrase} exactly one {c.domain.noun}. What is that {c.domain.noun}'s "
                    f"{_label(c, attr)}?")
    return None


def _clear_outlier(xs: list[float]) -> bool:
    med = statistics.median(xs)
    dev = sorted((abs(x - med) for x in xs), reverse=True)
    return dev[0] > 1.5 * dev[1]


def gen_outlier(c: Context) -> Spec | None:
    got = _numeric_group(c, GROUP, _clear_outlier)
    if not got:
        return None
    attr, group = got
    return (QuestionSpec(entities=group, attrs=[attr]),
            f"Among {_names(group)}, whose {_label(c, attr)} lies furthest from the group's median?")


def gen_temporal(extreme: bool) -> Generator:
    def gen(c: Context) -> Spec | None:
        attr = c.rng.choice(c.attrs_of("series"))
        pool = c.having(attr)
        if not pool:
            return None
        e = c.rng.choice(pool)
        label = _label(c, attr)
        if extreme:
            return QuestionSpec(entities=[e], attrs=[attr]), f"What was the highest reading in the {label} of {e}?"
        return (QuestionSpec(entities=[e], attrs=[attr]),
                f"How much did the {label} of {e} change from its first reading to its last? Give a negative "
                "number for a fall.")
    return gen


def gen_trend_label(c: Context) -> Spec | None:
    long = [a for a in c.attrs_of("series") if c.domain.attribute(a).length >= TREND_LABEL_READINGS]
    if not long:
        return None
    attr = c.rng.choice(long)
    pool = c.having(attr)
    if not pool:
        return None
    e = c.rng.choice(pool)
    return (QuestionSpec(entities=[e], attrs=[attr]),
            f"Going through the readings of the {_label(c, attr)} of {e} in order, did each one go up, down or "
            "stay flat against the one before? Answer with one word per step (up, down or flat), separated by "
            "commas.")


def gen_text_match(c: Context) -> Spec | None:
    for _ in range(TRIES):
        attr = c.rng.choice(c.attrs_of("text"))
        counts: dict[str, int] = {}
        for e in c.entities:
            if attr in e.attrs:
                counts[str(e.attrs[attr])] = counts.get(str(e.attrs[attr]), 0) + 1
        unique = sorted(v for v, n in counts.items() if n == 1)
        if unique:
            value = c.rng.choice(unique)
            return (QuestionSpec(attrs=[attr], value=value),
                    f"Which {c.domain.noun} has {value} as its {_label(c, attr)}?")
    return None


def gen_enum_filter(c: Context) -> Spec | None:
    for _ in range(TRIES):
        attr = c.rng.choice(c.attrs_of("enum"))
        group = _group(c, attr, GROUP)
        if not group:
            continue
        values = [str(c.view.get(e, attr)) for e in group]
        unique = sorted(v for v in set(values) if values.count(v) == 1)
        if unique:
            value = c.rng.choice(unique)
            return (QuestionSpec(entities=group, attrs=[attr], value=value),
                    f"Among {_names(group)}, which {c.domain.noun} has '{value}' as its {_label(c, attr)}?")
    return None


def _cuts(xs: list[float]) -> list[float]:
    """Thresholds between distinct values that sit clearly apart (4 %), so no reading error flips a count."""
    vals = sorted(set(xs))
    return [lo for lo, hi in zip(vals, vals[1:], strict=False) if hi - lo >= 0.04 * max(abs(lo), 1)]


def gen_multi_count(c: Context) -> Spec | None:
    """Two thresholds on two attributes over a named group; the count is drawn first (1-12) so no small answer
    dominates."""
    want = c.rng.randint(1, 12)
    numeric = c.attrs_of("int", "float")
    for _ in range(TRIES):
        first, second = c.rng.sample(numeric, 2)
        pool = [e for e in c.having(first) if (e, second) in c.view.facts]
        if len(pool) < GROUP:
            continue
        group = c.rng.sample(pool, GROUP)
        xs = {e: c.view.number(e, first) for e in group}
        ys = {e: c.view.number(e, second) for e in group}
        cuts = [(t1, t2) for t1 in _cuts(list(xs.values())) for t2 in _cuts(list(ys.values()))
                if sum(1 for e in group if xs[e] > t1 and ys[e] > t2) == want]
        if cuts:
            t1, t2 = c.rng.choice(cuts)
            a, b = c.domain.attribute(first), c.domain.attribute(second)
            return (QuestionSpec(entities=group, attrs=[first, second], threshold=t1, threshold2=t2),
                    f"Among {_names(group)}, how many have a {a.label} above {render_number(a, t1)} and also a "
                    f"{b.label} above {render_number(b, t2)}?")
    return None


def gen_relation_lookup(c: Context) -> Spec | None:
    rel = c.rng.choice(c.domain.relations)
    starts = c.single_targets(rel.key)
    if not starts:
        return None
    e = c.rng.choice(starts)
    return (QuestionSpec(entities=[e], relations=[rel.key]),
            f"Name the {c.domain.noun} that {e} {rel.phrase}.")


def gen_relation_hop(c: Context) -> Spec | None:
    for _ in range(TRIES):
        r1, r2 = c.rng.choice(c.domain.relations), c.rng.choice(c.domain.relations)
        starts = [e for e in c.single_targets(r1.key)
                  if c.view.targets(c.view.targets(e, r1.key)[0], r2.key) not in ([e], [])
                  and len(c.view.targets(c.view.targets(e, r1.key)[0], r2.key)) == 1]
        if starts:
            e = c.rng.choice(starts)
            return (QuestionSpec(entities=[e], relations=[r1.key, r2.key]),
                    f"Take the {c.domain.noun} that {e} {r1.phrase}. Name the {c.domain.noun} that it {r2.phrase}.")
    return None


def gen_relation_chain(c: Context) -> Spec | None:
    """Three hops along single targets, never revisiting an entity."""
    for _ in range(TRIES):
        rels = [c.rng.choice(c.domain.relations) for _ in range(3)]
        starts = c.single_targets(rels[0].key)
        if not starts:
            continue
        start = c.rng.choice(starts)
        path = [start]
        for rel in rels:
            targets = c.view.targets(path[-1], rel.key)
            if len(targets) != 1 or targets[0] in path:
                break
            path.append(targets[0])
        if len(path) == 4:
            r1, r2, r3 = rels
            return (QuestionSpec(entities=[start], relations=[r.key for r in rels]),
                    f"Start from {start}. Take the {c.domain.noun} that it {r1.phrase}, then the one that that "
                    f"{c.domain.noun} {r2.phrase}, then the one that this last {c.domain.noun} {r3.phrase}. "
                    f"Which {c.domain.noun} do you reach?")
    return None


def gen_relation_filter(c: Context) -> Spec | None:
    """The highest value among an entity's several relation targets."""
    for _ in range(TRIES):
        rel = c.rng.choice(c.domain.relations)
        starts = [e.name for e in c.entities if len(e.relations.get(rel.key, [])) >= 2]
        if not starts:
            continue
        start = c.rng.choice(starts)
        targets = c.view.targets(start, rel.key)
        attrs = [a for a in c.value_attrs() if all((t, a) in c.view.facts for t in targets)]
        if attrs:
            attr = c.rng.choice(attrs)
            return (QuestionSpec(entities=[start], attrs=[attr], relations=[rel.key]),
                    f"Among the {c.domain.plural} that {start} {rel.phrase}, what is the highest "
                    f"{_label(c, attr)}?")
    return None


def gen_relation_count(c: Context) -> Spec | None:
    """Targets summed over three entities, so the answer spreads over a wide range."""
    rel = c.rng.choice(c.domain.relations)
    group = [e.name for e in c.rng.sample(c.entities, 3)]
    return (QuestionSpec(entities=group, relations=[rel.key]),
            f"Counting each listing separately, how many {c.domain.plural} in total are named as ones that "
            f"{', '.join(group[:-1])} or {group[-1]} {rel.phrase}?")


REASONING_GENERATORS: dict[str, Generator] = {
    "synthesis_max": gen_synthesis(True), "synthesis_min": gen_synthesis(False), "aggregation": gen_aggregation,
    "average": gen_average, "comparison": gen_comparison, "ratio": gen_ratio, "conditional": gen_conditional,
    "cross_category": gen_cross_category, "multi_hop": gen_multi_hop, "outlier": gen_outlier,
    "temporal_trend": gen_temporal(False), "temporal_extreme": gen_temporal(True), "trend_label": gen_trend_label,
    "text_match": gen_text_match, "enum_filter": gen_enum_filter, "multi_count": gen_multi_count,
    "relation_lookup": gen_relation_lookup, "relation_hop": gen_relation_hop, "relation_chain": gen_relation_chain,
    "relation_filter": gen_relation_filter, "relation_count": gen_relation_count,
}
assert set(REASONING_GENERATORS) == set(REASONING_KINDS)


def retrieval_spec(c: Context, entity: str, attr: str, kind: str) -> Spec:
    """A retrieval-style question (retrieval, update, delta, counterfactual, abstention) about one fact."""
    label = _label(c, attr)
    text = {
        "retrieval": f"What is the {label} of {entity}?",
        "update": f"What is the current {label} of {entity}?",
        "delta": f"By how much did the {label} of {entity} change between its first report and its latest value? "
                 "Give a negative number for a decrease.",
        "counterfactual": f"Before it was revised, what {label} was first reported for {entity}?",
        "abstention": f"What is the {label} of {entity}?",
    }[kind]
    return QuestionSpec(entities=[entity], attrs=[attr]), text


def make_question(c: Context, qid: str, kind: str, spec: QuestionSpec, text: str) -> Question:
    """Word-and-spec to a full question: gold from the final view, the facts it needs, text candidates."""
    recorder = FactView(c.view.facts, c.view.names())
    answer_type, gold = solve(kind, spec, recorder, c.domain)
    if kind == "abstention":
        needs: list[tuple[str, str]] = []
    elif kind == "text_match":
        # Matching needs only the one holder of the value; scanning every entity is how a solver finds it.
        needs = [(str(gold), spec.attrs[0])]
    else:
        needs = sorted(k for k in recorder.accessed if k in c.view.facts)
    candidates: list[str] = []
    if kind == "trend_label":
        steps = c.domain.attribute(spec.attrs[0]).length - 1
        candidates = sorted(", ".join(p) for p in itertools.product(STEP_WORDS, repeat=steps))
    elif answer_type == "text":
        attr = c.domain.attribute(spec.attrs[-1] if kind == "conditional" else spec.attrs[0])
        candidates = sorted({str(e.attrs[attr.key]) for e in c.entities if attr.key in e.attrs} | set(attr.values))
    return Question(id=qid, kind=kind, text=text, answer_type=answer_type, gold=gold, spec=spec, needs=needs,
                    candidates=candidates)


def reasoning_question(c: Context, qid: str, kind: str, seen: set[str]) -> Question | None:
    """A reasoning question of ``kind`` not already asked, or None."""
    for _ in range(4):
        got = REASONING_GENERATORS[kind](c)
        if got is None:
            return None
        spec, text = got
        if text in seen:
            continue
        try:
            return make_question(c, qid, kind, spec, text)
        except Missing:
            continue
    return None
