"""``amemgym validate`` (shortcut strategies, reference agents, data audit) and ``amemgym audit-sim``."""

from __future__ import annotations

import asyncio
import inspect
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..cli_common import ConfigOpt, SetOpt, check_output, handled, out
from ..config import load_config
from ..console import new_console, styled
from ..engine.lock import run_lock
from ..errors import BackendUnavailable, ConfigError, LLMError
from ..families import DEFAULT_FAMILY, OptionValue, ValidateRequest, family_for_env, family_for_run, family_options
from ..families.statetrack.finished import check_planned, refuse_unfinished, run_manifest
from ..families.statetrack.layout import RunDir
from ..families.statetrack.validity.audit import CHECKS
from ..families.statetrack.validity.sim_audit import DEGENERATE_WARN, audit_run, environment_of
from ..families.statetrack.validity.suite import DECISION_RULE
from ..llm.client import LLMClient
from ..llm.embedder import MiniLMEmbedder, embedder_status
from ..runfiles import SIM_AUDIT
from ..testing.scripted_model import HashEmbedder

EMBEDDERS = ("auto", "minilm", "hash")


def pick_embedder(name: str) -> tuple[Any, str, str | None]:
    """The embedding function for the embedding strategies, its name, and a note when it fell back.

    ``auto`` uses the embedded MiniLM when installed, else the hashing embedder; ``minilm`` requires it.
    """
    if name not in EMBEDDERS:
        raise ConfigError(f"--embedder must be one of {', '.join(EMBEDDERS)}, got {name!r}")
    if name in ("auto", "minilm"):
        ok, detail = embedder_status()
        if ok:
            return MiniLMEmbedder().embed, "minilm", None
        if name == "minilm":
            raise BackendUnavailable(detail)
        note = f"note: MiniLM embedder unavailable ({detail}); embedding strategies use the hashing embedder"
        return HashEmbedder().embed_sync, "hash", note
    return HashEmbedder().embed_sync, "hash", None



def _ci(lo: float | None, hi: float | None) -> str:
    return "n/a" if lo is None or hi is None else f"[{lo:.3f}, {hi:.3f}]"


