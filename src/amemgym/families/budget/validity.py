"""The budget family's validity suite: scripted strategies, attacks, and the invariants they must keep.

Invariants checked on every episode (deterministic):
- the perfect strategy is right on every question, reaches composite 1.0 and stays within the budget;
- applying corrections beats ignoring them;
- always abstaining scores under 20 %;
- every attack scores nothing on the questions it targets, and the store never holds a note over the cap
  nor more writes than the budget;
- regenerating from the file's (tier, domain, seed, salt) gives the same bytes.
Invariants checked on the pool of all episodes (statistical, judged once the pool has enough answers):
- the guessers score under 5 %;
- storing a larger random share beats storing a smaller one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from .checker import Verdict, check
from .domain import load_domain
from .generate import build_episode, episode_bytes
from .model import Episode
from .scoring import EpisodeScore, score_episode
from .strategies import ATTACKS, STRATEGIES, run_strategy

#: Answers a pool needs before its statistical invariants are judged.
MIN_POOL_ANSWERS = 100
GUESS_CEILING = 0.05
ABSTAIN_CEILING = 0.20
PERFECT_FLOOR = 0.999


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


def validate_episode(episode: Episode, label: str, raw: bytes | None = None) -> EpisodeResult:
    """Run all strategies and attacks on one episode and check the per-episode invariants."""
    domain = load_domain(episode.domain)
    scores: dict[str, EpisodeScore] = {}
    hits: dict[str, tuple[int, int]] = {}
    fails: list[str] = []
    for name in STRATEGIES + ATTACKS:
        run = run_strategy(name, episode, domain)
        verdicts = judge(episode, run.answers)
        scores[name] = score_episode(episode, verdicts, run.store.writes_used, list(run.store.notes.values()))
        if run.store.budget is not None and run.store.writes_used > run.store.budget:
            fails.append(f"{label}: {name} used {run.store.writes_used} writes of {run.store.budget}")
        if any(len(n) > run.store.note_chars for n in run.store.notes.values()):
            fails.append(f"{label}: {name} holds a note over the {run.store.note_chars}-character cap")
        if run.targets is not None:
            hit = sum(verdicts[q].correct for q in run.targets)
            hits[name] = (hit, len(run.targets))
            if hit:
                fails.append(f"{label}: attack {name} scored on {hit} of {len(run.targets)} targeted questions")
    p = scores["perfect"]
    if p.accuracy < PERFECT_FLOOR or p.composite is None or abs(p.composite - 1.0) > 1e-9:
        fails.append(f"{label}: perfect scored accuracy {p.accuracy:.3f}, composite {p.composite}")
    if not scores["perfect"].accuracy > scores["store_ignore_corrections"].accuracy:
        fails.append(f"{label}: ignoring corrections ({scores['store_ignore_corrections'].accuracy:.3f}) did not "
                     f"lose to applying them ({p.accuracy:.3f})")
    if scores["always_abstain"].accuracy >= ABSTAIN_CEILING:
        fails.append(f"{label}: always_abstain scored {scores['always_abstain'].accuracy:.3f}")
    again = episode_bytes(build_episode(episode.tier.name, episode.domain, episode.seed, episode.salt))
    if again != (raw if raw is not None else episode_bytes(episode)):
        fails.append(f"{label}: regenerating (tier, domain, seed, salt) gave different bytes (the file was edited "
                     "or written by another version of the generator)")
    return EpisodeResult(label, scores, hits, fails)


def pooled(results: list[EpisodeResult]) -> dict[str, float]:
    """Accuracy of each strategy over all answers of all episodes."""
    out = {}
    for name in STRATEGIES + ATTACKS:
        right = sum(r.scores[name].accuracy * r.scores[name].questions for r in results)
        total = sum(r.scores[name].questions for r in results)
        out[name] = right / total if total else 0.0
    return out


def pool_failures(results: list[EpisodeResult]) -> tuple[list[str], list[str]]:
    """Statistical invariant failures over the pool, and notes (e.g. too few answers to judge)."""
    answers = sum(r.scores["perfect"].questions for r in results)
    if answers < MIN_POOL_ANSWERS:
        return [], [f"statistical invariants need >= {MIN_POOL_ANSWERS} answers (have {answers}); "
                    "run with --seeds N to pool more episodes"]
    acc = pooled(results)
    fails = []
    for name in ("guess_blind", "guess_smart"):
        if acc[name] >= GUESS_CEILING:
            fails.append(f"{name} scored {acc[name]:.3f} over the pool (ceiling {GUESS_CEILING})")
    if not acc["store_random_full"] > acc["store_random_half"]:
        fails.append(f"storing more ({acc['store_random_full']:.3f}) did not beat storing less "
                     f"({acc['store_random_half']:.3f})")
    return fails, []
