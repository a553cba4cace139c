"""Leaderboard and paired comparison of budget-family runs.

A budget run directory holds one episode's ``results.json``. The board ranks runs by composite within
groups of the same tier and protocol (the harness policy: budgeted tool use or a metered memory agent, or
the long-context reference without budget and cut; a run recorded as unmetered forms its own group); runs
of another family never join these groups. ``compare`` pairs two collections
of runs episode by episode (same episode file digest) and reports the mean composite difference with a
bootstrap interval and a sign-flip p-value over episodes.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import RunError
from .. import Board

#: How deep below a given directory ``results.json`` files of a run collection are looked for.
MAX_DEPTH = 3


def read_results(run_dir: Path) -> dict[str, Any] | None:
    """The budget ``results.json`` of ``run_dir``, or None when it has none (or another family's)."""
    path = run_dir / "results.json"
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RunError(f"{run_dir}: unreadable results.json ({exc})") from None
    return data if isinstance(data, dict) and data.get("family") == "budget" else None


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


def protocol_of(results: dict[str, Any]) -> str:
    """What must match, besides the tier, for two runs to be ranked together: the harness policy, the format,
    and whether the harness metered the agent's memory (a run recorded as unmetered never joins metered ones;
    runs that do not say were all metered by the harness's own store)."""
    metered = results.get("metered", True) is True
    return f"{results.get('policy')}/v{results.get('format_version')}" + ("" if metered else "/unmetered")


@dataclass(frozen=True)
class _Run:
    label: str
    results: dict[str, Any]

    @property
    def composite(self) -> float | None:
        value = self.results["score"].get("composite")
        return None if value is None else float(value)

    @property
    def episode(self) -> str:
        r = self.results
        return f"{r['tier']}/{r['domain']}/seed{r['seed']}/salt{r['salt']}"


def _load(run_dirs: list[Path]) -> list[_Run]:
    from ...report.load import unique_labels

    dirs = [d for root in run_dirs for d in run_dirs_under(Path(root))]
    runs = []
    for d, label in zip(dirs, unique_labels(dirs), strict=True):
        results = read_results(d)
        if results is None or not isinstance(results.get("score"), dict):
            raise RunError(f"{d}: not a budget-family run (no results.json with a score)")
        runs.append(_Run(label, results))
    return runs


COLUMNS = ("group", "rank", "run", "agent", "store", "tier", "protocol", "episode", "composite", "breadth",
           "maintenance", "reasoning", "efficiency", "abstention", "writes used", "reference writes", "flags")


def _cell(x: Any) -> str:
    if isinstance(x, float):
        return f"{x:.3f}"
    return "-" if x is None else str(x)


def leaderboard(run_dirs: list[Path]) -> Board:
    """Rank budget runs by composite within groups of the same tier and protocol.

    Runs without a composite are listed, unranked, after the ranked runs of their group. Composites equal at
    3 decimals share a rank (shown ``=N``).
    """
    runs = _load(run_dirs)
    groups: dict[tuple[str, str], list[_Run]] = {}
    for run in runs:
        groups.setdefault((str(run.results["tier"]), protocol_of(run.results)), []).append(run)
    full: list[list[Any]] = []
    notes: list[str] = []
    for g, ((tier, proto), members) in enumerate(groups.items(), start=1):
        scored = sorted((r for r in members if r.composite is not None), key=lambda r: (-round(r.composite or 0, 3),
                                                                                          r.label))
        shown = [round(r.composite or 0.0, 3) for r in scored]
        ordered: list[tuple[_Run, str]] = []
        for i, r in enumerate(scored):
            rank = shown.index(shown[i]) + 1
            ordered.append((r, f"={rank}" if shown.count(shown[i]) > 1 else str(rank)))
        ordered += [(r, "-") for r in members if r.composite is None]
        for r, shown_rank in ordered:
            s = r.results["score"]
            flags = (("no composite",) if r.composite is None else ()) + (
                (f"search fell back to BM25: {r.results['search_embedder_problem']}",)
                if r.results.get("search_embedder_problem") else ())
            full.append([g, shown_rank, r.label, r.results.get("agent"), r.results.get("store"), tier, proto, r.episode,
                         r.composite, s.get("breadth"), s.get("maintenance"), s.get("reasoning"),
                         s.get("efficiency"), s.get("abstention"), s.get("writes_used"), s.get("reference_writes"),
                         "; ".join(flags)])
        episodes = {r.episode for r in members}
        if len(episodes) > 1:
            notes.append(f"note: group {g} (budget, tier {tier}, {proto}) spans {len(episodes)} episodes; each "
                         "run's composite is of its own episode")
    if len(groups) > 1:
        notes.append("note: runs differ in tier or protocol; each group is ranked separately")
    rows = [[_cell(x) for x in row] for row in full]
    md = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    from ...report.leaderboard import markdown_cell

    md += ["| " + " | ".join(markdown_cell(c) for c in row) + " |" for row in rows]
    explain = ("\nBudget-family runs are ranked by composite (0.30 breadth + 0.25 maintenance + 0.25 reasoning + "
               "0.20 efficiency) only within a group of the same tier and protocol; runs without a composite are "
               "listed but not ranked. Equal composites at 3 decimals share a rank (=N).\n")
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(COLUMNS)
    writer.writerows(["" if x is None else x for x in row] for row in full)
    return Board(family="budget", title="amemgym leaderboard: budget family (ranked within tier and protocol)",
                 columns=COLUMNS, rows=rows, notes=notes, markdown="\n".join(md) + "\n" + explain, csv=buf.getvalue())


@dataclass(frozen=True)
class Pairing:
    """Two run collections matched episode by episode.

    Attributes:
        diffs: per shared episode (label), the composite difference B - A (one value each).
        composite_a, composite_b: per shared episode, each side's composite.
        only_a, only_b: episodes (labels) run on one side only, or without a composite on the other.
        protocols: the protocols seen on each side.
    """

    diffs: dict[str, list[float]]
    composite_a: dict[str, float]
    composite_b: dict[str, float]
    only_a: list[str]
    only_b: list[str]
    protocols: tuple[set[str], set[str]]


def _by_episode(root: Path) -> dict[str, _Run]:
    runs = _load([root])
    if not runs:
        raise RunError(f"{root}: no budget-family run (results.json) here or up to {MAX_DEPTH} levels below")
    out: dict[str, _Run] = {}
    for r in runs:
        key = str(r.results.get("environment_sha256"))
        if key in out:
            raise RunError(f"{root}: episode {r.episode} was run twice ({out[key].label} and {r.label}); "
                           "compare needs one run per episode on each side")
        out[key] = r
    return out


def pair_runs(run_a: Path, run_b: Path) -> Pairing:
    """Match two run collections by episode (the digest of the episode file) on the composite.

    Raises:
        RunError: when a side has no budget run, runs one episode twice, or no episode is scored on both.
    """
    a, b = _by_episode(run_a), _by_episode(run_b)
    shared = sorted(k for k in a.keys() & b.keys() if a[k].composite is not None and b[k].composite is not None)
    if not shared:
        raise RunError(f"{run_a} and {run_b} share no episode with a composite on both sides")
    diffs, ca, cb = {}, {}, {}
    for k in shared:
        label = a[k].episode
        ca[label], cb[label] = a[k].composite or 0.0, b[k].composite or 0.0
        diffs[label] = [cb[label] - ca[label]]
    return Pairing(diffs=diffs, composite_a=ca, composite_b=cb,
                   only_a=sorted(a[k].episode for k in a if k not in shared),
                   only_b=sorted(b[k].episode for k in b if k not in shared),
                   protocols=({protocol_of(r.results) for r in a.values()},
                              {protocol_of(r.results) for r in b.values()}))
