"""Budget results pooled into one entry per agent: trials averaged within an episode, episodes averaged.

An *entry* is everything one agent (name, store, served model) did on one tier under one protocol within
one run folder given on the command line (a run, a multi-episode run, a ``--trials`` output, or a folder of
such runs): two folders are two entries even for the same agent. Each episode (the digest of its file) counts
once: its runs under several trial seeds are averaged first, so the
interval is over episodes, never over trials or tiers. The leaderboard, the report, the batch summary and
``compare`` all read results through here (docs/design.md §15).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import RunError
from ...scoring.metrics import mean_ci
from .scoring import AXES

#: The numbers averaged over episodes, in display order.
STATS = (*AXES, "composite", "abstention", "accuracy")
#: Name of the file a multi-episode run writes at its root (what it planned to run, see ``batch.py``).
BATCH_FILE = "batch.json"


@dataclass(frozen=True)
class RunResult:
    """One episode's ``results.json`` and where it was found.

    Attributes:
        path: the run directory holding ``results.json``.
        root: the label of the argument it was found under.
        results: the parsed file.
    """

    path: Path
    root: str
    results: dict[str, Any]

    @property
    def digest(self) -> str:
        """The sha256 of the episode file: two runs of one episode share it."""
        return str(self.results.get("environment_sha256"))

    @property
    def episode(self) -> str:
        """A readable name of the episode."""
        r = self.results
        return f"{r.get('tier')}/{r.get('domain')}/seed{r.get('seed')}/salt{r.get('salt')}"

    @property
    def seed(self) -> int | None:
        """The run (trial) seed mixed into every call; None for results written before it was recorded."""
        value = self.results.get("run_seed")
        return None if value is None else int(value)

    @property
    def composite(self) -> float | None:
        """The episode's composite, None when no axis was defined."""
        value = (self.results.get("score") or {}).get("composite")
        return None if value is None else float(value)

    @property
    def key(self) -> tuple[str, str, str, str, str, str]:
        """(root, agent, store, served model, tier, protocol): what an entry's runs all share."""
        r = self.results
        return (self.root, str(r.get("agent")), str(r.get("store")), str(r.get("agent_model") or "-"),
                str(r.get("tier")), protocol_of(r))


def protocol_of(results: dict[str, Any]) -> str:
    """What must match, besides the tier, for two runs to be ranked together: the harness policy, the format,
    and whether the harness metered the agent's memory (a run recorded as unmetered never joins metered ones;
    runs that do not say were all metered by the harness's own store)."""
    metered = results.get("metered", True) is True
    return f"{results.get('policy')}/v{results.get('format_version')}" + ("" if metered else "/unmetered")


