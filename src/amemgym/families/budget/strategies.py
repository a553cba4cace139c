"""Scripted strategies that need no model, and the attacks a sound benchmark must defeat.

Each strategy plays the whole stream against a real :class:`BudgetStore` (so the budget, the per-note cap
and the correction rule apply to it exactly as to an agent) and answers every question. Storing strategies
answer from what they stored, through the same solvers that compute gold answers.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from ...seeding import derive_seed
from .domain import DomainTemplate
from .model import Episode, Fact, Question
from .solve import solve
from .store import BudgetStore
from .views import FactView, Missing
from .world import render_date, render_number

REFUSAL = "I don't know: that is not in my memory."
_LINE = re.compile(r"^(.+?)\|([A-Za-z0-9_:@]+)=(.+)$")

#: The original benchmark's nine scripted strategies (as amemgym words them).
STRATEGIES = ("perfect", "store_greedy", "store_random_full", "store_random_half", "store_prioritised",
              "store_ignore_corrections", "ignore_contradictions", "template_expert", "guess_blind", "guess_smart",
              "always_abstain")
#: Attacks the original did not test; each must score nothing on the questions (or the axis) it targets.
ATTACKS = ("list_candidates", "fake_storage_blob", "distractor_answer", "names_plus_changes")


@dataclass
class StrategyRun:
    """A strategy's answers and the store it ended with."""

    name: str
    answers: dict[str, str]
    store: BudgetStore
    targets: set[str] | None = None


def fact_line(entity: str, key: str, value: object) -> str:
    """One stored fact, ``entity|key=json``."""
    return f"{entity}|{key}={json.dumps(value)}"


def parse_notes(notes: list[str]) -> FactView:
    """The facts a strategy can recover from its notes."""
    facts, names = _parse(tuple(notes))
    return FactView(dict(facts), names)  # type: ignore[arg-type]


@lru_cache(maxsize=64)
def _parse(notes: tuple[str, ...]) -> tuple[dict[tuple[str, str], object], list[str]]:
    facts: dict[tuple[str, str], object] = {}
    names: list[str] = []
    for note in notes:
        for line in note.splitlines():
            m = _LINE.match(line.strip())
            if not m:
                continue
            try:
                facts[(m.group(1), m.group(2))] = json.loads(m.group(3))
            except json.JSONDecodeError:
                continue
            names.append(m.group(1))
    return facts, names


def format_answer(answer_type: str, gold: object) -> str:
    """A solver's answer as reply text."""
    if answer_type == "refuse" or gold is None:
        return REFUSAL
    if answer_type == "date":
        return render_date(str(gold))
    if answer_type in ("int", "float"):
        return f"{gold}"
    return str(gold)


def answer_from_memory(q: Question, store: BudgetStore, domain: DomainTemplate) -> str:
    """Answer by solving over the parsed notes; refuse when a needed fact is missing."""
    view = parse_notes(list(store.notes.values()))
    try:
        answer_type, value = solve(q.kind, q.spec, view, domain)
    except Missing:
        return REFUSAL
    return format_answer(answer_type, value)


def _chunks(lines: list[str], cap: int) -> list[list[int]]:
    """Indices of ``lines`` grouped greedily into notes of at most ``cap`` characters (header included)."""
    out: list[list[int]] = []
    size = len(HEADER)
    for i, line in enumerate(lines):
        if out and out[-1] and size + len(line) + 1 <= cap:
            out[-1].append(i)
            size += len(line) + 1
        else:
            out.append([i])
            size = len(HEADER) + len(line) + 1
    return out


#: First line of every note the storing strategies write.
HEADER = "facts\n"


class _Packer:
    """Writes fact lines into as few notes as the per-note cap allows, remembering where each line went."""

    def __init__(self, store: BudgetStore) -> None:
        self.store = store
        self.where: dict[tuple[str, str], int] = {}
        self.lines: dict[tuple[str, str], str] = {}
        self.values: dict[tuple[str, str], object] = {}

    def write(self, lines: list[tuple[tuple[str, str], str, object]]) -> None:
        for group in _chunks([line for _, line, _ in lines], self.store.note_chars):
            self._flush([lines[i] for i in group])

    def _flush(self, chunk: list[tuple[tuple[str, str], str, object]]) -> None:
        text = HEADER + "".join(line + "\n" for _, line, _ in chunk)
        before = set(self.store.notes)
        result = self.store.write(text[: self.store.note_chars])
        if not result.ok:
            return
        (nid,) = set(self.store.notes) - before
        for key, line, value in chunk:
            self.where[key], self.lines[key], self.values[key] = nid, line, value

    def update(self, entity: str, attr: str, new: object) -> None:
        key = (entity, attr)
        if key not in self.where:
            return
        line = fact_line(entity, attr, new)
        if self.store.edit(self.where[key], f"\n{self.lines[key]}\n", f"\n{line}\n").ok:
            self.lines[key], self.values[key] = line, new


