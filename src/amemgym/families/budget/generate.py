"""Assemble one episode: world, changes, the event stream, questions and the reference write count.

The reference write count (efficiency is measured against it) knows nothing of the questions: it is the
writes that storing every fact the documents state would take, packed into notes of the cap, capped by the
budget (docs/budget.md, Scores).
"""

from __future__ import annotations

import json
import random

from ...seeding import derive_seed
from . import stream
from .domain import DomainTemplate, domain_names, load_domain, pools, resolve_domain, unpack
from .model import Change, DomainPack, EntityRecord, Episode, Event, Question
from .questions import Context, make_question, reasoning_question, retrieval_spec
from .solve import REASONING_KINDS
from .strategies import coverage_writes
from .stream import changed_value, correction_notice, document, documents_text, memo
from .tiers import ABSENT_NAMES, BATCH_SIZE, NOTE_CHARS, Tier, get_tier
from .views import final_view
from .world import build_world


def _quota(tier: Tier) -> tuple[int, int, int, int]:
    """Questions per group: abstention, retrieval, maintenance, reasoning."""
    q = tier.questions
    abstain = max(1, round(q * 0.08))
    retrieval = max(2, round(q * 0.2))
    maintenance = min(tier.corrections, max(2, round(q * 0.2)))
    return abstain, retrieval, maintenance, q - abstain - retrieval - maintenance


def _records(world_entities: list) -> list[EntityRecord]:
    return [EntityRecord(name=e.name, category=e.category, attrs=dict(e.attrs),
                         relations={k: list(v) for k, v in e.relations.items()}) for e in world_entities]


#: Reasoning kinds whose answer is one of at most ~16 options (a name from a listed group, a small count, a
#: trend label); together they take at most this share of an episode's questions (none in lite, one in
#: standard and multi, two in hard), so a one-in-sixteen guess cannot lift a guesser near its ceiling.
CHOICE_KINDS = frozenset({"synthesis_max", "synthesis_min", "outlier", "enum_filter", "multi_count", "trend_label"})
CHOICE_SHARE = 0.05
#: Fewest values a text attribute's pool needs for the attribute to be asked by plain retrieval.
RETRIEVABLE_POOL = 40
#: Share of changes that arrive silently (at least one per episode).
SILENT_SHARE = 0.4
#: Maintenance kinds, asked in pairs: each pair puts the kind on one silent and one announced change.
MAINTENANCE_PLAN = ("update", "delta", "counterfactual")


def _pick_changes(domain: DomainTemplate, records: list[EntityRecord], order: list[str], tier: Tier,
                  rng: random.Random) -> list[Change]:
    """The revised facts. Silent and announced changes alternate from the first (silent) until the silent
    share is used, so the maintenance questions asked in pairs fall on both kinds alike."""
    numeric = {a.key: a for a in domain.attributes if a.wide}
    by_name = {e.name: e for e in records}

    def clear(name: str, key: str) -> bool:
        # The smallest change (15 %) must span several display units, so a delta never sits at the checker's
        # tolerance (0.02 -> 0.03 would let "0" pass as the change).
        old = by_name[name].attrs[key]
        return isinstance(old, int | float) and abs(old) * 0.15 >= 5 * 10.0 ** -numeric[key].decimals

    pairs = [(n, k) for n in order for k in sorted(by_name[n].attrs) if k in numeric and clear(n, k)]
    chosen = rng.sample(pairs, tier.corrections)
    n_silent = max(1, round(tier.corrections * SILENT_SHARE))
    out = []
    for i, (name, key) in enumerate(chosen):
        old = by_name[name].attrs[key]
        assert isinstance(old, int | float)
        new = changed_value(domain.attribute(key), old, rng)
        silent = i % 2 == 0 and i // 2 < n_silent
        out.append(Change(entity=name, attr=key, old=old, new=new, kind="silent" if silent else "notice"))
    return out