@dataclass
class Entry:
    """One agent's runs on one tier under one protocol in one root, pooled over episodes (and trials in them)."""

    root: str
    agent: str
    store: str
    model: str
    tier: str
    protocol: str
    runs: list[RunResult] = field(default_factory=list)
    #: Planned episodes (labels) of a multi-episode run that have no results yet.
    unfinished: list[str] = field(default_factory=list)

    def by_episode(self) -> dict[str, list[RunResult]]:
        """Runs per episode digest, episodes in first-seen order."""
        out: dict[str, list[RunResult]] = {}
        for r in self.runs:
            out.setdefault(r.digest, []).append(r)
        return out

    @property
    def episode_set(self) -> frozenset[str]:
        """The digests of the episodes this entry ran; entries are ranked together only when these match."""
        return frozenset(self.by_episode())

    def episode_value(self, name: str, source: str = "score") -> dict[str, float | None]:
        """Per episode, the mean of ``name`` over its runs (trials); None when no run defines it.

        ``source`` is the results field holding the scores: ``score`` (the rule checker's, ranked) or
        ``score_judged`` (with the optional judge's second verdicts).
        """
        out: dict[str, float | None] = {}
        for digest, runs in self.by_episode().items():
            xs = [float(v) for r in runs if (v := (r.results.get(source) or {}).get(name)) is not None]
            out[digest] = statistics.fmean(xs) if xs else None
        return out

    def stat(self, name: str, source: str = "score") -> dict[str, float | int | None]:
        """Mean with a 95 % t-interval over episodes (episodes where ``name`` is undefined are left out).

        The interval of a score (:data:`STATS`, all in [0, 1]) is clipped to [0, 1].
        """
        out = mean_ci([v for v in self.episode_value(name, source).values() if v is not None])
        if name in STATS and out["lo"] is not None and out["hi"] is not None:
            out["lo"], out["hi"] = max(0.0, float(out["lo"])), min(1.0, float(out["hi"]))
        return out

    @property
    def episodes_without_composite(self) -> list[str]:
        """Labels of the episodes with no composite in any run."""
        labels = {r.digest: r.episode for r in self.runs}
        return sorted(labels[d] for d, v in self.episode_value("composite").items() if v is None)

    @property
    def seeds(self) -> list[int | None]:
        """The distinct trial seeds among the runs, sorted (None first)."""
        return sorted(set(r.seed for r in self.runs), key=lambda s: (s is not None, s or 0))

    def trials(self) -> dict[str, Any] | None:
        """Spread between trials and pass^k when the runs came under two or more trial seeds, else None.

        ``spread`` is each trial's mean composite over its episodes, their mean and sample standard deviation
        (comparable only when every trial ran the same episodes, which ``same_episodes`` says). ``consistency``
        is pass^k over questions: the share of (episode, question) asked in every trial that every trial
        answered correctly; ``pass_at_1`` is the mean single-trial accuracy over the same questions.
        """
        seeds = self.seeds
        if len(seeds) < 2:
            return None
        per_trial: dict[int | None, list[RunResult]] = {s: [] for s in seeds}
        for r in self.runs:
            per_trial[r.seed].append(r)
        means = {s: statistics.fmean(c) if (c := [x for r in rs if (x := r.composite) is not None]) else None
                 for s, rs in per_trial.items()}
        sets = {frozenset(r.digest for r in rs) for rs in per_trial.values()}
        right: dict[tuple[str, str], list[bool]] = {}
        for r in self.runs:
            for qid, a in (r.results.get("answers") or {}).items():
                right.setdefault((r.digest, qid), []).append(bool(a.get("correct")))
        everywhere = [v for v in right.values() if len(v) == len(seeds)]
        xs = [m for m in means.values() if m is not None]
        return {
            "k": len(seeds), "seeds": seeds, "same_episodes": len(sets) == 1,
            "composite_per_trial": [means[s] for s in seeds],
            "spread": {"mean": statistics.fmean(xs) if xs else None,
                       "std": statistics.stdev(xs) if len(xs) > 1 else None, "n": len(xs)},
            "questions_in_all_trials": len(everywhere),
            "consistency": statistics.fmean(all(v) for v in everywhere) if everywhere else None,
            "pass_at_1": statistics.fmean(x for v in everywhere for x in v) if everywhere else None,
        }

    def repeated_seeds(self) -> list[str]:
        """Episodes run more than once under the same trial seed (replays: the cache serves the same calls)."""
        seen: dict[tuple[str, int | None], int] = {}
        for r in self.runs:
            seen[(r.digest, r.seed)] = seen.get((r.digest, r.seed), 0) + 1
        labels = {r.digest: r.episode for r in self.runs}
        return sorted({labels[d] for (d, _), n in seen.items() if n > 1})


def _read_budget_json(folder: Path, name: str) -> dict[str, Any] | None:
    """``folder/name`` when it is a budget-family JSON record, None when absent or another family's."""
    path = folder / name
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RunError(f"{folder}: unreadable {name} ({exc})") from None
    return data if isinstance(data, dict) and data.get("family") == "budget" else None


def read_results(run_dir: Path) -> dict[str, Any] | None:
    """The budget ``results.json`` of ``run_dir``, or None when it has none (or another family's)."""
    return _read_budget_json(run_dir, "results.json")


def read_batch(root: Path) -> dict[str, Any] | None:
    """The ``batch.json`` of a multi-episode run at ``root``, or None."""
    return _read_budget_json(root, BATCH_FILE)


def build_entries(runs: Iterable[RunResult],
                  batches: Sequence[tuple[str, Path, dict[str, Any]]] = ()) -> list[Entry]:
    """Pool runs into entries (first-seen order).

    ``batches`` are (root label, folder, batch.json) of multi-episode runs: their planned episodes without
    results are marked unfinished on the matching entry.
    """
    entries: dict[tuple[str, str, str, str, str, str], Entry] = {}
    for r in runs:
        if r.key not in entries:
            entries[r.key] = Entry(*r.key)
        entries[r.key].runs.append(r)
    for label, folder, batch in batches:
        for ep in batch.get("episodes") or []:
            if (folder / str(ep.get("path", ".")) / "results.json").is_file():
                continue
            for e in entries.values():  # the run's agent, model and the episode's tier name the entry
                if (e.root, e.agent, e.model, e.tier) == (label, str(batch.get("agent")),
                                                          str(batch.get("agent_model") or "-"), str(ep.get("tier"))):
                    e.unfinished.append(f"{ep.get('tier')}/{ep.get('domain')}/seed{ep.get('seed')}")
    return list(entries.values())
