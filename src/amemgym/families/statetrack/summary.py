"""The console summary of a statetrack run: the headline table, what each number means, flags, answers, usage."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from ...console import styled
from ...engine.usage import incomplete_note
from ...llm.health import describe as describe_problem
from ...llm.health import empty_note, truncation_note, uncounted_note
from ...scoring.registry import in_display_order, registered
from .metrics import RESULT_FLAGS
from .validity.sim_audit import degenerate_warning

__all__ = ["MEANINGS", "headline_text", "print_summary"]


def _fmt(stat: dict[str, Any] | None) -> str:
    if not stat or stat.get("mean") is None:
        return "n/a"
    if stat.get("lo") is None:
        return f"{stat['mean']:.3f}"
    return f"{stat['mean']:.3f} [{stat['lo']:.3f}, {stat['hi']:.3f}]"


def _num(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, int | float) else str(value if value is not None else "n/a")


#: What each headline number means, in the words a first-time reader needs; a metric not listed here is
#: explained by its registry description.
MEANINGS = {
    "overall": "share of the questions the agent answered right, with its memory",
    "upper_bound": "share right when the bare model is told the user's current state: the most memory can give",
    "random": "expected share right when guessing uniformly among the options: the floor",
    "memory_score": "(overall - random) / (upper bound - random) per user and period, averaged over users: "
                    "0 is no better than random, 1 is as good as the upper bound",
}


def headline_text(overall: dict[str, Any]) -> str:
    """The memory score as the console shows it: ``undefined`` for a degenerate run, whose value is noise."""
    if overall.get("flags"):
        return "undefined (DEGENERATE run)"
    return _fmt(overall.get("memory_score"))


def print_summary(console: Console, metrics: dict[str, Any], rundir: Path) -> None:
    """The short summary printed after a run: a table, what each number means, flags, answers, usage."""
    o = metrics["overall"]
    flags = list(o.get("flags") or [])
    table = Table("metric", "mean [95% CI over users]", title=f"{metrics.get('agent')} - {rundir}")
    cells = o.get("memory_cells") or {}
    meanings: list[str] = []
    for m in (m for m in in_display_order() if m.name in o):
        text = headline_text(o) if m.name == "memory_score" else _fmt(o[m.name])
        if m.name == "memory_score" and cells.get("total"):
            text += f" ({cells['undefined']}/{cells['total']} cells excluded: UB <= R)"
        table.add_row(m.name, text)
        meaning = MEANINGS.get(m.name, m.description)
        if m.name == "memory_score" and flags:
            meaning += f"; undefined here ({'; '.join(flags)})"
        meanings.append(f"{m.label}: {meaning}")
    for m in registered("pooled"):
        v = m.read(o)
        # A grouped rate is named with its group's singular: "write failure rate".
        name = f"{m.label} {m.group.removesuffix('s').replace('_', ' ')}" if m.group else m.label
        table.add_row(name, "n/a" if v is None else f"{v:.3f}")
        meanings.append(f"{name}: {m.description}")
    console.print(table)
    for line in meanings:
        console.print(line, highlight=False, markup=False, soft_wrap=True)
    for flag in o.get("flags") or []:
        console.print(styled("red", "DEGENERATE", f": {flag} - {RESULT_FLAGS.get(flag, '')}. This run is reported "
                             "but not ranked on the leaderboard."), highlight=False)
    warning = degenerate_warning(metrics.get("simulator"))
    if warning:
        console.print(styled("yellow", warning), highlight=False)
    problems = metrics.get("endpoint_problems") or []
    for problem in problems:
        console.print(styled("red", describe_problem(problem)), highlight=False)
    answers = metrics.get("answers") or {}
    if answers.get("total"):
        counts = ", ".join(f"{k.replace('_', ' ')} {n}" for k, n in answers["status_counts"].items() if k != "ok")
        rule = "the original's rule (0 = last option, else random)" if answers.get("rule") == "original" \
            else "strict: scored wrong"
        strict, original = _num(answers.get("overall_strict")), _num(answers.get("overall_original_rule"))
        if answers["invalid"]:
            console.print(f"invalid answers: {answers['invalid']} of {answers['total']}"
                          + (f" ({counts})" if counts else "") + f"; headline uses {rule}. overall strict "
                          f"{strict}, original rule {original}", highlight=False)
        else:
            console.print(f"invalid answers: 0 of {answers['total']}", highlight=False)
    orig = o.get("memory_score_original")
    if orig is not None:
        console.print(f"memory score, original aggregation (mean over all user x period cells, unguarded): "
                      f"{_num(orig)}{' (noise: DEGENERATE run)' if flags else ''}; amemgym's: {headline_text(o)} "
                      "over users, "
                      f"{o.get('undefined_memory_cells', 0)} undefined cell(s) excluded", highlight=False)
    for diff in (metrics.get("protocol_settings") or {}).get("differences_from_original", []):
        console.print(f"note: {diff}; numbers are not comparable with published results", highlight=False)
    usage = metrics.get("usage", {}).get("last_invocation", {}).get("total", {})
    console.print(
        f"this invocation: {usage.get('calls', 0)} model calls, {usage.get('cache_hits', 0)} cache hits, "
        f"{usage.get('prompt_tokens', 0)} prompt + {usage.get('completion_tokens', 0)} completion tokens, "
        f"{metrics.get('wall_seconds_last_invocation', 0):.1f} s", highlight=False)
    lost = incomplete_note(metrics.get("usage", {}).get("incomplete"))
    if lost:
        console.print(lost, highlight=False, markup=False)
    replays = int(usage.get("cache_replays") or 0)
    if replays:
        # A run repeated with the same seed, model and prompts (trial 1 of a --trials run included) replays its
        # earlier replies: cheap, but not a new sample, so it is said.
        asked = replays + int(usage.get("calls") or 0)
        console.print(f"note: {replays} of {asked} replies came from the response cache (an earlier call with the "
                      "same model, prompt and seed), not from the model; pass --no-cache for fresh samples",
                      highlight=False, markup=False)
    last = metrics.get("usage", {}).get("last_invocation", {})
    # Kept empty replies stay in the records, so the whole run's count is said, not only this invocation's.
    whole = metrics.get("usage", {}).get("cumulative", {})
    for note in (truncation_note(last), uncounted_note(last), empty_note(whole)):
        if note:
            console.print(note, highlight=False, markup=False)
