"""Leaderboard and paired comparison of budget-family runs.

A budget run directory holds one episode's ``results.json``; a multi-episode run holds one per episode below
its root, and a ``--trials`` output one such run per ``trial_k``. The board pools them (``pool.py``) into one
row per run folder given, agent, tier and protocol (the harness policy: budgeted tool use or a metered memory
agent, or the long-context reference without budget and cut; a run recorded as unmetered forms its own
group), averaged over episodes, and ranks rows only against rows that ran the same episodes; runs of another
family never join these groups. ``compare`` pairs two collections of runs episode by episode (same episode
file digest, trials averaged) and reports the mean composite difference with a bootstrap interval and a
sign-flip p-value over episodes.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import RunError
from ...run.ranking_flags import model_change_flag
from .. import Board
from .pool import BATCH_FILE, Entry, RunResult, build_entries, protocol_of, read_batch, read_results
from .scoring import AXES

__all__ = ["leaderboard", "load_entries", "load_results", "pair_runs", "protocol_of", "read_results",
           "run_dirs_under"]

#: How deep below a given directory ``results.json`` files of a run collection are looked for.
MAX_DEPTH = 4


def run_dirs_under(root: Path) -> list[Path]:
    """``root`` itself when it is a budget run, else the budget runs up to :data:`MAX_DEPTH` levels below it."""
    if (root / "results.json").is_file():
        return [root] if read_results(root) is not None else []
    found: list[Path] = []
    for depth in range(1, MAX_DEPTH + 1):
        for path in sorted(root.glob("/".join(["*"] * depth) + "/results.json")):
            if read_results(path.parent) is not None:
                found.append(path.parent)
    return found


def batches_under(root: Path) -> list[tuple[Path, dict[str, Any]]]:
    """The multi-episode runs (``batch.json``) at ``root`` or below it, with their roots."""
    found = []
    for depth in range(MAX_DEPTH):
        for path in sorted(root.glob("/".join(["*"] * depth + [BATCH_FILE]))):
            batch = read_batch(path.parent)
            if batch is not None:
                found.append((path.parent, batch))
    return found


def load_results(run_dirs: list[Path]) -> list[RunResult]:
    """Every budget run under the given roots, each labelled with its root (labels made unique).

    Raises:
        RunError: for a results.json that is unreadable or has no score.
    """
    from ...report.load import unique_labels

    roots = [Path(r) for r in run_dirs]
    out: list[RunResult] = []
    for root, label in zip(roots, unique_labels(roots), strict=True):
        for d in run_dirs_under(root):
            results = read_results(d)
            if results is None or not isinstance(results.get("score"), dict):
                raise RunError(f"{d}: not a budget-family run (no results.json with a score)")
            out.append(RunResult(d, label, results))
    return out


def load_entries(run_dirs: list[Path]) -> list[Entry]:
    """The runs under the given roots pooled into entries (one per root, agent, tier and protocol)."""
    from ...report.load import unique_labels

    roots = [Path(r) for r in run_dirs]
    batches = [(label, *b) for root, label in zip(roots, unique_labels(roots), strict=True)
               for b in batches_under(root)]
    return build_entries(load_results(roots), batches)


COLUMNS = ("group", "rank", "run", "agent", "store", "model", "tier", "protocol", "episodes", "trials", "composite",
           "composite 95% CI", "breadth", "maintenance", "reasoning", "efficiency", "abstention", "writes used",
           "reference writes", "flags")


def _cell(x: Any) -> str:
    if isinstance(x, float):
        return f"{x:.3f}"
    return "-" if x is None else str(x)


def entry_flags(e: Entry) -> tuple[list[str], bool]:
    """An entry's flags and whether it may be ranked."""
    flags, rankable = [], True
    missing = e.episodes_without_composite
    if missing:
        flags.append(f"no composite on {len(missing)} episode(s)")
        rankable = False
    if e.unfinished:
        flags.append(f"unfinished: {len(e.unfinished)} planned episode(s) have no results")
        rankable = False
    problems = {r.results["search_embedder_problem"] for r in e.runs if r.results.get("search_embedder_problem")}
    if problems:
        flags.append(f"search fell back to BM25: {sorted(problems)[0]}")
    changed = model_change_flag([c for r in e.runs for c in r.results.get("model_changes") or []])
    if changed:
        flags.append(changed)
        rankable = False
    repeated = e.repeated_seeds()
    if repeated:
        flags.append(f"{len(repeated)} episode(s) run twice under one seed (averaged)")
    return flags, rankable


