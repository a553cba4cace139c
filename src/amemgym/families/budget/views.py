"""Fact views: the one interface gold answers and scripted strategies read values through.

A view maps (entity, key) to a value, where key is an attribute, ``category``, ``rel:<relation>``, or
``<attribute>@old`` (the value first reported, for revised facts). The final world is one view; what a
scripted strategy holds in memory is another, so both answer questions with the same solver.
"""

from __future__ import annotations

from collections.abc import Iterable

from .model import Change, EntityRecord, Value


class Missing(Exception):
    """A fact the question needs is not in the view."""


class FactView:
    """Facts keyed by (entity, key), plus the entity names the view knows; records what was read."""

    def __init__(self, facts: dict[tuple[str, str], Value], names: Iterable[str]) -> None:
        self.facts = facts
        self._names = list(dict.fromkeys(names))
        self.accessed: set[tuple[str, str]] = set()

    def names(self) -> list[str]:
        """Entity names in the view, in first-seen order."""
        return list(self._names)

    def get(self, entity: str, key: str) -> Value:
        """The value at (entity, key).

        Raises:
            Missing: when the view has no such fact.
        """
        self.accessed.add((entity, key))
        try:
            return self.facts[(entity, key)]
        except KeyError:
            raise Missing(f"{entity}|{key}") from None

    def number(self, entity: str, key: str) -> float:
        """A numeric fact."""
        v = self.get(entity, key)
        if isinstance(v, list | str):
            raise Missing(f"{entity}|{key} is not a number")
        return float(v)

    def targets(self, entity: str, relation: str) -> list[str]:
        """Relation targets of ``entity``."""
        v = self.get(entity, f"rel:{relation}")
        if not isinstance(v, list):
            raise Missing(f"{entity}|rel:{relation}")
        return [str(x) for x in v]


def final_view(entities: list[EntityRecord], changes: list[Change]) -> FactView:
    """The world after every change: current values, with the first-reported value kept as ``attr@old``."""
    facts: dict[tuple[str, str], Value] = {}
    for e in entities:
        facts[(e.name, "category")] = e.category
        for k, v in e.attrs.items():
            facts[(e.name, k)] = v
        for r, ts in e.relations.items():
            facts[(e.name, f"rel:{r}")] = list(ts)  # type: ignore[arg-type]
    for c in changes:
        facts.setdefault((c.entity, f"{c.attr}@old"), c.old)
        facts[(c.entity, c.attr)] = c.new
    return FactView(facts, [e.name for e in entities])
