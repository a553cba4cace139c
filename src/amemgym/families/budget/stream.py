"""The stream's wording: entity documents, noise memos, correction notices and silent contradictions.

Every fact gets a sentence; some numeric sentences carry a second, wrong number nearby (a rival's figure,
an outdated estimate) that a careful reader must not store. Wording is drawn per sentence from small
template sets so documents do not share one shape.

A silent contradiction is a later document about an entity already documented, written exactly as any
document is (same header, same sentence templates, distractors included): one of its values differs from
what was first reported, and nothing says so. Re-reports that change nothing arrive too, so a second
document about an entity is no signal by itself; only comparing its content with what was stored is.
"""

from __future__ import annotations

import random

from .domain import Attribute, DomainTemplate
from .model import Change, EntityRecord, Fact
from .world import Value, render_number, render_value

#: Share of numeric sentences that carry a distractor number.
DISTRACTOR_SHARE = 0.3

FACT_TEMPLATES = (
    "{name}'s {label} is {value}.",
    "Records list the {label} of {name} at {value}.",
    "For {name}, the {label} stands at {value}.",
    "{name} reports its {label} as {value}.",
    "The filing gives {value} as the {label} of {name}.",
)
SERIES_TEMPLATES = (
    "The {label} of {name}, oldest reading first, ran {value}.",
    "Successive readings of {name}'s {label} were {value}.",
)
DISTRACTOR_TEMPLATES = (
    " A rival {noun} was quoted at {other} in the same survey.",
    " That is not the {other} printed in an outdated brochure.",
    " An early estimate of {other} turned out to be wrong.",
    " Analysts had forecast {other}, which did not hold.",
)
RELATION_TEMPLATE = "{name} {phrase} {targets}."
MEMOS = (
    "Facilities memo: the {n}th-floor kitchen closes at {h} pm on Friday for cleaning.",
    "Reminder: badge renewals are due within {n} days; about {m} staff have not renewed yet.",
    "Newsletter: the book club meets in room {n} and has read {m} novels this year.",
    "IT notice: {n} laptops will be patched overnight; expect a restart around {h} am.",
    "Travel desk: rail fares rise by {n} percent next month; {m} trips are already booked.",
    "Canteen survey: {n} people answered and {m} asked for more vegetarian dishes.",
)


def _distractor(attr: Attribute, value: float, rng: random.Random) -> int | float:
    """A wrong number well outside any answer tolerance of ``value``."""
    factor = rng.choice((rng.uniform(0.45, 0.8), rng.uniform(1.25, 2.2)))
    x = value * factor if value else rng.uniform(float(attr.min or 1), float(attr.max or 10))
    out: int | float = int(round(x)) if attr.type == "int" else round(x, attr.decimals)
    if abs(out - value) <= max(0.05 * abs(value), 1):
        out = value + max(abs(value) * 0.5, 2)
        out = int(round(out)) if attr.type == "int" else round(out, attr.decimals)
    return out


def fact_sentence(domain: DomainTemplate, name: str, attr: Attribute, value: Value, rng: random.Random,
                  distractor: int | float | None = None) -> str:
    """One sentence stating ``value``; with a distractor clause when ``distractor`` is given."""
    templates = SERIES_TEMPLATES if attr.type == "series" else FACT_TEMPLATES
    text = rng.choice(templates).format(name=name, label=attr.label, value=render_value(attr, value))
    if distractor is not None:
        text += rng.choice(DISTRACTOR_TEMPLATES).format(noun=domain.noun, other=render_number(attr, distractor))
    return text


def _far(x: float, y: float) -> bool:
    return abs(x - y) > max(0.05 * abs(y), 1)