def maintenance_kind(i: int) -> str:
    """The kind of the maintenance question on change ``i`` (changes alternate silent and announced)."""
    return MAINTENANCE_PLAN[(i // 2) % len(MAINTENANCE_PLAN)]


def build_episode(tier_name: str, domain_name: str, seed: int, salt: int = 0,
                  pack: DomainPack | None = None) -> Episode:
    """The episode of (tier, domain, seed, salt); the same inputs always give the same episode.

    A domain outside the built-in pack is ``pack`` (what an episode file carries of it), else looked up among
    the installed budget packs; the episode carries it.
    """
    tier = get_tier(tier_name)
    if pack is None and domain_name not in domain_names():
        pack = resolve_domain(domain_name)
    if pack is None:
        domain, text_pools = load_domain(domain_name), pools()
    else:
        domain, text_pools = unpack(pack, domain_name)
    world = build_world(domain, text_pools, seed=seed, entities=tier.entities, absent=ABSENT_NAMES, salt=salt)
    rng = random.Random(derive_seed("budget.stream", tier.name, domain.name, seed, salt))
    records = _records(world.entities)
    order = [e.name for e in records]
    rng.shuffle(order)
    batches = [order[i:i + BATCH_SIZE] for i in range(0, len(order), BATCH_SIZE)]
    n_batches = len(batches)
    batch_of = {name: b for b, names in enumerate(batches) for name in names}
    changes = _pick_changes(domain, records, order, tier, rng)
    view = final_view(records, changes)
    ctx = Context(domain, view, records, changes, world.absent_names, rng)
    n_abstain, n_retrieval, n_maint, n_reason = _quota(tier)

    # Slot s holds what comes after batch s: changes, memos, and (at the middle) mid-stream questions.
    slots: list[list[tuple[str, int | None, str | None]]] = [[] for _ in range(n_batches)]
    for i, c in enumerate(changes):
        slots[rng.randint(batch_of[c.entity], n_batches - 1)].append(("change", i, None))
    for _ in range(n_batches // 2 + 1):
        slots[rng.randrange(n_batches)].append(("memo", None, None))
    # As many plain re-reports as silent changes, so a second document about an entity is no signal itself.
    for _ in range(sum(c.kind == "silent" for c in changes)):
        b = rng.randrange(n_batches)
        slots[b].append(("rereport", None, rng.choice([n for n in order if batch_of[n] <= b])))
    for slot in slots:
        rng.shuffle(slot)

    by_name = {e.name: e for e in records}
    later: dict[str, dict[str, list[int | float]]] = {}
    for c in changes:
        later.setdefault(c.entity, {})[c.attr] = [c.new]
    rendered = {name: document(domain, by_name[name], rng, later.get(name)) for name in order}
    with_distractor = {(f.entity, f.attr) for _, fs in rendered.values() for f in fs if f.distractor is not None}
    changed = {(c.entity, c.attr) for c in changes}
    # Enum values and small text pools are few, so retrieving one is guessable; they are asked through filters
    # and text matches instead.
    plain = [a.key for a in domain.attributes if a.type not in ("series", "enum")
             and (a.type != "text" or len(text_pools.get(a.pool or "", ())) >= RETRIEVABLE_POOL)
             and (not a.numeric or a.wide)]
    mid_slot = max(0, n_batches // 2 - 1)
    pending: list[tuple[str, tuple]] = []  # (where, (kind, spec, text))
    n_mid = n_retrieval // 2
    early = [n for n in order if batch_of[n] <= mid_slot]
    used: set[tuple[str, str]] = set()

    def pick_fact(pool: list[str], distracted: bool) -> tuple[str, str]:
        for attempt in range(200):
            e = rng.choice(pool)
            keys = [k for k in plain if (e, k) in view.facts and (e, k) not in changed and (e, k) not in used
                    and (not distracted or attempt > 100 or (e, k) in with_distractor)]
            if keys:
                k = rng.choice(keys)
                used.add((e, k))
                return e, k
        raise AssertionError("no fact left to ask about")

    for i in range(n_retrieval):
        e, k = pick_fact(early if i < n_mid else order, distracted=i % 2 == 1)
        pending.append(("mid" if i < n_mid else "end", ("retrieval", *retrieval_spec(ctx, e, k, "retrieval"))))
    for i, c in enumerate(changes[:n_maint]):
        kind = maintenance_kind(i)
        pending.append(("end", (kind, *retrieval_spec(ctx, c.entity, c.attr, kind))))
    numeric = [a.key for a in domain.attributes if a.wide]
    for i in range(n_abstain):
        pending.append(("end", ("abstention", *retrieval_spec(ctx, world.absent_names[i], rng.choice(numeric),
                                                              "abstention"))))
    questions_mid: list[Question] = []
    questions_end: list[Question] = []
    for where, (kind, spec, text) in pending:
        q = make_question(ctx, "", kind, spec, text)
        (questions_mid if where == "mid" else questions_end).append(q)
    kinds = list(REASONING_KINDS)
    rng.shuffle(kinds)
    seen = {q.text for q in questions_mid + questions_end}
    # Kinds answered by picking one of a few options are capped, so no episode hands a guesser its ceiling.
    choices_left = int(tier.questions * CHOICE_SHARE)
    made, attempts = 0, 0
    while made < n_reason and attempts < n_reason * 6:
        kind = kinds[attempts % len(kinds)]
        attempts += 1
        if kind in CHOICE_KINDS and not choices_left:
            continue
        q2 = reasoning_question(ctx, "", kind, seen)
        if q2 is not None:
            seen.add(q2.text)
            questions_end.append(q2)
            made += 1
            choices_left -= kind in CHOICE_KINDS
    rng.shuffle(questions_end)

    events: list[Event] = []
    questions: list[Question] = []

    def session_of(batch: int) -> int:
        return batch * tier.sessions // n_batches

    def add(kind: str, text: str, session: int, **extra: object) -> None:
        events.append(Event(index=len(events), session=session, kind=kind, text=text, **extra))  # type: ignore[arg-type]

    def ask(q: Question, session: int) -> None:
        q = q.model_copy(update={"id": f"q{len(questions) + 1:03d}"})
        questions.append(q)
        add("question", q.text, session, question=q.id)

    # Values as the stream has stated them so far: a re-report states these, never a future value.
    current = {e.name: dict(e.attrs) for e in records}
    ever: dict[str, dict[str, list[int | float]]] = {}
    for c in changes:
        ever.setdefault(c.entity, {}).setdefault(c.attr, []).extend([c.old, c.new])

    def rereport(name: str) -> tuple[str, list]:
        record = by_name[name].model_copy(update={"attrs": dict(current[name])})
        return document(domain, record, rng, ever.get(name))

    for b, names in enumerate(batches):
        s = session_of(b)
        docs, facts = [], []
        for name in names:
            text, fs = rendered[name]
            docs.append(text)
            facts.extend(fs)
        add("documents", documents_text(domain, docs), s, facts=facts)
        for what, idx, who in slots[b]:
            if what == "memo":
                add("memo", memo(rng), s)
            elif what == "rereport":
                assert who is not None
                text, fs = rereport(who)
                add("documents", documents_text(domain, [text]), s, facts=fs)
            else:
                assert idx is not None
                c = changes[idx]
                current[c.entity][c.attr] = c.new
                if c.kind == "notice":
                    add("correction", correction_notice(domain, c), s, change=idx)
                else:
                    text, fs = rereport(c.entity)
                    add("contradiction", stream.contradiction_text(domain, text), s, facts=fs, change=idx)
        if b == mid_slot:
            for q in questions_mid:
                ask(q, s)
    for q in questions_end:
        ask(q, tier.sessions - 1)

    episode = Episode(domain=domain.name, seed=seed, salt=salt,
                      tier=tier,
                      note_chars=NOTE_CHARS, entity_names=sorted(order), absent_names=world.absent_names,
                      entities=records, changes=changes, events=events, questions=questions, reference_writes=0,
                      domain_pack=pack)

    return episode.model_copy(update={"reference_writes": min(tier.writes, coverage_writes(episode))})


def episode_bytes(episode: Episode) -> bytes:
    """The canonical file bytes of an episode (byte-identical for the same inputs)."""
    return (json.dumps(episode.model_dump(mode="json"), ensure_ascii=False, indent=1) + "\n").encode("utf-8")
