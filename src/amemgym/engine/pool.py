"""Unit records pooled into entries, and pass^k: the one place trials and episodes are averaged.

An *entry* is one agent (name, variant, served model) on one group under one protocol within one folder given
on the command line (a run, a ``--trials`` output, or a folder of runs): two folders are two entries even for
the same agent. Each unit (the digest of its file) counts once: its records under several trial seeds are
averaged first, so intervals are over units, never over trials or groups. Boards, reports, summaries, trials
and ``compare`` of every unit family read records through here.

A unit record (``results.json``) gives the engine: ``environment_sha256``, ``agent``, ``agent_model``,
``run_seed``, ``group``, ``label``, ``protocol``, ``variant`` (optional) and ``answers`` (``{id: {"correct":
bool}}``, for pass^k); the family's unit metrics (:func:`amemgym.scoring.registry.unit_metrics`) read the rest.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..scoring.intervals import mean_ci
from ..scoring.registry import Metric

__all__ = ["Entry", "Found", "Pending", "build_entries", "pass_k", "spread"]


def pass_k(right: Mapping[Any, Sequence[bool]], k: int) -> dict[str, Any]:
    """pass^k over the items asked in all ``k`` trials: the share answered right in all k (``consistency``),
    the mean single-trial accuracy over the same items (``pass_at_1``), and how many there were."""
    everywhere = [v for v in right.values() if len(v) == k]
    return {"questions_in_all_trials": len(everywhere),
            "consistency": statistics.fmean(all(v) for v in everywhere) if everywhere else None,
            "pass_at_1": statistics.fmean(x for v in everywhere for x in v) if everywhere else None}


def spread(xs: Sequence[float]) -> dict[str, Any]:
    """The spread between trials of one number: its mean, sample standard deviation and how many trials had it."""
    return {"mean": statistics.fmean(xs) if xs else None, "std": statistics.stdev(xs) if len(xs) > 1 else None,
            "n": len(xs)}


@dataclass(frozen=True)
class Found:
    """One unit record and where it was found.

    Attributes:
        path: the unit folder holding the record.
        root: the label of the command-line argument it was found under.
        record: the record.
        run: the run directory holding it (None for a record without one).
    """

    path: Path
    root: str
    record: dict[str, Any]
    run: Path | None = None

    @property
    def digest(self) -> str:
        """The sha256 of the unit's file: two runs of one unit share it."""
        return str(self.record.get("environment_sha256"))

    @property
    def label(self) -> str:
        """A readable name of the unit."""
        return str(self.record.get("label") or self.digest[:12])

    @property
    def seed(self) -> int | None:
        """The run (trial) seed mixed into every call."""
        value = self.record.get("run_seed")
        return None if value is None else int(value)

    @property
    def key(self) -> tuple[str, str, str, str, str, str]:
        """(root, agent, variant, served model, group, protocol): what an entry's records all share."""
        r = self.record
        return (self.root, str(r.get("agent")), str(r.get("variant") or "-"), str(r.get("agent_model") or "-"),
                str(r.get("group")), str(r.get("protocol")))

    def value(self, metric: Metric) -> float | None:
        """The unit's value of a unit metric."""
        v = metric.fn(self.record)
        return None if v is None else float(v)


@dataclass(frozen=True)
class Pending:
    """Work a run directory has not finished: one planned unit without a record, or the run as a whole.

    Attributes:
        run: the run directory.
        root: the label of the command-line argument it was found under.
        agent: the run's agent.
        model: the served model its manifest names for the agent (``-`` when none).
        group: the unit's group (None for the run as a whole).
        unit: the unit's label (None for the run as a whole).
        reason: why the run as a whole is not finished (None for a unit).
    """

    run: Path
    root: str
    agent: str
    model: str
    group: str | None = None
    unit: str | None = None
    reason: str | None = None


