"""The budget family's validity suite: scripted strategies, attacks, and the invariants they must keep.

Invariants checked on every episode (deterministic):
- the file is the episode its (tier, domain, seed, salt) generate (integrity.py); if not, nothing else is
  checked on it, since scores on an edited episode mean nothing;
- the perfect strategy is right on every question, scores 1.0 on every axis and stays within the budget;
  answering the same way with the whole budget spent still keeps efficiency >= 0.5;
- applying corrections beats ignoring them, and ignoring silent contradictions costs maintenance;
- storing names plus the changes it is told about (never the original facts) earns maintenance <= 0.2;
- no event shown to the agent marks a silent contradiction (its kind, header and wording are a document's);
- always abstaining scores under 20 %;
- every other attack scores nothing on the questions it targets, and the store never holds a note over the
  cap nor more writes than the budget.
Invariants checked on the pool of all episodes, and on the pool of each seed (statistical, judged once a
pool has enough answers):
- the guessers score under 5 %;
- storing a larger random share beats storing a smaller one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from .checker import Verdict, check
from .domain import DomainTemplate, episode_domain
from .integrity import mismatch
from .model import Episode
from .scoring import EpisodeScore, score_episode
from .strategies import ATTACKS, STRATEGIES, run_strategy
from .stream import documents_text, shown_kind

#: Answers a pool needs before its statistical invariants are judged.
MIN_POOL_ANSWERS = 100
GUESS_CEILING = 0.05
ABSTAIN_CEILING = 0.20
PERFECT_FLOOR = 0.999
#: Maintenance the names-plus-changes attack may reach at most.
NAMES_ONLY_CEILING = 0.2
#: Maintenance ignoring silent contradictions may reach at most (every plan asks a silent change's value).
IGNORE_SILENT_CEILING = 0.75
#: Efficiency a perfect answerer keeps with the whole budget spent.
FULL_BUDGET_EFFICIENCY = 0.5
#: Attacks judged on an axis rather than on the questions they target.
AXIS_ATTACKS = {"names_plus_changes": ("maintenance", NAMES_ONLY_CEILING)}
#: Words that would tell a silent contradiction apart from an ordinary document.
MARKERS = re.compile(r"\b(?:contradict\w*|correct\w*|revis\w*|field report|updat\w*|chang\w*|previous\w*"
                     r"|misreport\w*|no longer|amend\w*|instead|erratum|was|now)\b", re.I)


@dataclass
class EpisodeResult:
    """Every strategy's score on one episode, and the deterministic invariants it broke."""

    label: str
    scores: dict[str, EpisodeScore]
    attack_hits: dict[str, tuple[int, int]]
    failures: list[str] = field(default_factory=list)


def judge(episode: Episode, answers: Mapping[str, str | None]) -> dict[str, Verdict]:
    """Check every answer (question id -> reply; a missing id is a skipped question)."""
    names = episode.entity_names + episode.absent_names
    return {q.id: check(q, answers.get(q.id), names) for q in episode.questions}


def contradiction_marks(episode: Episode, domain: DomainTemplate) -> list[str]:
    """How the events shown to the agent give a silent contradiction away (empty when they do not).

    A contradiction must be shown as a documents event, open with the header a one-document event has, carry
    one document headed by the bare entity name, and use no word that ordinary documents of the episode do
    not use about change or correction.
    """
    ordinary = " ".join(ev.text for ev in episode.events if ev.kind == "documents")
    out = []

    def unusual(word: str) -> bool:
        return re.search(r"\b" + re.escape(word) + r"\b", ordinary, re.I) is None

    for ev in episode.events:
        if ev.kind != "contradiction" or ev.change is None:
            continue
        entity = episode.changes[ev.change].entity
        header = documents_text(domain, ["## " + entity]).split("\n")[0]
        lines = ev.text.split("\n")
        if shown_kind(ev.kind) != shown_kind("documents"):
            out.append(f"event {ev.index} is shown as {shown_kind(ev.kind)!r}, not as documents")
        if lines[0] != header or len(lines) < 3 or lines[2] != f"## {entity}":
            out.append(f"event {ev.index} does not open as a one-document event about {entity}")
        extra = {w for w in {m.group(0).lower() for m in MARKERS.finditer(ev.text)} if unusual(w)}
        if extra:
            out.append(f"event {ev.index} says {', '.join(sorted(extra))!r}, which no ordinary document says")
    return out