def leaderboard(run_dirs: list[Path]) -> Board:
    """One row per run folder given, agent (name, store, served model), tier and protocol, averaged over episodes.

    An episode counts once (its trials are averaged first); the interval is a t-interval over episodes.
    Rows are ranked by mean composite only against rows of the same tier and protocol that ran exactly the
    same set of episodes; rows with an episode lacking a composite, or an unfinished multi-episode run, are
    listed but not ranked. Means equal at 3 decimals share a rank (shown ``=N``).
    """
    entries = load_entries(run_dirs)
    groups: dict[tuple[str, str, frozenset[str]], list[Entry]] = {}
    for e in entries:
        groups.setdefault((e.tier, e.protocol, e.episode_set), []).append(e)
    full: list[list[Any]] = []
    notes: list[str] = []
    for g, ((tier, proto, _), members) in enumerate(groups.items(), start=1):
        flagged = {id(e): entry_flags(e) for e in members}
        scored = sorted((e for e in members if flagged[id(e)][1]),
                        key=lambda e: (-round(e.stat("composite")["mean"] or 0.0, 3), e.agent, e.model))
        shown = [round(e.stat("composite")["mean"] or 0.0, 3) for e in scored]
        ordered: list[tuple[Entry, str]] = []
        for i, e in enumerate(scored):
            rank = shown.index(shown[i]) + 1
            ordered.append((e, f"={rank}" if shown.count(shown[i]) > 1 else str(rank)))
        ordered += [(e, "-") for e in members if not flagged[id(e)][1]]
        for e, shown_rank in ordered:
            comp = e.stat("composite")
            ci = None if comp["lo"] is None else f"[{comp['lo']:.3f}, {comp['hi']:.3f}]"
            trials = e.trials()
            full.append([g, shown_rank, e.root, e.agent, e.store, e.model, tier, proto, len(e.episode_set),
                         1 if trials is None else trials["k"], comp["mean"], ci,
                         *(e.stat(a)["mean"] for a in (*AXES, "abstention")),
                         e.stat("writes_used")["mean"], e.stat("reference_writes")["mean"],
                         "; ".join(flagged[id(e)][0])])
            if any(r.results.get("judge") for r in e.runs):
                judged = e.episode_value("composite", "score_judged")
                have = [v for v in judged.values() if v is not None]
                mean = "n/a" if not have else f"{sum(have) / len(have):.3f}"
                notes.append(f"note: {e.root} ({e.agent}, {tier}, {proto}): composite with the optional judge's second "
                             f"verdicts {mean} over {len(have)} of {len(judged)} episode(s) (a judge call failed on "
                             "the others); the board ranks the rule composite")
            if trials is not None:
                spread = trials["spread"]
                std = "n/a" if spread["std"] is None else f"{spread['std']:.4f}"
                passk = "n/a" if trials["consistency"] is None else f"{trials['consistency']:.3f}"
                notes.append(f"note: {e.root} ({e.agent}, {tier}, {proto}): {trials['k']} trials averaged per episode; "
                             f"composite std between trials {std}; pass^{trials['k']} over questions {passk}"
                             + ("" if trials["same_episodes"] else " (the trials ran different episodes)"))
    by_kind: dict[tuple[str, str], list[int]] = {}
    for g, (tier, proto, _) in enumerate(groups, start=1):
        by_kind.setdefault((tier, proto), []).append(g)
    for (tier, proto), gs in by_kind.items():
        if len(gs) > 1:
            notes.append(f"note: groups {', '.join(map(str, gs))} (tier {tier}, {proto}) ran different sets of "
                         "episodes; each is ranked on its own and their ranks are not comparable")
    if len(by_kind) > 1:
        notes.append("note: runs differ in tier or protocol; each group is ranked separately")
    rows = [[_cell(x) for x in row] for row in full]
    md = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    from ...report.leaderboard import markdown_cell

    md += ["| " + " | ".join(markdown_cell(c) for c in row) + " |" for row in rows]
    explain = ("\nOne row per run folder given, agent, tier and protocol; each number is the mean over the "
               "row's episodes (an episode's trials are averaged first), with a 95 % t-interval over episodes "
               "for the composite (0.30 breadth + 0.25 maintenance + 0.25 reasoning + 0.20 efficiency). "
               "Rows are ranked only within a group of the same tier and protocol that ran the same set of "
               "episodes; rows with an episode lacking a composite or with unfinished episodes are listed but "
               "not ranked. Equal means at 3 decimals share a rank (=N).\n")
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(COLUMNS)
    writer.writerows(["" if x is None else x for x in row] for row in full)
    return Board(family="budget", title="amemgym leaderboard: budget family (mean over episodes, ranked within "
                                        "tier, protocol and episode set)",
                 columns=COLUMNS, rows=rows, notes=notes, markdown="\n".join(md) + "\n" + explain,
                 csv=buf.getvalue())


