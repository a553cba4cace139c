"""The budget family's generate and validate commands (reached through its adapter in ``family.py``)."""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from rich.console import Console
from rich.table import Table

from ...console import styled
from ...errors import ConfigError
from ...storage import write_output_json
from .domain import domain_names, pack_domains, resolve_domain
from .generate import build_episode
from .io import load_episode, save_episode
from .model import DomainPack
from .strategies import ATTACKS, STRATEGIES
from .tiers import OFFICIAL_SEEDS, get_tier
from .validity import EpisodeResult, pool_failures, pooled, validate_episode


def generate(out_dir: Path, *, tier: str, domain: str | None, seed: int, salt: int, official: bool,
             console: Console, packs: tuple[Path, ...] = ()) -> None:
    """Write ``OUT/data.json`` (one episode) or, with ``official``, ``OUT/<domain>/seed<N>/data.json``.

    ``packs`` (``--pack``) add domains for ``domain``; the official set is the built-in domains only.
    """
    get_tier(tier)
    if official and packs:
        raise ConfigError("--pack adds a domain for --domain; --official generates the built-in domains only")
    if official:
        for name in domain_names():
            for s in OFFICIAL_SEEDS:
                save_episode(build_episode(tier, name, s, salt), out_dir / name / f"seed{s}" / "data.json")
        console.print(f"wrote {len(domain_names()) * len(OFFICIAL_SEEDS)} {tier} episodes under {out_dir} "
                      f"({len(domain_names())} domains x seeds {OFFICIAL_SEEDS[0]}-{OFFICIAL_SEEDS[-1]})",
                      highlight=False)
        return
    if domain is None:
        known = sorted([*domain_names(), *pack_domains(packs)])
        raise ConfigError(f"--domain is required for --family budget (one of: {', '.join(known)})")
    episode = build_episode(tier, domain, seed, salt, resolve_domain(domain, packs))
    save_episode(episode, out_dir / "data.json")
    console.print(f"wrote {out_dir / 'data.json'} (budget/{tier}, {domain}, seed {seed}, salt {salt}: "
                  f"{len(episode.entities)} entities, {len(episode.events)} events, {len(episode.questions)} "
                  f"questions, budget {episode.tier.writes} writes)", highlight=False)


#: The most fresh seeds per domain ``validate --seeds`` builds (each is a whole episode; the job list is built
#: up front).
MAX_VALIDATE_SEEDS = 10_000

#: One generated episode to validate: tier, domain, seed, salt and the carried domain (None when built in).
Job = tuple[str, str, int, int, DomainPack | None]


def _validate_one(job: Job) -> EpisodeResult:
    tier, domain, seed, salt, pack = job
    return validate_episode(build_episode(tier, domain, seed, salt, pack), f"{tier}/{domain}/seed{seed}")


def _validate_generated(jobs: list[Job]) -> list[EpisodeResult]:
    """Validate generated episodes, across processes when there are many (results keep the job order)."""
    workers = min(os.cpu_count() or 1, 8)
    if len(jobs) < 8 or workers < 2:
        return [_validate_one(j) for j in jobs]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(_validate_one, jobs, chunksize=4))


def validate(env: Path, *, seeds: int, json_out: Path | None, console: Console) -> int:
    """Strategies, attacks and invariants on the file (plus seeds 0..N-1 of every domain); the exit code."""
    if not 0 <= seeds <= MAX_VALIDATE_SEEDS:
        raise ConfigError(f"--seeds must be from 0 to {MAX_VALIDATE_SEEDS:,}, got {seeds}")
    episode, raw = load_episode(env, verify=False)
    results: list[EpisodeResult] = [validate_episode(episode, str(env), raw)]
    # The built-in domains, and the file's own when it carries one (a pack domain is validated on fresh seeds too).
    own = [(episode.domain, episode.domain_pack)] if episode.domain_pack is not None else []
    jobs: list[Job] = [(episode.tier.name, name, s, episode.salt, pack)
                       for name, pack in [*((n, None) for n in domain_names()), *own] for s in range(seeds)]
    results += _validate_generated(jobs)
    acc = pooled(results)
    seed_of = {f"{t}/{d}/seed{s}": s for t, d, s, _, _ in jobs}
    table = Table("strategy", "kind", "accuracy (pooled)", "composite (mean)",
                  title=f"budget validity: {len(results)} episode(s), tier {episode.tier.name}")
    for name in STRATEGIES + ATTACKS:
        comps = [c for r in results if r.scores and (c := r.scores[name].composite) is not None]
        comp = f"{sum(comps) / len(comps):.3f}" if comps else "n/a"
        pooled_acc = f"{acc[name]:.3f}" if any(r.scores for r in results) else "n/a"
        table.add_row(name, "attack" if name in ATTACKS else "strategy", pooled_acc, comp)
    console.print(table)
    failures = [f for r in results for f in r.failures]
    pool_fails, notes = pool_failures(results, seed_of)
    failures += pool_fails
    for note in notes:
        console.print(f"note: {note}", highlight=False, markup=False)
    if json_out is not None:
        write_output_json(json_out, {"environment_file": str(env), "episodes": len(results), "pooled_accuracy": acc,
                                     "failures": failures, "notes": notes,
                                     "per_episode": {r.label: {k: s.to_dict() for k, s in r.scores.items()}
                                                     for r in results}})
        console.print(f"results: {json_out}", highlight=False)
    for f in failures:
        console.print(styled("red", "FAIL", f": {f}"), highlight=False)
    if not failures:
        console.print(styled("green", "PASS", ": perfect = 1.0 on every axis (and keeps efficiency with the whole "
                             "budget spent), attacks score nothing (names plus changes earns no maintenance), "
                             "contradictions are silent, guessers and abstainers stay low, storing more and applying "
                             "every change pay"), highlight=False)
    return 1 if failures else 0