def _lines_for(facts: list[Fact], keep: Callable[[str, str], bool], olds: set[tuple[str, str]],
               first: bool) -> list[tuple[tuple[str, str], str, object]]:
    out: list[tuple[tuple[str, str], str, object]] = []
    for f in facts:
        if keep(f.entity, f.attr):
            out.append(((f.entity, f.attr), fact_line(f.entity, f.attr, f.value), f.value))
        if first and (f.entity, f.attr) in olds:
            old = (f.entity, f"{f.attr}@old")
            out.append((old, fact_line(*old, f.value), f.value))
    return out


def play_storing(episode: Episode, domain: DomainTemplate, store: BudgetStore, *,
                 keep: Callable[[str, str], bool], olds: set[tuple[str, str]], notices: bool, silent: bool,
                 entity_notes: bool = False, stop_at: int | None = None) -> dict[str, str]:
    """Play the stream: store kept facts as documents arrive, keep them current, answer from memory.

    A strategy sees what an agent sees. A correction notice names its fact (``notices``: apply it). A later
    document about a stored entity is compared with what was stored, and a differing value is a silent
    change (``silent``: apply it); nothing else marks one. ``entity_notes`` writes one note per entity
    (a record) instead of packing; ``stop_at`` caps the writes spent on documents (the rest is kept for
    edits).
    """
    packer = _Packer(store)
    answers: dict[str, str] = {}
    reported: set[tuple[str, str]] = set()
    for ev in episode.events:
        store.begin_event(ev.index, correction=ev.kind == "correction")
        if ev.kind in ("documents", "contradiction"):
            fresh: list[Fact] = []
            for f in ev.facts:
                key = (f.entity, f.attr)
                if key in packer.where:
                    if silent and packer.values[key] != f.value:
                        packer.update(f.entity, f.attr, f.value)
                elif keep(*key) or (key in olds and key not in reported):
                    fresh.append(f)
            groups = _group_by_entity(fresh) if entity_notes else [fresh]
            for facts in groups:
                if stop_at is not None and store.writes_used >= stop_at:
                    break
                lines = [ln for f in facts for ln in _lines_for([f], keep, olds, (f.entity, f.attr) not in reported)]
                if lines:
                    packer.write(lines if not entity_notes else _one_note(lines, store.note_chars))
            reported.update((f.entity, f.attr) for f in ev.facts)
        elif ev.kind == "correction" and notices and ev.change is not None:
            c = episode.changes[ev.change]
            packer.update(c.entity, c.attr, c.new)
        elif ev.kind == "question" and ev.question:
            q = episode.question(ev.question)
            answers[q.id] = answer_from_memory(q, store, domain)
    return answers


def _group_by_entity(facts: list[Fact]) -> list[list[Fact]]:
    groups: dict[str, list[Fact]] = {}
    for f in facts:
        groups.setdefault(f.entity, []).append(f)
    return list(groups.values())


def _one_note(lines: list[tuple[tuple[str, str], str, object]], cap: int) -> list[tuple[tuple[str, str], str, object]]:
    kept, size = [], len(HEADER)
    for item in lines:
        if size + len(item[1]) + 1 > cap:
            break
        kept.append(item)
        size += len(item[1]) + 1
    return kept


def coverage_writes(episode: Episode) -> int:
    """Writes that storing every fact the documents state would take, packed as the storing strategies pack.

    It needs no knowledge of the questions: whatever the plan asks, the facts it reads are among these.
    """
    lines: list[str] = []
    seen: set[tuple[str, str]] = set()
    for ev in episode.events:
        for f in ev.facts:
            if (f.entity, f.attr) not in seen:
                seen.add((f.entity, f.attr))
                lines.append(fact_line(f.entity, f.attr, f.value))
    return len(_chunks(lines, episode.note_chars))


def needed(episode: Episode) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """Facts the questions need: current values, and first-reported values (``attr@old``)."""
    cur, old = set(), set()
    for q in episode.questions:
        for e, k in q.needs:
            if k.endswith("@old"):
                old.add((e, k[:-4]))
            else:
                cur.add((e, k))
    return cur, old