def validate_episode(episode: Episode, label: str, raw: bytes | None = None) -> EpisodeResult:
    """Run all strategies and attacks on one episode and check the per-episode invariants.

    ``raw`` is accepted for callers that hold the file's bytes; the comparison is on the parsed content.
    """
    problem = mismatch(episode)
    if problem:
        return EpisodeResult(label, {}, {}, [f"{label}: {problem}"])
    domain = episode_domain(episode)
    scores: dict[str, EpisodeScore] = {}
    hits: dict[str, tuple[int, int]] = {}
    fails: list[str] = []
    perfect_verdicts: dict[str, Verdict] = {}
    perfect_ledger = []
    for name in STRATEGIES + ATTACKS:
        run = run_strategy(name, episode, domain)
        verdicts = judge(episode, run.answers)
        scores[name] = score_episode(episode, verdicts, run.store.writes_used, run.store.ledger)
        if name == "perfect":
            perfect_verdicts, perfect_ledger = verdicts, run.store.ledger
        if run.store.budget is not None and run.store.writes_used > run.store.budget:
            fails.append(f"{label}: {name} used {run.store.writes_used} writes of {run.store.budget}")
        if any(len(n) > run.store.note_chars for n in run.store.notes.values()):
            fails.append(f"{label}: {name} holds a note over the {run.store.note_chars}-character cap")
        if name in AXIS_ATTACKS:
            axis, ceiling = AXIS_ATTACKS[name]
            got = getattr(scores[name], axis)
            if got is not None and got > ceiling:
                fails.append(f"{label}: attack {name} reached {axis} {got:.3f} (ceiling {ceiling})")
        elif run.targets is not None:
            hit = sum(verdicts[q].correct for q in run.targets)
            hits[name] = (hit, len(run.targets))
            if hit:
                fails.append(f"{label}: attack {name} scored on {hit} of {len(run.targets)} targeted questions")
    p = scores["perfect"]
    axes = (p.breadth, p.maintenance, p.reasoning, p.efficiency, p.composite)
    if p.accuracy < PERFECT_FLOOR or any(a is not None and abs(a - 1.0) > 1e-9 for a in axes) or p.composite is None:
        fails.append(f"{label}: perfect scored accuracy {p.accuracy:.3f}, axes (breadth, maintenance, reasoning, "
                     f"efficiency, composite) {axes}")
    full = score_episode(episode, perfect_verdicts, episode.tier.writes, perfect_ledger)
    if full.efficiency is not None and full.efficiency < FULL_BUDGET_EFFICIENCY:
        fails.append(f"{label}: a perfect answerer that spends the whole budget ({episode.tier.writes} writes) "
                     f"gets efficiency {full.efficiency:.3f} (floor {FULL_BUDGET_EFFICIENCY}; reference "
                     f"{episode.reference_writes})")
    if not scores["perfect"].accuracy > scores["store_ignore_corrections"].accuracy:
        fails.append(f"{label}: ignoring corrections ({scores['store_ignore_corrections'].accuracy:.3f}) did not "
                     f"lose to applying them ({p.accuracy:.3f})")
    silent = scores["ignore_contradictions"].maintenance
    if silent is not None and silent > IGNORE_SILENT_CEILING:
        fails.append(f"{label}: ignoring silent contradictions kept maintenance {silent:.3f} "
                     f"(ceiling {IGNORE_SILENT_CEILING})")
    fails += [f"{label}: {m}" for m in contradiction_marks(episode, domain)]
    if scores["always_abstain"].accuracy >= ABSTAIN_CEILING:
        fails.append(f"{label}: always_abstain scored {scores['always_abstain'].accuracy:.3f}")
    return EpisodeResult(label, scores, hits, fails)


def pooled(results: list[EpisodeResult]) -> dict[str, float]:
    """Accuracy of each strategy over all answers of all episodes that were scored."""
    scored = [r for r in results if r.scores]
    out = {}
    for name in STRATEGIES + ATTACKS:
        right = sum(r.scores[name].accuracy * r.scores[name].questions for r in scored)
        total = sum(r.scores[name].questions for r in scored)
        out[name] = right / total if total else 0.0
    return out


def _pool_checks(results: list[EpisodeResult], where: str) -> list[str]:
    acc = pooled(results)
    fails = []
    for name in ("guess_blind", "guess_smart"):
        if acc[name] >= GUESS_CEILING:
            fails.append(f"{name} scored {acc[name]:.3f} over {where} (ceiling {GUESS_CEILING})")
    if not acc["store_random_full"] > acc["store_random_half"]:
        fails.append(f"storing more ({acc['store_random_full']:.3f}) did not beat storing less "
                     f"({acc['store_random_half']:.3f}) over {where}")
    return fails


def _answers(results: list[EpisodeResult]) -> int:
    return sum(r.scores["perfect"].questions for r in results if r.scores)


def pool_failures(results: list[EpisodeResult], seeds: dict[str, int] | None = None) -> tuple[list[str], list[str]]:
    """Statistical invariant failures over the pool and over each seed's pool, and notes.

    ``seeds`` maps a result's label to its seed; the results of one seed (every domain) form a pool of their
    own, so one unlucky seed cannot hide in the average.
    """
    answers = _answers(results)
    if answers < MIN_POOL_ANSWERS:
        return [], [f"statistical invariants need >= {MIN_POOL_ANSWERS} answers (have {answers}); "
                    "run with --seeds N to pool more episodes"]
    fails = _pool_checks(results, "the pool")
    by_seed: dict[int, list[EpisodeResult]] = {}
    for r in results:
        if seeds and r.label in seeds:
            by_seed.setdefault(seeds[r.label], []).append(r)
    for seed, group in sorted(by_seed.items()):
        if len(by_seed) > 1 and _answers(group) >= MIN_POOL_ANSWERS:
            fails += _pool_checks(group, f"seed {seed}")
    return fails, []
