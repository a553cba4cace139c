"""The statetrack family (the original AMemGym setting) seen through the :class:`~amemgym.families.Family` protocol.

The family's code lives beside this module (``data/``, ``generate/``, ``runner.py``, ``validity/``, ...) and in
the shared ``report/``; this module only forwards each command to it. Its own options of each command are in
``options.py``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.table import Table

from ...cli_common import err
from ...commands.validate import ValidateProgress, pick_embedder, print_report
from ...config import load_config
from ...console import styled
from ...engine.board import markdown_cell
from ...engine.lock import run_lock
from ...engine.ranking_flags import shown
from ...engine.read import unique_labels
from ...engine.trials import is_trials_dir
from ...errors import AMemGymError, BackendUnavailable, ConfigError, RunError
from ...llm.client import LLMClient
from ...llm.preflight import preflight
from ...report.aggregate import cell_counts, degeneracy_flags
from ...report.build import build_report
from ...report.figures import write_figures
from ...report.leaderboard import (
    display_columns,
    display_rows,
    leaderboard,
    protocol_fields,
    protocol_key,
    to_csv,
    to_markdown,
    trials_flag,
)
from ...report.load import load_run, load_runs
from ...report.stats import cell_differences, paired_comparison, result_rows, shared_cell_means
from ...runfiles import MANIFEST
from ...storage import atomic_write_json, write_output_json, write_output_text
from ...urls import public_url
from .. import Board, ExportResult, GenerateRequest, RunRequest, ValidateRequest
from .command import run_request
from .data.io import load_environment, save_environment
from .generate.llm.base import STAGES, Limits
from .generate.llm.pipeline import generate_llm
from .generate.personas import load_personas
from .generate.procedural import generate_procedural, select_domains
from .generate.progress import GenerationProgress
from .options import GenerateOptions, RunOptions, ValidateOptions
from .protocol import protocol_difference
from .validity.exposure import recognise_pack
from .validity.reading import TextJudge, judge_mode, judge_note, llm_judge
from .validity.strategies import TextVectors
from .validity.suite import FAMILIES, run_suite

if TYPE_CHECKING:
    from rich.console import Console


class StateTrack:
    """Simulated users whose state changes over periods, probed with multiple-choice questions."""

    name = "statetrack"
    generate_options = GenerateOptions
    validate_options = ValidateOptions
    run_options = RunOptions

    def owns_run(self, run_dir: Path) -> bool:
        """A statetrack run directory has a ``manifest.json``; a ``--trials`` output has one per trial."""
        return (run_dir / MANIFEST).is_file() or is_trials_dir(run_dir)

    def generate(self, request: GenerateRequest[GenerateOptions], console: Console) -> int:
        """The procedural generator or the LLM pipeline: ``data.json`` plus ``generation_report.json``."""
        r, o, out_dir = request, request.options, request.out_dir
        cfg = load_config(r.config, r.sets)
        pool = load_personas(o.personas) if o.personas else None
        if o.generator != "procedural":
            preflight(cfg.llm, ["generator"])  # a wrong model name stops here, not after the first user's calls
        with run_lock(out_dir, "amemgym generate"):
            if o.generator == "procedural":
                names = [n.strip() for n in o.domains.split(",") if n.strip()] if o.domains is not None else None
                if names == []:
                    raise ConfigError("--domains names no domain; leave it out for every built-in domain")
                chosen = select_domains(names, o.packs or ())
                env, report = generate_procedural(cfg.env, seed=r.seed, num_users=o.users, salt=r.salt,
                                                  personas=pool, domains=chosen)
                save_environment(env, out_dir / "data.json")
                atomic_write_json(out_dir / "generation_report.json", report)
                console.print(f"wrote {out_dir / 'data.json'} ({len(env.users)} users, {env.num_periods} periods) "
                              f"and {out_dir / 'generation_report.json'}")
                return 0

            llm = LLMClient.from_config(cfg.llm, serial=cfg.run.serial)
            progress = GenerationProgress(o.users or cfg.env.num_user_profiles, len(STAGES), llm.ledger)

            async def go() -> object:
                try:
                    return await generate_llm(cfg.env, llm, out_dir, num_users=o.users, seed=r.seed,
                                              personas=pool, allow_partial=True,
                                              concurrency=cfg.run.user_concurrency,
                                              limits=Limits(strict_checks=o.strict_checks), progress=progress)
                finally:
                    progress.close()
                    await llm.aclose()

            result = asyncio.run(go())
            failed = getattr(result, "failed", [])
            console.print(f"report: {out_dir / 'generation_report.json'}")
            if getattr(result, "data_path", None):
                console.print(f"wrote {result.data_path}")  # type: ignore[attr-defined]
            report = getattr(result, "report", {})
            if report:
                rates = {k: report[k]["pass_rate"] for k in ("answer_reflection", "exposure_check")}
                console.print(f"check pass rates: answer reflection {rates['answer_reflection']}, exposure "
                              f"{rates['exposure_check']}; {report['unverified_items']} unverified item(s) kept "
                              "(listed in the report)", highlight=False)
            if failed:
                for f in failed:
                    console.print(f"failed user {f.user_id} ({f.name}) at step {f.step}: {f.reason}",
                                  highlight=False, markup=False)
                if not o.allow_partial:
                    raise AMemGymError(f"{len(failed)} user(s) could not be generated (see the report); "
                                       "pass --allow-partial to accept a partial environment")
        return 0

    def validate(self, request: ValidateRequest[ValidateOptions], console: Console) -> int:
        """Shortcut strategies against random, the reference agents, the data audit; 1 if any check fails."""
        r, o = request, request.options
        if not 0 <= o.margin < 1:
            raise ConfigError(f"--margin must be in [0, 1), got {o.margin}")
        environment = load_environment(r.env)
        embed, name, note = pick_embedder(o.embedder)
        if note:
            err.print(note, highlight=False, markup=False)

        mode = judge_mode(o.judge)
        judge = None if mode == "never" else _judge(load_config(r.config, r.sets).llm)
        # Steps: the text reader, the judge's reading (when it has users to read), embeddings, each family, gates.
        reads = mode == "always" or (mode == "auto" and bool(recognise_pack(environment)[1]))
        progress = ValidateProgress(len(FAMILIES) + 3 + int(reads) - int(mode == "always"))
        try:
            report = run_suite(environment, TextVectors(embed), margin=o.margin, seed=o.seed, embedder=name,
                               gate_prior=o.gate_prior, judge=judge, judge_all=mode == "always",
                               progress=progress)
        finally:
            progress.close()
        if note:
            report.notes.append(note)
        print_report(report)
        if r.json_out is not None:
            write_output_json(r.json_out, {"environment_file": str(r.env), **report.to_dict()})
            console.print(f"results: {r.json_out}")
        return 0 if report.passed else 1

    def run(self, request: RunRequest[RunOptions], console: Console) -> int:
        """The on-policy (or replayed) run with per-period evaluation, optionally as several trials."""
        return run_request(request, console)

    def report(self, run_dirs: list[Path], out_file: Path, *, env: Path | None, figures: Path | None,
               console: Console) -> int:
        """Tables, curves, diagnosis, heat maps and the trace browser in one HTML file (plus figures)."""
        rep = build_report(list(run_dirs), env_override=env)
        write_output_text(out_file, rep.html)
        for note in rep.notes:
            console.print(f"note: {note}", highlight=False, markup=False)
        console.print(f"wrote {out_file}", highlight=False, markup=False)
        if figures is not None:
            paths = write_figures(rep.figures, figures)
            console.print(f"wrote {len(paths)} figure files to {figures}", highlight=False, markup=False)
        return 0

    def leaderboard(self, run_dirs: list[Path]) -> Board:
        """Memory-score ranking within groups of the same environment and protocol."""
        # One unreadable folder (of a glob like runs/*) is listed with its reason; the others are still boarded.
        runs, skipped, lost = [], [], []
        for root, label in zip(run_dirs, unique_labels(list(run_dirs)), strict=True):
            try:
                runs.append(load_run(root, label))
            except AMemGymError as exc:
                # Most reasons open with the folder already; it is named once.
                why = str(exc) if str(exc).startswith(f"{root}: ") else f"{root}: {exc}"
                skipped.append(f"not boarded: {why}")
                lost.append((label, str(exc)))
        if not runs:
            raise RunError(skipped[0].removeprefix("not boarded: ") if len(skipped) == 1
                           else f"no run could be boarded ({len(skipped)} folders): {skipped[0]}")
        entries = leaderboard(runs)
        notes = [f"DEGENERATE (not ranked) {e.summary.label}: {'; '.join(e.summary.flags)}; memory "
                 f"score {e.summary.memory_text()}" for e in entries if e.summary.degenerate]
        notes += skipped
        if len({e.group for e in entries}) > 1:
            notes.append("note: runs differ in environment or protocol; each group is ranked separately")
        return Board(family=self.name, title="amemgym leaderboard (ranked within each group)",
                     columns=display_columns(), rows=display_rows(entries), notes=notes,
                     markdown=to_markdown(entries) + "".join(f"\n{markdown_cell(line)}\n" for line in skipped),
                     csv=to_csv(entries, lost))

    def compare(self, run_a: Path, run_b: Path, *, bootstrap: int, seed: int, console: Console) -> int:
        """Memory-score difference over shared (user, period) cells, users resampled."""
        a, b = load_runs([run_a, run_b])
        if a.environment_sha256 != b.environment_sha256:
            raise RunError(f"{a.root} and {b.root} were run on different environments (sha256 "
                           f"{str(a.environment_sha256)[:12]} vs {str(b.environment_sha256)[:12]}; a paired "
                           "comparison needs the same environment" + _cut_hint(a, b) + ")")
        diffs = cell_differences(a.metrics.get("per_user") or {}, b.metrics.get("per_user") or {})
        if not diffs:
            raise RunError("the runs share no (user, period) cell with a defined memory score")
        res = paired_comparison(diffs, resamples=bootstrap, seed=seed)
        shared = shared_cell_means(a.metrics.get("per_user") or {}, b.metrics.get("per_user") or {})
        table = Table("quantity", "value", title=f"{b.label} (B) vs {a.label} (A): memory score, B - A")
        table.add_row("shared users / cells", f"{res.users} / {res.cells}")
        table.add_row("memory score A / B (headline: mean over users)", f"{_mean(a.metrics)} / {_mean(b.metrics)}")
        if shared is not None:
            # The difference below is over the shared cells, each counted once: these are its two sides.
            table.add_row("memory score A / B over the shared cells", f"{shared[0]:.4f} / {shared[1]:.4f}")
        for row in result_rows(res, "user"):
            table.add_row(*row)
        for name, run in (("A", a), ("B", b)):
            excluded, total = cell_counts(run.metrics)
            if total:
                table.add_row(f"cells excluded from {name}'s memory score (UB <= R)", f"{excluded}/{total}")
            flags = degeneracy_flags(run.metrics)
            table.add_row(f"flags of {name}", "; ".join(shown(f) for f in flags) or "-")

        for name, run in (("A", a), ("B", b)):
            if run.metrics.get("trials"):
                table.add_row(f"{name}: trials", trials_flag(run.metrics["trials"]))
        console.print(table)
        for name, run in (("A", a), ("B", b)):
            for flag in degeneracy_flags(run.metrics):
                console.print(styled("red", "DEGENERATE", f" run {name} ({run.label}): {flag}; the difference says "
                                     "little about memory"), highlight=False)
        if protocol_key(a) != protocol_key(b):
            pa, pb = protocol_fields(a), protocol_fields(b)
            differ = "; ".join(protocol_difference(k, pa.get(k), pb.get(k), sides=("in A", "in B"))
                               for k in pa if pa.get(k) != pb.get(k))
            console.print(styled("red", "PROTOCOL", f" differs ({differ}): the difference is not the agents' alone"),
                          highlight=False)
        if not (a.complete and b.complete):
            console.print("note: at least one run is incomplete; only cells present in both are compared",
                          highlight=False, markup=False)
        return 0

    def make_env(self, env: Path | None, **options: Any) -> Any:
        """:class:`~amemgym.train.MemoryEnv` on the file ``env`` (None: the bundled tiny environment)."""
        # Imported on use: importing amemgym.train registers every family's Gymnasium ids, which loads this module.
        from ...train.env import MemoryEnv

        return MemoryEnv(env, **options)

    def export(self, run_dir: Path, out_file: Path, *, fmt: str, unit: str | None,
               with_evaluation: bool) -> ExportResult:
        """Conversations (and optionally scored evaluations) per user or session (:mod:`amemgym.train.export`)."""
        # Imported on use, as in make_env.
        from ...train.export import export_run

        s = export_run(run_dir, out_file, fmt=fmt, with_evaluation=with_evaluation, unit=unit or "episode")
        notes: tuple[str, ...] = ()
        if s.left_out:
            notes = (f"left out {s.left_out} wrongly answered evaluation(s): no trainable target "
                     "(use --format jsonl to keep every answer with its reward)",)
        if s.unchecked:
            notes += (f"note: sessions not counted against the environment ({s.unchecked})",)
        return ExportResult(s.path, s.lines, f"{s.users} users, {s.sessions} sessions, {s.evaluations} evaluation "
                            "answers", notes)


def _judge(cfg: Any) -> Any:
    """The judge role as ``validate``'s text reader; nothing is built or checked until it has a user to read.

    When the judge cannot be reached the command stops with one line (exit 2): a demanding user never gets
    an exit 0 on a file whose text nobody could read unless they asked for that with ``--no-judge``.
    """
    url = cfg.chat_base_url("judge")
    model = cfg.endpoint("judge").model or ("(server default)" if url else cfg.embedded.model)
    where = f"{model} at {public_url(url)}" if url else f"embedded {model}"
    note = judge_note(where if url else model, embedded=url is None)

    def read(env: Any, users: set[str]) -> Any:
        try:
            preflight(cfg, ["judge"])
        except (BackendUnavailable, ConfigError) as exc:
            raise type(exc)(f"the judge role cannot read this file's openings ({exc}); give it a reachable model "
                            "(llm.roles.judge or OPENAI_BASE_URL; the embedded model needs amemgym[local]), or "
                            "pass --no-judge to accept exposure UNCHECKED") from None

        periods = sum(len(u.periods) for u in env.users if u.id in users)
        err.print(f"exposure: the judge role ({where}) reads {periods} period(s) of {len(users)} user(s), one call "
                  "each (--no-judge skips it; their exposure then stays unchecked)", highlight=False, markup=False)
        return llm_judge(LLMClient.from_config(cfg), where, note, close=True).read(env, users)

    return TextJudge(f"LLM judge ({where})", note, read)


def _cut_hint(*runs: Any) -> str:
    """``; A ran --limit 2``: why two runs of one file can still be on different environments."""
    cuts = [f"{r.label} ran --limit {r.manifest['environment_cut']['limit']}" for r in runs
            if isinstance(r.manifest.get("environment_cut"), dict)]
    return f"; {', '.join(cuts)}" if cuts else ""


def _mean(metrics: dict[str, Any]) -> str:
    m = ((metrics.get("overall") or {}).get("memory_score") or {}).get("mean")
    return "-" if m is None else f"{m:.4f}"


#: The registered instance.
FAMILY = StateTrack()