def new_store(episode: Episode, budget: int | None = None) -> BudgetStore:
    """A store with the episode's budget and note cap."""
    return BudgetStore(budget=episode.tier.writes if budget is None else budget, note_chars=episode.note_chars)


def _guess(q: Question, episode: Episode, domain: DomainTemplate, rng: random.Random, smart: bool) -> str:
    """A no-memory guess: from the attribute's range (smart: its typical value), or a named entity."""
    attrs = [domain.attribute(a) for a in q.spec.attrs if not a.startswith("rel")]
    attr = attrs[-1] if attrs else None
    if q.answer_type == "name":
        pool = q.spec.entities or episode.entity_names
        return rng.choice(pool) if smart else pool[0]
    if q.answer_type == "int" and q.kind in ("multi_count", "relation_count"):
        return "2" if smart else "1"
    if q.answer_type == "text":
        return rng.choice(q.candidates) if smart and q.candidates else (q.candidates or ["none"])[0]
    if q.answer_type == "date" and attr is not None:
        return f"{(attr.min_year or 2000) + (attr.max_year or 2000) >> 1}-06-15"
    if attr is not None and attr.min is not None and attr.max is not None:
        lo, hi = float(attr.min), float(attr.max)
        x = (lo * hi) ** 0.5 if smart and lo > 0 else (lo + hi) / 2
        if q.kind == "aggregation":
            x *= len(q.spec.entities)
        if q.kind in ("ratio",):
            x = 1.0
        if q.kind in ("delta", "comparison", "temporal_trend"):
            x = 0.1 * x
        return render_number(attr, x)
    return "0"


def _template_keep(domain: DomainTemplate) -> Callable[[str, str], bool]:
    """What a player who knows the question templates (not the questions) keeps: everything a template can
    ask except dates, which only single-fact retrieval reads and which cost the most characters per answer."""
    dates = {a.key for a in domain.attributes if a.type == "date"}
    return lambda e, a: a not in dates