@dataclass(frozen=True)
class Pairing:
    """Two run collections matched episode by episode.

    Attributes:
        diffs: per shared episode (label), the composite difference B - A (one value each).
        composite_a, composite_b: per shared episode, each side's composite.
        only_a, only_b: episodes (labels) run on one side only, or without a composite on the other.
        protocols: the protocols seen on each side.
        trials: the most runs (trials) any episode has on each side; their composites are averaged per episode.
    """

    diffs: dict[str, list[float]]
    composite_a: dict[str, float]
    composite_b: dict[str, float]
    only_a: list[str]
    only_b: list[str]
    protocols: tuple[set[str], set[str]]
    trials: tuple[int, int] = (1, 1)


def _by_episode(root: Path) -> dict[str, tuple[str, float | None, int]]:
    """Per episode digest: its label, the composite averaged over its trials (None if none has one), trials."""
    runs = load_results([root])
    if not runs:
        raise RunError(f"{root}: no budget-family run (results.json) here or up to {MAX_DEPTH} levels below")
    entries = build_entries(runs)
    if len(entries) > 1:
        names = "; ".join(f"{e.agent}/{e.store}/{e.model}/{e.tier}/{e.protocol}" for e in entries)
        raise RunError(f"{root}: holds runs of more than one agent, tier or protocol ({names}); compare needs one "
                       "per side")
    (entry,) = entries
    twice = entry.repeated_seeds()
    if twice:
        raise RunError(f"{root}: episode {twice[0]} was run twice under one seed; compare needs one run per "
                       "episode and trial seed on each side")
    labels = {r.digest: r.episode for r in runs}
    counts = {d: len(rs) for d, rs in entry.by_episode().items()}
    return {d: (labels[d], v, counts[d]) for d, v in entry.episode_value("composite").items()}


def pair_runs(run_a: Path, run_b: Path) -> Pairing:
    """Match two run collections by episode (the digest of the episode file) on the composite.

    A side may hold several trials of an episode (a ``--trials`` output): they are averaged first.

    Raises:
        RunError: when a side has no budget run, mixes agents, tiers or protocols, runs one episode twice under
            one seed, or no episode is scored on both.
    """
    a, b = _by_episode(run_a), _by_episode(run_b)
    shared = sorted(k for k in a.keys() & b.keys() if a[k][1] is not None and b[k][1] is not None)
    if not shared:
        raise RunError(f"{run_a} and {run_b} share no episode with a composite on both sides")
    diffs, ca, cb = {}, {}, {}
    for k in shared:
        label = a[k][0]
        ca[label], cb[label] = a[k][1] or 0.0, b[k][1] or 0.0
        diffs[label] = [cb[label] - ca[label]]
    proto_a = {r.key[5] for r in load_results([run_a])}
    proto_b = {r.key[5] for r in load_results([run_b])}
    return Pairing(diffs=diffs, composite_a=ca, composite_b=cb,
                   only_a=sorted(a[k][0] for k in a if k not in shared),
                   only_b=sorted(b[k][0] for k in b if k not in shared),
                   protocols=(proto_a, proto_b),
                   trials=(max(n for _, _, n in a.values()), max(n for _, _, n in b.values())))