class ValidateProgress:
    """Which step of ``validate`` is running: a live line on a terminal, one plain line per finished step
    otherwise (never a repeated heartbeat)."""

    def __init__(self, steps: int, console: Any = None, live: bool | None = None) -> None:
        """Show ``steps`` steps on ``console`` (default stderr), live when it is a terminal (or ``live``)."""
        self.console = console if console is not None else new_console(stderr=True)
        self.steps = steps
        self.done = 0
        self._bar: Any = None
        if sys.stderr.isatty() if live is None else live:
            self._bar = Progress(TextColumn("validate: {task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), console=self.console, transient=True)
            self._task = self._bar.add_task("starting", total=steps)
            self._bar.start()

    def __call__(self, step: str, seconds: float | None) -> None:
        """The suite's callback: ``seconds`` is None when ``step`` starts, its duration when it ends."""
        if seconds is None:
            if self._bar is not None:
                self._bar.update(self._task, description=step)
            return
        self.done += 1
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done)
        else:
            self.console.print(f"validate: {step} done in {seconds:.1f} s ({self.done}/{self.steps})",
                               highlight=False, markup=False)

    def close(self) -> None:
        """Stop the live line."""
        if self._bar is not None:
            self._bar.stop()


def print_report(report: Any, max_rows: int = 20) -> None:
    """Tables for the strategies, the leaky questions and the audit warnings."""
    interval = next((s.interval for s in report.strategies if s.verdict != "info"), "")
    table = Table("strategy", "family", "accuracy", f"CI ({interval})", "baseline", "excess", "verdict",
                  title=f"validity: {report.users} users, {report.answers} answers, random baseline "
                        f"{report.random_baseline:.3f}, margin {report.margin}")
    colours = {"fail": "red", "borderline": "yellow", "pass": "green", "info": "dim"}
    for s in report.strategies:
        where = f" ({len(s.period_flags)} period(s))" if s.period_flags else ""
        table.add_row(s.name, s.family, f"{s.accuracy:.3f}", _ci(s.lo, s.hi), f"{s.baseline:.3f}",
                      f"{s.excess:+.3f}", styled(colours[s.verdict], f"{s.verdict}{where}"))
    out.print(table)
    out.print(f"rule: {DECISION_RULE} (gated kinds: {', '.join(report.gated_kinds)}; {report.tests.get('pooled', 0)} "
              f"pooled and {report.tests.get('per_period', 0)} per-period tests; embedder: {report.embedder})",
              highlight=False, markup=False)
    if report.timings:
        out.print("time per step: " + ", ".join(f"{k} {v:.1f} s" for k, v in report.timings.items()),
                  highlight=False, markup=False)
    if report.leaky_questions:
        out.print(styled("yellow", f"{len(report.leaky_questions)} leaky question(s)", " (an options-only strategy is "
                         "right at >= 90% of periods while the correct option moves):"), highlight=False)
        for q in report.leaky_questions[:max_rows]:
            out.print(f"  user {q.user} question {q.question} via {q.strategy} ({q.hits:g}/{q.periods}): "
                      f"{q.query[:90]}", highlight=False, markup=False)
    else:
        out.print("no leaky questions")
    for item in report.broken_items[:max_rows]:
        out.print(f"  broken: {item}", highlight=False, markup=False)
    audit = report.audit
    for check, meaning in CHECKS.items():
        n = audit.count(check)
        if n:
            out.print(styled("yellow", "warning", f": {n}/{audit.checked[check]} {check} ({meaning})"),
                      highlight=False)
            for f in [f for f in audit.findings if f.check == check][:5]:
                where = f"user {f.user}" + (f" period {f.period}" if f.period is not None else "")
                out.print(f"    {where}: {f.detail}", highlight=False, markup=False)
    exposure = report.text_exposure
    if exposure is not None:
        out.print(f"exposure read from the text ({exposure.reader}): {exposure.changes} change(s), "
                  f"{len(exposure.findings)} finding(s)", highlight=False, markup=False)
        for f in exposure.findings[:max_rows]:
            out.print(f"  user {f.user} period {f.period}: {f.detail}", highlight=False, markup=False)
    for item in report.duplicate_options[:max_rows]:
        out.print(f"  duplicate options: {item}", highlight=False, markup=False)
    for note in report.notes:
        out.print(f"note: {note}", highlight=False, markup=False)
    for line in report.borderline:
        out.print(styled("bold yellow", "BORDERLINE", f": {line}"), highlight=False)
    if report.exposure_unchecked:
        out.print(styled("bold yellow", "WARNING", f": {report.exposure_unchecked}"), highlight=False)
    for failure in report.failures:
        out.print(styled("red", "FAIL", f": {failure}"), highlight=False)
    if report.passed:
        caveat = " (BUT EXPOSURE UNCHECKED, see the warning above)" if report.exposure_unchecked else ""
        out.print(styled("green", "PASS", ": no memoryless strategy beats its baseline by more than the margin; "
                         f"reference agents hold{caveat}"), highlight=False)


def register(app: typer.Typer) -> None:
    """Add ``validate`` and ``audit-sim`` to ``app``."""

    @app.command("validate")
    @handled
    def validate(
        env: Annotated[Path, typer.Option("--env", help="Environment file to check.")],
        margin: Annotated[float, typer.Option("--margin", help="How far above random a shortcut may score.")]
        = 0.03,
        seed: Annotated[int, typer.Option("--seed", help="Recorded with the results; the verdict does not depend "
                                          "on it (every strategy is scored by its exact expectation).")] = 0,
        embedder: Annotated[str, typer.Option("--embedder", help="auto (MiniLM if installed, else hash), "
                                              "minilm or hash.")] = "auto",
        json_out: Annotated[Path | None, typer.Option("--json", help="Also write the full results here.")] = None,
        gate_prior: Annotated[bool, typer.Option("--gate-prior", help="Also fail on the prior strategies "
                                                 "(they know earlier periods' answers).")] = False,
        judge: Annotated[bool | None, typer.Option(
            "--judge/--no-judge", show_default="auto",
            help="Who reads each period's opening texts to check that every change is stated. Default (auto): "
                 "the built-in content pack's phrasings for the users whose variables it recognises (no model "
                 "call), the judge role (one call per user and period; the embedded model unless a config gives "
                 "the judge an endpoint) for the others. --judge: the judge reads every user. --no-judge: no "
                 "judge; users the pack cannot read are reported as exposure UNCHECKED (exit 0). A judge that "
                 "cannot be reached stops validate with one line (exit 2).")] = None,
        config: ConfigOpt = None,
        set_: SetOpt = None,
        seeds: Annotated[int, typer.Option("--seeds", help="budget family: also validate seeds 0..N-1 of every "
                                           "domain at the file's tier.")] = 0,
    ) -> None:
        """Check that no memoryless strategy beats its baseline and that the reference agents hold (exit 1 if not)."""
        check_output(json_out, "--json")
        family = family_for_env(env)
        defaults = {name: p.default for name, p in inspect.signature(validate).parameters.items()}
        own = {name: OptionValue(flag, value, value != defaults[name]) for name, flag, value in (
            ("margin", "--margin", margin), ("seed", "--seed", seed), ("embedder", "--embedder", embedder),
            ("gate_prior", "--gate-prior", gate_prior), ("judge", "--no-judge" if judge is False else "--judge", judge),
            ("seeds", "--seeds", seeds))}
        request = ValidateRequest(env=env, options=family_options(family, "validate", own), json_out=json_out,
                                  config=config, sets=set_)
        raise typer.Exit(family.validate(request, out))

    @app.command("audit-sim")
    @handled
    def audit_sim(
        rundir: Annotated[Path, typer.Argument(help="Run directory to audit.")],
        judge: Annotated[bool, typer.Option("--judge/--no-judge", help="Also ask the judge model about each "
                                            "turn (one call per turn).")] = False,
        env: Annotated[Path | None, typer.Option("--env", help="Environment file (default: the manifest's).")]
        = None,
        config: ConfigOpt = None,
        set_: SetOpt = None,
    ) -> None:
        """Check every simulator turn of a run for revealed values, goodbyes and copies; write sim_audit.json."""
        family = family_for_run(rundir)
        if family.name != DEFAULT_FAMILY:
            raise ConfigError(f"{rundir}: a {family.name}-family run; audit-sim applies to {DEFAULT_FAMILY} runs only "
                              "(it checks the simulated user's turns, which other families do not have)")
        rd = RunDir(rundir)
        # Rates over the turns of half a run would read as the run's: an unfinished or damaged run is refused,
        # as export refuses it.
        run_manifest(rd.root)  # not a run directory, or a --trials output, is said first
        refuse_unfinished(rd.root, "audit it")
        check_planned(rd.root)
        environment = environment_of(rd, env)

        async def go() -> dict[str, Any]:
            if not judge:
                return await audit_run(rd, environment)

            cfg = load_config(config, set_)
            llm = LLMClient.from_config(cfg.llm)
            try:
                return await audit_run(rd, environment, llm=llm)
            finally:
                await llm.aclose()

        with run_lock(rd.root, "amemgym audit-sim"):
            result = asyncio.run(go())
        print_sim_audit(result, rd.root / SIM_AUDIT)
        if judge and result.get("judge_failures"):
            # Rates over the judged turns only would read as a clean audit when the judge never answered.
            first = next((t.get("judge_error") for t in result.get("offending", []) if t.get("judge_error")), "")
            every = "every" if not result.get("judged") else f"{result['judge_failures']} of {result['turns']}"
            raise LLMError(f"{every} judge call(s) failed; the judge rates are incomplete: {first}")


def print_sim_audit(result: dict[str, Any], path: Path, max_rows: int = 30) -> None:
    """Rates per check and the offending turns."""
    table = Table("check", "flagged", "rate", title=f"simulator audit: {result['turns']} turns")
    for check, rate in result["rates"].items():
        table.add_row(check, str(result["counts"][check]), "n/a" if rate is None else f"{rate:.3f}")
    out.print(table)
    if result.get("degenerate_rate") is not None and result["degenerate_rate"] > DEGENERATE_WARN:
        out.print(styled("yellow", "warning", f": {result['degenerate']}/{result['turns']} simulator turns "
                         f"({result['degenerate_rate']:.0%}) are degenerate (empty, copies, echoes or repeats)"),
                  highlight=False)
    if result.get("judge_failures"):
        out.print(styled("yellow", f"{result['judge_failures']} judge call(s) failed", " (recorded per turn, not "
                         "scored)"), highlight=False)
    for t in result["offending"][:max_rows]:
        flags = ", ".join(t["flags"]) or "judge failed"
        extra = f" [{'; '.join(t['revealed'])}]" if t["revealed"] else ""
        out.print(f"  user {t['user']} period {t['period']} session {t['session']} round {t['round']}: {flags}{extra}"
                  f" - {t['excerpt']!r}", highlight=False, markup=False)
    if len(result["offending"]) > max_rows:
        out.print(f"  ... {len(result['offending']) - max_rows} more in {path}")
    out.print(f"results: {path}")