def run_strategy(name: str, episode: Episode, domain: DomainTemplate, seed: int = 0) -> StrategyRun:
    """Play strategy or attack ``name`` over the episode."""
    rng = random.Random(derive_seed("budget.strategy", name, episode.domain, episode.seed, seed))
    store = new_store(episode)
    cur, old = needed(episode)
    budget = episode.tier.writes
    # A tenth of the budget stays free for edits after silent contradictions.
    reserve = max(1, budget // 10)
    if name in ("perfect", "store_ignore_corrections", "ignore_contradictions"):
        answers = play_storing(episode, domain, store, keep=lambda e, a: (e, a) in cur, olds=old,
                               notices=name != "store_ignore_corrections", silent=name == "perfect")
        return StrategyRun(name, answers, store)
    if name in ("store_greedy", "store_random_full", "store_random_half"):
        n = len(episode.entity_names)
        share = {"store_greedy": 1.0, "store_random_full": (budget - reserve) / n,
                 "store_random_half": (budget - reserve) / (2 * n)}[name]
        chosen = set(episode.entity_names) if share >= 1 else {e for e in episode.entity_names if rng.random() < share}
        stop = budget - reserve if name != "store_random_half" else (budget - reserve) // 2
        answers = play_storing(episode, domain, store, keep=lambda e, a: e in chosen, olds=set(), notices=True,
                               silent=True, entity_notes=True, stop_at=stop)
        return StrategyRun(name, answers, store)
    if name in ("store_prioritised", "template_expert"):
        numeric = {a.key for a in domain.attributes if a.numeric} | {"category"}

        def prioritised(e: str, a: str) -> bool:
            return a in numeric or a.startswith("rel:")

        answers = play_storing(episode, domain, store, olds=set(), notices=True, silent=True,
                               keep=prioritised if name == "store_prioritised" else _template_keep(domain),
                               stop_at=budget - reserve)
        return StrategyRun(name, answers, store)
    if name in ("guess_blind", "guess_smart"):
        answers = {q.id: _guess(q, episode, domain, rng, name == "guess_smart") for q in episode.questions}
        return StrategyRun(name, answers, store)
    if name == "always_abstain":
        return StrategyRun(name, {q.id: REFUSAL for q in episode.questions}, store)
    if name in ATTACKS:
        return ATTACK_RUNNERS[name](episode, domain, store)
    raise KeyError(name)


def _all_values(episode: Episode, attr: str) -> list[object]:
    vals: list[object] = []
    for ev in episode.events:
        for f in ev.facts:
            if f.attr == attr:
                vals.append(f.value)
    for c in episode.changes:
        if c.attr == attr:
            vals.append(c.new)
    return vals


def _list_candidates(episode: Episode, domain: DomainTemplate, store: BudgetStore) -> StrategyRun:
    """Reply with every candidate the stream offered: all names, or every value of the attribute."""
    answers = {}
    for q in episode.questions:
        if q.answer_type == "name":
            answers[q.id] = ", ".join(episode.entity_names)
        elif q.answer_type == "text":
            answers[q.id] = ", ".join(q.candidates)
        else:
            attr = q.spec.attrs[-1] if q.spec.attrs else None
            vals = _all_values(episode, attr) if attr else []
            flat = [x for v in vals for x in (v if isinstance(v, list) else [v])]
            if not flat and q.answer_type == "int":
                flat = list(range(25))  # a count: every small number
            parts = [str(v) for v in flat] + ([str(q.gold)] if q.gold is not None else [])
            answers[q.id] = "; ".join(parts) or ", ".join(episode.entity_names)
    targets = {q.id for q in episode.questions if q.kind != "abstention"}
    return StrategyRun("list_candidates", answers, store, targets)


def _fake_blob(episode: Episode, domain: DomainTemplate, store: BudgetStore) -> StrategyRun:
    """Try to cheat the store: one giant blob, growth by edits, writes past the budget, then claim it all."""
    everything = "\n".join(ev.text for ev in episode.events if ev.kind == "documents")
    store.begin_event(0, correction=False)
    store.write(everything)  # over the cap: must be refused and refunded
    store.write("memory: every fact of every entity is stored and verified")
    for _ in range(episode.tier.writes + 3):  # past the budget: must be refused
        nid = max(store.notes) if store.notes else 0
        store.edit(nid, "verified", "verified " + everything[:400])
        store.write("memory blob continues: all facts verified")
    answers = {}
    for q in episode.questions:
        got = answer_from_memory(q, store, domain)
        answers[q.id] = got if got != REFUSAL else "All of it is in my stored blob."
    targets = {q.id for q in episode.questions}
    return StrategyRun("fake_storage_blob", answers, store, targets)


def _distractor(episode: Episode, domain: DomainTemplate, store: BudgetStore) -> StrategyRun:
    """Answer with the wrong number printed next to the asked fact, where there was one."""
    near: dict[tuple[str, str], int | float] = {}
    for ev in episode.events:
        for f in ev.facts:
            if f.distractor is not None:
                near[(f.entity, f.attr)] = f.distractor
    answers, targets = {}, set()
    for q in episode.questions:
        key = (q.spec.entities[0], q.spec.attrs[0]) if q.spec.entities and q.spec.attrs else None
        if q.kind in ("retrieval", "update") and key in near:
            answers[q.id] = render_number(domain.attribute(key[1]), near[key])  # type: ignore[index]
            targets.add(q.id)
        else:
            answers[q.id] = REFUSAL
    return StrategyRun("distractor_answer", answers, store, targets)


def _names_plus_changes(episode: Episode, domain: DomainTemplate, store: BudgetStore) -> StrategyRun:
    """Store entity names and nothing of the documents, then one note per correction notice with the new and
    the old value it states: the answers to update, delta and counterfactual questions on announced changes,
    without ever having stored the fact that changed."""
    names: list[str] = []
    answers: dict[str, str] = {}
    for ev in episode.events:
        store.begin_event(ev.index, correction=ev.kind == "correction")
        if ev.kind == "documents":
            fresh = [n for n in dict.fromkeys(f.entity for f in ev.facts) if n not in names]
            if fresh:
                names += fresh
                store.write(("names: " + ", ".join(fresh))[: store.note_chars])
        elif ev.kind == "correction" and ev.change is not None:
            c = episode.changes[ev.change]
            lines = [fact_line(c.entity, c.attr, c.new), fact_line(c.entity, c.attr + "@old", c.old)]
            store.write(HEADER + "".join(line + "\n" for line in lines))
        elif ev.kind == "question" and ev.question:
            q = episode.question(ev.question)
            answers[q.id] = answer_from_memory(q, store, domain)
    return StrategyRun("names_plus_changes", answers, store)


ATTACK_RUNNERS: dict[str, Callable[[Episode, DomainTemplate, BudgetStore], StrategyRun]] = {
    "list_candidates": _list_candidates, "fake_storage_blob": _fake_blob, "distractor_answer": _distractor,
    "names_plus_changes": _names_plus_changes,
}
