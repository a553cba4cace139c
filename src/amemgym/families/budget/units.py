"""The budget family on the engine's contract: episodes are the units (``amemgym.engine.contract``).

- ``units``: the episode files of ``--env`` (``folders.py`` order), grouped by tier;
- ``plan``: which contract the agent implements (a tool agent in the harness's seat, or a memory agent the
  harness meters), the roles it calls, and what a resume must match;
- ``pins``: the tool protocol, chosen once (``budget.tools``; ``auto`` probes the endpoint) and kept in the
  manifest, and the judge checked not to be the model under test;
- ``play``: the harness (``run.py``) from the engine's checkpoint, returning the episode's results record;
- panels: the summary lines, board flags and notes, and report panels only this family has.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...config import AppConfig
from ...engine.checkpoint import Checkpoint, read_trace
from ...engine.contract import AgentPlan, Unit, UnitRow
from ...engine.play import play_file
from ...engine.pool import Entry
from ...engine.report import Panel, SeriesPanel, TablePanel, TracePanel
from ...engine.summary import ci_text
from ...errors import ConfigError
from ...scoring.intervals import mean_ci
from ..folders import episode_files
from . import metrics as _metrics  # noqa: F401  (registers the axes and composite)
from .harness import env_digest
from .io import load_episode
from .judging import judge_identity
from .memory_agents import plan_agent
from .model import FAMILY
from .policies import AGENTS
from .run import RESULTS_VERSION, interface_of, play_episode, refuse_judge
from .tiers import get_tier
from .tool_agents import ProtocolChoice, choose_protocol, keep_choice

if TYPE_CHECKING:
    from rich.console import Console

    from ...llm.client import LLMClient

__all__ = ["UNITS", "BudgetUnits", "protocol_label", "run_episode"]


def protocol_label(record: Mapping[str, Any]) -> str:
    """What must match, besides the tier, for two episodes' results to be ranked together: the harness policy,
    the results version, and whether the harness metered the agent's memory (a run recorded as unmetered never
    joins metered ones)."""
    metered = record.get("metered", True) is True
    version = record.get("results_version", RESULTS_VERSION)
    return f"{record.get('policy')}/v{version}" + ("" if metered else "/unmetered")


class BudgetUnits:
    """Budget episodes as engine units."""

    name: str = FAMILY
    noun: str = "episodes"
    #: What a unit's group is called on boards (units of two tiers are never averaged together).
    group_noun: str = "tier"

    def units(self, env: Path, limit: int | None) -> list[Unit]:
        """The episodes of ``--env`` (a file, or a folder of ``data.json`` files), the first ``limit`` of them.

        Raises:
            ConfigError: for a ``limit`` below 1.
            DataError: for a folder without episodes, or any episode file that does not load.
        """
        if limit is not None and limit < 1:
            raise ConfigError(f"--limit must be at least 1, got {limit}")
        # Absolute, so each episode's results name a file that ``export`` finds from any working directory.
        env = env.absolute()
        if env.is_dir():
            paths = episode_files(env)
            rels = [p.parent.relative_to(env).as_posix() for p in paths]
        else:
            paths, rels = [env], ["."]
        if limit is not None:
            paths, rels = paths[:limit], rels[:limit]
        out = []
        for path, rel in zip(paths, rels, strict=True):
            episode, raw = load_episode(path)
            e = episode
            out.append(Unit(rel, path, env_digest(raw), e.tier.name, f"{e.tier.name}/{e.domain}/seed{e.seed}",
                            {"tier": e.tier.name, "domain": e.domain, "seed": e.seed, "salt": e.salt}, episode))
        return out

    def plan(self, agent: str, cfg: AppConfig, llm: LLMClient, first: Unit) -> AgentPlan:
        """A tool agent (built-in or plug-in) or a metered memory agent; an unmeterable one is refused here."""
        judge = cfg.budget.judge
        interface = interface_of(agent, first.path, llm)
        roles = ["agent"]
        # A plug-in (module:factory, file.py:factory, or an agent config file naming one) is code we do not
        # control: it plays in a worker process.
        plugin = interface == "tool" and agent not in AGENTS
        if interface == "memory":
            refuse_judge(judge)
            plan = plan_agent(agent, llm)
            plugin = plan.spec.plugin
            if "memory" in (plan.spec.roles or ("memory",)):
                roles.append("memory")  # a memory agent's writes come from this role: pinned as the agent's is
        if judge:
            roles.append("judge")
        protocol = {"interface": interface, "policy": AGENTS[agent][0] if agent in AGENTS else None}
        return AgentPlan(agent, tuple(roles), protocol, {"judge": judge}, plugin=plugin)

    async def pins(self, plan: AgentPlan, cfg: AppConfig, llm: LLMClient, pinned: Mapping[str, Any]) -> dict[str, Any]:
        """The tool protocol (kept from ``pinned`` on resume); the judge refused when it is the model under test."""
        if plan.options["judge"]:
            await judge_identity(llm)
        if plan.protocol["interface"] != "tool":
            return {}
        old = pinned.get("tool_protocol")
        before = None if old is None else ProtocolChoice(str(old["protocol"]), str(old["reason"]))
        if plan.agent in AGENTS:
            choice = await choose_protocol(llm, cfg.budget.tools, before)
        else:
            choice = keep_choice(before, ProtocolChoice("plugin", f"plug-in tool agent {plan.agent}"))
        return {"tool_protocol": {"protocol": choice.protocol, "reason": choice.reason}}

    async def play(self, unit: Unit, plan: AgentPlan, pins: Mapping[str, Any], llm: LLMClient, cfg: AppConfig,
                   checkpoint: Checkpoint) -> dict[str, Any]:
        """The harness on one episode; its results record with the engine's pooling fields."""
        pin = pins.get("tool_protocol") or {"protocol": "text", "reason": "memory agents call no tools"}
        record = await play_episode(unit.path, plan.agent, llm, checkpoint,
                                    choice=ProtocolChoice(str(pin["protocol"]), str(pin["reason"])),
                                    judge=bool(plan.options["judge"]))
        return {**record, "protocol": protocol_label(record), "variant": record.get("store")}

    def describe(self, record: Mapping[str, Any]) -> dict[str, Any]:
        """The pooling fields of a record written on its own (no run directory around it)."""
        return {"group": str(record.get("tier")), "protocol": protocol_label(record), "variant": record.get("store"),
                "label": f"{record.get('tier')}/{record.get('domain')}/seed{record.get('seed')}"}

    # ---- panels --------------------------------------------------------------------------------------
    def summary(self, console: Console, rows: list[UnitRow]) -> None:
        """Tool protocol, judge, meter and, per tier, abstention (reported apart from the composite)."""
        done = [r.record for r in rows if r.record is not None]
        protocols = sorted({f"{r['tool_protocol']} ({r.get('tool_protocol_reason')})" for r in done
                            if "tool_protocol" in r})
        if protocols:  # memory agents answer through the MemoryAgent contract, without tools
            console.print(f"tool protocol: {'; '.join(protocols)}", highlight=False, markup=False)
        judged = [r for r in done if r.get("judge") is not None]
        if judged:
            sent, turned, errors = (sum(r["judge"][k] for r in judged) for k in ("sent", "overturned", "errors"))
            comps = [r["score_judged"]["composite"] for r in judged
                     if r.get("score_judged") and r["score_judged"].get("composite") is not None]
            mean = (f"{statistics.fmean(comps):.3f} over {len(comps)} episode(s)" if comps
                    else "n/a (a judge call failed)")
            console.print(f"judge {judged[0]['judge']['model']}: {sent} rule failures sent, {turned} found right, "
                          f"{errors} failed; composite with the judge {mean} (the rule composite is the headline)",
                          highlight=False, markup=False)
        metered = [r for r in done if "refused_writes" in r]
        if metered:
            console.print(f"the harness's meter refused {sum(r['refused_writes'] for r in metered)} memory write(s) "
                          f"and cut {sum(r['truncated_writes'] for r in metered)} to the note cap", highlight=False)
        tiers: dict[str, list[float]] = {}
        for r in done:
            value = (r.get("score") or {}).get("abstention")
            tiers.setdefault(str(r.get("tier")), [])
            if value is not None:
                tiers[str(r.get("tier"))].append(float(value))
        for tier, xs in tiers.items():
            console.print(f"tier {tier}: abstention, reported apart: {ci_text(mean_ci(xs), 'episodes')}",
                          highlight=False, markup=False)

    def board_flags(self, entry: Entry) -> list[str]:
        """Search that fell back to BM25 alone (the embedder failed) is flagged."""
        problems = {r.record["search_embedder_problem"] for r in entry.runs if r.record.get("search_embedder_problem")}
        return [f"search fell back to BM25: {sorted(problems)[0]}"] if problems else []

    def board_notes(self, entry: Entry) -> list[str]:
        """With the optional judge, the composite under its second verdicts beside the ranked rule composite."""
        if not any(r.record.get("judge") for r in entry.runs):
            return []
        per: dict[str, list[float]] = {}
        for r in entry.runs:
            value = (r.record.get("score_judged") or {}).get("composite")
            per.setdefault(r.digest, [])
            if value is not None:
                per[r.digest].append(float(value))
        have = [statistics.fmean(v) for v in per.values() if v]
        mean = "n/a" if not have else f"{statistics.fmean(have):.3f}"
        return [f"note: {entry.root} ({entry.agent}, {entry.group}, {entry.protocol}): composite with the optional "
                f"judge's second verdicts {mean} over {len(have)} of {len(per)} episode(s) (a judge call failed on "
                "the others); the board ranks the rule composite"]

    def pooled_panels(self, records: Sequence[Mapping[str, Any]]) -> list[Panel]:
        """One episode's trials (in run-seed order) pooled: per question kind, the answers right over every
        trial, with each trial's own count beside it."""
        kinds: dict[str, list[tuple[int, int]]] = {}
        for i, record in enumerate(records):
            for kind, v in (record.get("per_kind") or {}).items():
                kinds.setdefault(kind, [(0, 0)] * len(records))[i] = (int(v["correct"]), int(v["total"]))
        seeds = [r.get("run_seed") for r in records]
        rows = [(kind, f"{sum(c for c, _ in per)}/{sum(n for _, n in per)}",
                 ", ".join(f"{c}/{n} (run seed {s})" for (c, n), s in zip(per, seeds, strict=True)))
                for kind, per in sorted(kinds.items())]
        return [TablePanel(f"Accuracy per question kind over {len(records)} trials",
                           ("kind", "correct over all trials", "each trial"), rows)]

    def report_panels(self, unit_dir: Path, record: Mapping[str, Any]) -> list[Panel]:
        """Accuracy per question kind, writes over time against the budget, the answers and the tool calls."""
        kinds = TablePanel("Accuracy per question kind", ("kind", "correct"),
                           [(k, f"{v['correct']}/{v['total']}") for k, v in (record.get("per_kind") or {}).items()])
        budget = None if record.get("policy") == "long-context" else get_tier(str(record["tier"])).writes
        series = SeriesPanel("Budget used over time", [float(x) for x in record.get("writes_over_time") or []],
                             None if budget is None else float(budget),
                             "writes used after each event, against the episode's write budget")
        answers = TablePanel("Answers", ("id", "kind", "reply", "gold", "correct"),
                             [(qid, str(a.get("kind")), str(a.get("reply")), str(a.get("gold")),
                               f"{'yes' if a.get('correct') else 'no'}: {a.get('reason')}")
                              for qid, a in (record.get("answers") or {}).items()])
        steps = []
        for rec in read_trace(unit_dir):
            what = rec.get("tool") or "protocol error"
            result = rec.get("result") or rec.get("error") or ""
            steps.append((f"event {int(rec.get('event', -1)) + 1} ({rec.get('kind', '')})",
                          f"step {rec.get('step')}: {what}", f"{rec.get('args', {})}\n{result}"))
        return [kinds, series, answers, TracePanel("Tool calls", steps)]


#: The registered instance.
UNITS = BudgetUnits()


async def run_episode(env: Path, agent: str, out_dir: Path, llm: LLMClient, *, tools: str = "text",
                      judge: bool = False) -> dict[str, Any]:
    """Play (or resume) the one episode file ``env`` into ``out_dir`` through the engine, without a run directory
    around it (a Gym-style or test use); returns the record the engine wrote to ``out_dir/results.json``.

    Raises:
        ConfigError: for an agent this family cannot run, or the judge asked of a memory agent's run.
    """
    cfg = AppConfig()
    cfg.budget.tools = tools  # type: ignore[assignment]
    cfg.budget.judge = judge
    return await play_file(UNITS, env, agent, out_dir, llm, cfg)
