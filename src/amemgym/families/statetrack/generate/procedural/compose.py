"""Surface text: opening utterances, event and period descriptions, the role-play summary.

Everything here draws from the *surface* random stream only, so a different salt rewords a user
without changing the structure (variables, dynamics, questions, options).
"""

from __future__ import annotations

import random

from .....textsim import plain
from .pack import Domain
from .timeline import Change

# Lead-ins turn a value's phrasing into news; none of them hints at any variable or value.
_CHANGE_LEADS = (
    "quick update since we last talked: {}",
    "something's changed on my end: {}",
    "a lot has shifted lately, and {}",
    "here's the latest with me: {}",
    "new situation: {}",
    "heads up, things are different from before: {}",
    "so, recent news: {}",
    "after the last few weeks, it's official: {}",
)
_CHANGE_TAILS = ("", "", "", ", which is quite a change from a few months ago", ", and that's new for me")
_OPENERS = ("", "", "Hi!", "Hey there.", "Hello, hoping you can help.", "Good evening.")
_CONNECTORS = ("Also, ", "On top of that, ", "And ", "Besides that, ", "Plus, ")
_SECOND_CHANGE = ("At the same time, ", "Also, ", "On top of that, ", "Related to that, ")
_STYLES = (
    "{first} tends to get straight to the point when asking for advice.",
    "{first} likes to give a bit of background before asking anything.",
    "{first} is friendly and a little chatty in conversation.",
    "{first} prefers concrete, practical suggestions over general tips.",
    "{first} asks follow-up questions until an answer feels usable.",
    "{first} writes in short messages and appreciates brief replies.",
    "{first} is polite, a bit reserved, and thinks out loud while typing.",
)


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


class Phraser:
    """Picks phrasings for a user, avoiding repeats of the same sentence while unused ones remain."""

    def __init__(self, rng: random.Random, domains: dict[str, Domain]) -> None:
        """Create a phraser over ``domains`` (by name) drawing from ``rng``."""
        self._rng = rng
        self._domains = domains
        self._used: dict[tuple[str, ...], set[int]] = {}

    def _fresh(self, key: tuple[str, ...], texts: tuple[str, ...]) -> str:
        used = self._used.setdefault(key, set())
        if len(used) >= len(texts):
            used.clear()
        i = self._rng.choice([i for i in range(len(texts)) if i not in used])
        used.add(i)
        return texts[i]

    def phrase(self, domain: str, variable: str, value: str) -> str:
        """A phrasing that implies ``value`` of ``variable``."""
        return self._fresh((variable, value), self._domains[domain].variable(variable).value(value).phrasings)

    def request(self, domain: str) -> str:
        """A closing request for help about ``domain``, varied across the user's sessions."""
        return self._fresh(("request", domain), self._domains[domain].requests)

    def initial_utterance(self, domain: str, changes: tuple[Change, ...]) -> str:
        """An opening message stating the initial values in ``changes`` and asking for help."""
        rng = self._rng
        parts = [rng.choice(_OPENERS)]
        for i, ch in enumerate(changes):
            text = self.phrase(domain, ch.variable, ch.new)
            parts.append(_cap(text) + "." if i == 0 else rng.choice(_CONNECTORS) + text + ".")
        parts.append(self.request(domain))
        return " ".join(p for p in parts if p)

    def change_utterance(self, domain: str, changes: tuple[Change, ...]) -> str:
        """An opening message that reports the new values in ``changes`` as news and asks for help."""
        rng = self._rng
        parts = []
        for i, ch in enumerate(changes):
            text = self.phrase(domain, ch.variable, ch.new)
            if i == 0:
                parts.append(_cap(rng.choice(_CHANGE_LEADS).format(text)) + rng.choice(_CHANGE_TAILS) + ".")
            else:
                parts.append(rng.choice(_SECOND_CHANGE) + text + ".")
        parts.append(self.request(domain))
        return " ".join(parts)


def event_text(rng: random.Random, domain: Domain, changes: tuple[Change, ...]) -> str:
    """A short description of the life event behind ``changes`` (metadata; not shown to the agent)."""
    what = "; ".join(f"{plain(c.variable)} went from {plain(c.old or '')} to {plain(c.new)}" for c in changes)
    return f"{_cap(rng.choice(domain.event_titles))} ({domain.label}): {what}."


def initial_summary(first_name: str, state: dict[str, str]) -> str:
    """The period-0 summary: every variable's initial value."""
    items = "; ".join(f"{plain(k)}: {plain(v)}" for k, v in state.items())
    return f"Where {first_name} stands at the start. {_cap(items)}."


def period_summary(first_name: str, start: str | None, end: str, n_changes: int, events: list[str]) -> str:
    """A later period's summary: its dates, how many variables changed, and the events behind them."""
    what = "one change" if n_changes == 1 else f"{n_changes} changes"
    return f"Between {start} and {end}, {first_name} went through {what}. " + " ".join(events)


def roleplay_summary(rng: random.Random, first_name: str, persona_text: str, place: str | None) -> str:
    """A concise role-play summary: the persona's own description, where they live, how they talk."""
    parts = [persona_text.strip()]
    if place:
        parts.append(f"{first_name} lives in {place}.")
    parts.append(rng.choice(_STYLES).format(first=first_name))
    return " ".join(p for p in parts if p)