@dataclass
class Entry:
    """One agent's records on one group under one protocol in one root, pooled over units (and trials)."""

    root: str
    agent: str
    variant: str
    model: str
    group: str
    protocol: str
    runs: list[Found] = field(default_factory=list)
    #: Planned units (labels) of the root's run(s) that have no record yet.
    unfinished: list[str] = field(default_factory=list)
    #: Why a run pooled here did not finish as a whole (no ``metrics.json``, or one saying so).
    incomplete: list[str] = field(default_factory=list)

    def by_unit(self) -> dict[str, list[Found]]:
        """Records per unit digest, units in first-seen order."""
        out: dict[str, list[Found]] = {}
        for r in self.runs:
            out.setdefault(r.digest, []).append(r)
        return out

    @property
    def unit_set(self) -> frozenset[str]:
        """The digests of the units this entry ran; entries are ranked together only when these match."""
        return frozenset(self.by_unit())

    def unit_value(self, metric: Metric) -> dict[str, float | None]:
        """Per unit, the mean of ``metric`` over its records (trials); None when no record defines it."""
        out: dict[str, float | None] = {}
        for digest, runs in self.by_unit().items():
            xs = [v for r in runs if (v := r.value(metric)) is not None]
            out[digest] = statistics.fmean(xs) if xs else None
        return out

    def stat(self, metric: Metric) -> dict[str, float | int | None]:
        """Mean with a 95 % t-interval over units (undefined ones left out); clipped to [0, 1] when bounded."""
        out = mean_ci([v for v in self.unit_value(metric).values() if v is not None])
        if metric.bounded and out["lo"] is not None and out["hi"] is not None:
            out["lo"], out["hi"] = max(0.0, float(out["lo"])), min(1.0, float(out["hi"]))
        return out

    def units_without(self, metric: Metric) -> list[str]:
        """Labels of the units with no value of ``metric`` in any record."""
        labels = {r.digest: r.label for r in self.runs}
        return sorted(labels[d] for d, v in self.unit_value(metric).items() if v is None)

    @property
    def seeds(self) -> list[int | None]:
        """The distinct trial seeds among the records, sorted (None first)."""
        return sorted({r.seed for r in self.runs}, key=lambda s: (s is not None, s or 0))

    def trials(self, headline: Metric) -> dict[str, Any] | None:
        """Spread between trials and pass^k when the records came under two or more trial seeds, else None.

        ``spread`` is each trial's mean ``headline`` over its units, their mean and sample standard deviation
        (comparable only when every trial ran the same units: ``same_units``); pass^k is over the records'
        answers (:func:`pass_k`).
        """
        seeds = self.seeds
        if len(seeds) < 2:
            return None
        per_trial: dict[int | None, list[Found]] = {s: [] for s in seeds}
        for r in self.runs:
            per_trial[r.seed].append(r)
        means = {s: statistics.fmean(c) if (c := [x for r in rs if (x := r.value(headline)) is not None]) else None
                 for s, rs in per_trial.items()}
        right: dict[tuple[str, str], list[bool]] = {}
        for r in self.runs:
            for qid, a in (r.record.get("answers") or {}).items():
                right.setdefault((r.digest, qid), []).append(bool(a.get("correct")))
        xs = [m for m in means.values() if m is not None]
        return {"k": len(seeds), "seeds": seeds,
                "same_units": len({frozenset(r.digest for r in rs) for rs in per_trial.values()}) == 1,
                f"{headline.name}_per_trial": [means[s] for s in seeds],
                "spread": spread(xs),
                **pass_k(right, len(seeds))}

    def repeated_seeds(self) -> list[str]:
        """Units run more than once under the same trial seed (replays: the cache serves the same calls)."""
        seen: dict[tuple[str, int | None], int] = {}
        for r in self.runs:
            seen[(r.digest, r.seed)] = seen.get((r.digest, r.seed), 0) + 1
        labels = {r.digest: r.label for r in self.runs}
        return sorted({labels[d] for (d, _), n in seen.items() if n > 1})


def build_entries(found: Iterable[Found], pending: Sequence[Pending] = ()) -> list[Entry]:
    """Pool records into entries (first-seen order), marking each entry with the ``pending`` work of its runs.

    A run's pending work lands on the entries holding one of its records, and on those of the same root, agent
    and served model (a run with no record yet); a unit's only on entries of its group.
    """
    entries: dict[tuple[str, str, str, str, str, str], Entry] = {}
    for r in found:
        if r.key not in entries:
            entries[r.key] = Entry(*r.key)
        entries[r.key].runs.append(r)
    for p in pending:
        for e in entries.values():
            mine = any(r.run == p.run for r in e.runs) or (e.root, e.agent, e.model) == (p.root, p.agent, p.model)
            if not mine or e.root != p.root or (p.group is not None and e.group != p.group):
                continue
            if p.unit is not None:
                e.unfinished.append(p.unit)
            elif p.reason is not None and p.reason not in e.incomplete:
                e.incomplete.append(p.reason)
    return list(entries.values())
