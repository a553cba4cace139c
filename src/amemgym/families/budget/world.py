"""Seeded worlds: entities of one domain with typed attribute values, relations, and the salt.

Values are drawn per domain from the template's ranges (log-uniform for wide ranges, so magnitudes look
plausible), then a non-zero salt perturbs every value so answers memorised from a public seed are useless
while the structure (names, which attributes exist, relations) stays the same.
"""

from __future__ import annotations

import datetime as dt
import math
import random
from dataclasses import dataclass, field

from ...seeding import derive_seed
from .domain import Attribute, DomainTemplate

Value = int | float | str | list[float] | list[str]

#: How many of the domain's attributes each entity leaves out (drawn per entity), so entities differ in shape.
MISSING_ATTRIBUTES = (1, 5)
#: Relation targets per entity and relation type; most have one so lookups have a single answer.
TARGET_COUNTS = (1, 1, 1, 2, 3)
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")


@dataclass
class Entity:
    """One entity: its name, category, attribute values and relation targets."""

    name: str
    category: str
    attrs: dict[str, Value] = field(default_factory=dict)
    relations: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class World:
    """The entities of one episode plus names that never appear (for abstention questions)."""

    domain: str
    entities: list[Entity]
    absent_names: list[str]

    def by_name(self) -> dict[str, Entity]:
        """Entities keyed by name."""
        return {e.name: e for e in self.entities}


def _draw_number(attr: Attribute, rng: random.Random) -> float:
    lo, hi = float(attr.min or 0), float(attr.max or 1)
    if attr.log_drawn:
        x = math.exp(rng.uniform(math.log(lo), math.log(hi)))
    else:
        x = rng.uniform(lo, hi)
    return x


def _round(attr: Attribute, x: float) -> int | float:
    if attr.type == "int" or (attr.type == "series" and attr.decimals == 0):
        return int(round(x))
    return round(x, attr.decimals)


def draw_value(attr: Attribute, rng: random.Random, pool: tuple[str, ...]) -> Value:
    """One plausible value of ``attr``."""
    if attr.type in ("int", "float"):
        return _round(attr, _draw_number(attr, rng))
    if attr.type == "text":
        return rng.choice(pool)
    if attr.type == "enum":
        return rng.choice(attr.values)
    if attr.type == "date":
        start = dt.date(int(attr.min_year or 2000), 1, 1).toordinal()
        end = dt.date(int(attr.max_year or 2001), 12, 28).toordinal()
        return dt.date.fromordinal(rng.randint(start, end)).isoformat()
    x = _draw_number(attr, rng)
    series: list[float] = []
    for _ in range(attr.length):
        series.append(float(_round(attr, min(max(x, float(attr.min or 0)), float(attr.max or 1)))))
        x *= 1 + rng.gauss(0, 0.15)
    return series


def perturb(attr: Attribute, value: Value, rng: random.Random, pool: tuple[str, ...]) -> Value:
    """The salted version of ``value``: numbers scaled by 0.8-1.25, categorical values redrawn half the time."""
    if attr.type in ("int", "float"):
        assert isinstance(value, int | float)
        return _round(attr, value * rng.uniform(0.8, 1.25))
    if attr.type == "series":
        assert isinstance(value, list)
        k = rng.uniform(0.8, 1.25)
        return [float(_round(attr, float(v) * k)) for v in value]
    if attr.type == "date":
        assert isinstance(value, str)
        return (dt.date.fromisoformat(value) + dt.timedelta(days=rng.randint(-400, 400))).isoformat()
    return draw_value(attr, rng, pool) if rng.random() < 0.5 else value


def entity_names(domain: DomainTemplate, count: int, rng: random.Random) -> list[str]:
    """``count`` distinct generated names."""
    combos = [f"{a} {b}" for a in domain.name_parts.first for b in domain.name_parts.second]
    if count > len(combos):
        raise ValueError(f"domain {domain.name} can name only {len(combos)} entities, {count} asked")
    return rng.sample(combos, count)


def build_world(domain: DomainTemplate, pools: dict[str, tuple[str, ...]], *, seed: int, entities: int,
                absent: int, salt: int = 0) -> World:
    """The world of one episode, fully determined by (domain, seed, entities, absent, salt)."""
    rng = random.Random(derive_seed("budget.world", domain.name, seed, entities))
    names = entity_names(domain, entities + absent, rng)
    present, missing = names[:entities], names[entities:]
    out: list[Entity] = []
    for name in present:
        drop = rng.randint(*MISSING_ATTRIBUTES)
        keys = [a.key for a in domain.attributes]
        dropped = set(rng.sample(keys, drop))
        ent = Entity(name=name, category=rng.choice(domain.categories))
        for attr in domain.attributes:
            pool = pools.get(attr.pool or "", ())
            value = draw_value(attr, rng, pool)
            if attr.key not in dropped:
                ent.attrs[attr.key] = value
        out.append(ent)
    for ent in out:
        others = [e.name for e in out if e.name != ent.name]
        for rel in domain.relations:
            ent.relations[rel.key] = sorted(rng.sample(others, min(rng.choice(TARGET_COUNTS), len(others))))
    if salt:
        for ent in out:
            srng = random.Random(derive_seed("budget.salt", salt, domain.name, seed, ent.name))
            for attr in domain.attributes:
                if attr.key in ent.attrs:
                    ent.attrs[attr.key] = perturb(attr, ent.attrs[attr.key], srng, pools.get(attr.pool or "", ()))
    return World(domain=domain.name, entities=out, absent_names=missing)


def render_number(attr: Attribute, value: float) -> str:
    """A number in the attribute's display format, e.g. ``$1,234.5M``."""
    body = f"{value:,.0f}" if attr.type == "int" or attr.decimals == 0 else f"{value:,.{attr.decimals}f}"
    sign = "-" if body.startswith("-") else ""
    return f"{sign}{attr.prefix}{body.lstrip('-')}{attr.suffix}"


def render_date(iso: str) -> str:
    """``2014-03-12`` as ``March 12, 2014``."""
    d = dt.date.fromisoformat(iso)
    return f"{MONTHS[d.month - 1]} {d.day}, {d.year}"


def render_value(attr: Attribute, value: Value) -> str:
    """A value as it appears in documents."""
    if attr.type in ("int", "float"):
        assert isinstance(value, int | float)
        return render_number(attr, value)
    if attr.type == "date":
        assert isinstance(value, str)
        return render_date(value)
    if attr.type == "series":
        assert isinstance(value, list)
        return ", ".join(render_number(attr, float(v)) for v in value)
    return str(value)