def document(domain: DomainTemplate, entity: EntityRecord, rng: random.Random,
             avoid: dict[str, list[int | float]] | None = None) -> tuple[str, list[Fact]]:
    """An entity's document and the facts it states.

    ``avoid`` maps attributes to values a distractor must stay far from: the values the fact will be revised
    to (so the wrong number printed today cannot become the right answer tomorrow) and, in a re-report, the
    values it had before (so a distractor never quotes the old figure and gives a contradiction away).
    """
    avoid = avoid or {}
    sentences = [f"{entity.name} is a {entity.category} {domain.noun}."]
    facts = [Fact(entity=entity.name, attr="category", value=entity.category)]
    attrs = [a for a in domain.attributes if a.key in entity.attrs]
    rng.shuffle(attrs)
    for attr in attrs:
        value = entity.attrs[attr.key]
        distractor = None
        if attr.numeric and rng.random() < DISTRACTOR_SHARE:
            assert isinstance(value, int | float)
            distractor = _distractor(attr, float(value), rng)
            for _ in range(20):
                if all(_far(distractor, float(x)) for x in avoid.get(attr.key, ())):
                    break
                distractor = _distractor(attr, float(value), rng)
            else:
                distractor = None
        sentences.append(fact_sentence(domain, entity.name, attr, value, rng, distractor))
        facts.append(Fact(entity=entity.name, attr=attr.key, value=value, distractor=distractor))
    for rel in domain.relations:
        targets = entity.relations.get(rel.key, [])
        if targets:
            joined = targets[0] if len(targets) == 1 else ", ".join(targets[:-1]) + f" and {targets[-1]}"
            sentences.append(RELATION_TEMPLATE.format(name=entity.name, phrase=rel.phrase, targets=joined))
            facts.append(Fact(entity=entity.name, attr=f"rel:{rel.key}", value=list(targets)))
    return f"## {entity.name}\n" + " ".join(sentences), facts


def memo(rng: random.Random) -> str:
    """A noise memo: numbers that belong to no entity."""
    return rng.choice(MEMOS).format(n=rng.randint(2, 40), m=rng.randint(3, 400), h=rng.randint(1, 11))


def correction_notice(domain: DomainTemplate, change: Change) -> str:
    """An announced correction naming the old and the new value."""
    attr = domain.attribute(change.attr)
    return (f"Correction notice: the {attr.label} of {change.entity} was misreported as "
            f"{render_number(attr, change.old)}. The correct figure is {render_number(attr, change.new)}.")


def documents_text(domain: DomainTemplate, docs: list[str]) -> str:
    """The text of a documents event: a one-line header and the documents.

    The header says only how many documents follow, the same for a first batch and for a later re-report,
    so the event gives no hint whether any value in it differs from an earlier one.
    """
    what = domain.noun if len(docs) == 1 else domain.plural
    return f"{len(docs)} {what} document{'s' if len(docs) != 1 else ''}.\n\n" + "\n\n".join(docs)


def contradiction_text(domain: DomainTemplate, doc: str) -> str:
    """A silent contradiction's event text: exactly what any one-document event looks like."""
    return documents_text(domain, [doc])


#: How the agent is told the kind of each event. A silent contradiction is shown as the documents event it
#: looks like; only the data file (never shown to the agent) keeps the kind apart for scoring.
SHOWN_KIND = {"documents": "documents", "memo": "memo", "correction": "correction", "contradiction": "documents",
              "question": "question"}


def shown_kind(kind: str) -> str:
    """The event kind as the agent sees it."""
    return SHOWN_KIND[kind]


def changed_value(attr: Attribute, old: int | float, rng: random.Random) -> int | float:
    """A revised value 15-45 % away from ``old`` (never equal to it)."""
    sign = rng.choice((-1, 1))
    x = old * (1 + sign * rng.uniform(0.15, 0.45))
    new: int | float = int(round(x)) if attr.type == "int" else round(x, attr.decimals)
    if new == old or (attr.type == "int" and abs(new - old) < 1):
        new = old + rng.randint(2, 9) if attr.type == "int" else round(old + 1.0, attr.decimals)
    if attr.min is not None and new < 0 <= attr.min:
        new = old + abs(new - old)
    return new
