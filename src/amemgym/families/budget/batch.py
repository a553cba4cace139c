"""``amemgym run`` for the budget family: one episode file, or a folder of them, optionally as several trials.

Each episode found under ``--env`` (``folders.py`` says where and in which order) runs into
``OUT/<its folder relative to --env>/`` (a single file runs into ``OUT`` itself). Episodes run concurrently,
at most ``run.user_concurrency`` at once (one with ``--serial``) on one client whose limiter paces the calls;
under ``--executor ray`` each is a Ray task (``ray_tasks.py``). One lock covers ``OUT``; the agent's served
model is pinned once in ``OUT/model.json``; ``OUT/batch.json`` lists the planned episodes and the settings a
resume must match. A re-run skips finished episodes and resumes an unfinished one from its checkpoint.
With ``--trials N`` the whole thing runs N times into ``OUT/trial_k`` with run seeds ``run.seed + k - 1``
and ``OUT/trials.json`` holds the spread (docs/design.md §15).
"""

from __future__ import annotations

import asyncio
import copy
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Column, Table

from ...agents.guard import set_call_limit
from ...config import AppConfig
from ...errors import AMemGymError, ConfigError, DataError, RunError
from ...llm.client import LLMClient
from ...llm.usage import UsageLedger
from ...run.lock import run_lock
from ...storage import atomic_write_json, remove_stale_temps
from ..folders import episode_files
from .harness import env_digest, wall_clock
from .io import load_episode
from .model import Episode
from .pool import BATCH_FILE, STATS, Entry, RunResult, build_entries, read_batch, read_results
from .run import AGENTS, RESULTS_VERSION, check_model, interface_of, refuse_judge, run_episode
from .scoring import AXES
from .tool_agents import read_pin

BATCH_VERSION = 1


@dataclass(frozen=True)
class EpisodeFile:
    """One episode to run: its data file, where its results go (relative to ``OUT``), and its content."""

    rel: str
    path: Path
    episode: Episode
    digest: str

    @property
    def label(self) -> str:
        """tier/domain/seedN of the episode."""
        e = self.episode
        return f"{e.tier.name}/{e.domain}/seed{e.seed}"


@dataclass(frozen=True)
class Settings:
    """What every episode of one run shares and a resume must match (the policy only for built-in agents)."""

    agent: str
    run_seed: int
    tools: str = "text"

    @property
    def policy(self) -> str | None:
        """The harness policy of a built-in tool agent; None for plug-ins and memory agents (their own check)."""
        return AGENTS[self.agent][0] if self.agent in AGENTS else None


def find_episodes(env: Path, limit: int | None) -> list[EpisodeFile]:
    """The episodes of ``--env`` (a file, or a folder of ``data.json`` files), the first ``limit`` of them.

    Raises:
        ConfigError: for a ``limit`` below 1.
        DataError: for a folder without episodes, or any episode file that does not load.
    """
    if limit is not None and limit < 1:
        raise ConfigError(f"--limit must be at least 1, got {limit}")
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
        out.append(EpisodeFile(rel, path, episode, env_digest(raw)))
    return out


def _finished(out: Path, ep: EpisodeFile, s: Settings) -> bool:
    """Whether ``out`` holds this episode's final results under these settings.

    Raises:
        RunError: when ``out`` holds another episode, policy, agent or run seed.
    """
    ckpt = out / "checkpoint.json"
    if ckpt.is_file():
        try:
            data = json.loads(ckpt.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raise RunError(f"{ckpt}: unreadable checkpoint; remove the folder to run the episode again") from None
        other_policy = s.policy is not None and data.get("policy") != s.policy
        other_agent = data.get("agent") is not None and data.get("agent") != s.agent
        if data.get("digest") != ep.digest or other_policy or other_agent:
            raise RunError(f"{out} holds a run of another episode, policy or agent than {ep.path}; use a new --out")
    pinned = read_pin(out)
    if pinned is not None and pinned.protocol in ("native", "text") and s.tools not in ("auto", pinned.protocol):
        raise RunError(f"{out}: was run with the {pinned.protocol} tool protocol, now {s.tools!r} is asked for; "
                       "a resume keeps its protocol (use a new --out directory)")
    results = read_results(out)
    if results is None:
        return False
    if results.get("environment_sha256") != ep.digest:
        raise RunError(f"{out} holds the results of another episode than {ep.path}; use a new --out")
    if "run_seed" not in results:
        return False  # written before the run's own fields were added: finishing costs no call
    have = (results.get("agent"), results.get("run_seed"))
    if have != (s.agent, s.run_seed):
        raise RunError(f"{out} was run with agent {have[0]!r} and run seed {have[1]}, now {s.agent!r} and seed "
                       f"{s.run_seed}; use a new --out")
    return True


def _write_batch(out_dir: Path, s: Settings, served: str, env: Path, episodes: list[EpisodeFile],
                 summary: dict[str, Any] | None = None, kind: tuple[str | None, str | None] = (None, None)) -> None:
    """Write ``batch.json``; planned episodes accumulate over invocations (a smaller ``--limit`` keeps them).

    ``kind`` is the (policy, store) the episodes' results record, once one has finished.

    Raises:
        RunError: when the folder holds a run with other settings.
    """
    old = read_batch(out_dir)
    planned: dict[str, dict[str, Any]] = {}
    if old is not None:
        have = (old.get("agent"), old.get("run_seed"))
        if have != (s.agent, s.run_seed):
            raise RunError(f"{out_dir} holds a run of agent {have[0]!r} with run seed {have[1]}; use a new --out")
        kind = (kind[0] or old.get("policy"), kind[1] or old.get("store"))
        planned = {str(e["path"]): e for e in old.get("episodes") or []}
    for ep in episodes:
        e = ep.episode
        planned[ep.rel] = {"path": ep.rel, "sha256": ep.digest, "tier": e.tier.name, "domain": e.domain,
                           "seed": e.seed, "salt": e.salt}
    from ..folders import natural_key

    atomic_write_json(out_dir / BATCH_FILE, {
        "family": "budget", "kind": "batch", "format_version": BATCH_VERSION, "environment": str(env),
        "agent": s.agent, "policy": kind[0] or s.policy, "store": kind[1], "results_version": RESULTS_VERSION,
        "run_seed": s.run_seed, "agent_model": served,
        "episodes": [planned[k] for k in sorted(planned, key=natural_key)],
        "summary": summary if summary is not None else (old or {}).get("summary"),
    })


def _counted_view(llm: LLMClient) -> LLMClient:
    """The same client (backends, limiters, cache, in-flight calls) counting into its own ledger.

    Episodes share one client so one limiter paces all their calls; each episode's ``results.json`` still
    reports its own usage.
    """
    view = copy.copy(llm)
    view.ledger = UsageLedger()
    # The embedder is created on first use and stored on the object that asked: resolve it on ``llm``
    # so every episode shares one embedding model instead of loading its own.
    view.embedder = llm.embedder  # type: ignore[method-assign]
    return view


def entry_summary(entries: list[Entry]) -> dict[str, Any]:
    """Per entry (agent, tier, protocol): episodes, and mean with a t-interval over episodes of each number."""
    return {f"{e.agent}/{e.tier}/{e.protocol}": {"agent": e.agent, "tier": e.tier, "protocol": e.protocol,
                                                 "episodes": len(e.episode_set),
                                                 **{n: e.stat(n) for n in STATS}} for e in entries}


def _ci(stat: dict[str, Any]) -> str:
    if stat.get("mean") is None:
        return "n/a"
    if stat.get("lo") is None:
        return f"{stat['mean']:.3f} (one episode, no interval)"
    return f"{stat['mean']:.3f} [{stat['lo']:.3f}, {stat['hi']:.3f}] (95 % t-interval over episodes)"


def print_summary(console: Console, out_dir: Path, rows: list[tuple[EpisodeFile, dict[str, Any] | None, str]],
                  entries: list[Entry]) -> None:
    """The per-episode table, then per tier the mean composite with its interval over episodes."""
    first = rows[0][1] if len(rows) == 1 else None
    if first is not None:
        ep, results = rows[0][0], first
        s = results["score"]
        table = Table("axis", "score", title=f"budget/{ep.label} - {results['agent']} ({results['policy']})")
        for name in (*AXES, "composite", "abstention", "accuracy"):
            v = s[name]
            table.add_row(name, "n/a" if v is None else f"{v:.3f}")
        console.print(table)
    else:
        table = Table(Column("episode", overflow="fold"), "tier", "composite", "abstention", "accuracy",
                      "writes / ref", "calls", "status",
                      title=f"budget run: {len(rows)} episode(s) - {out_dir}")
        for ep, res, status in rows:
            if res is None:
                table.add_row(ep.rel, ep.episode.tier.name, "-", "-", "-", "-", "-", status)
                continue
            s = res["score"]
            table.add_row(ep.rel, ep.episode.tier.name, *(("n/a" if s[n] is None else f"{s[n]:.3f}")
                                                          for n in ("composite", "abstention", "accuracy")),
                          f"{s['writes_used']} / {s['reference_writes']}",
                          str(res.get("usage", {}).get("total", {}).get("calls", 0)), status)
        console.print(table)
    done = [r for _, r, _ in rows if r is not None]
    protocols = sorted({f"{r['tool_protocol']} ({r.get('tool_protocol_reason')})" for r in done
                        if "tool_protocol" in r})
    if protocols:  # memory agents answer through the MemoryAgent contract, without tools
        console.print(f"tool protocol: {'; '.join(protocols)}", highlight=False, markup=False)
    judged = [r for r in done if r.get("judge") is not None]
    if judged:
        sent, turned, errors = (sum(r["judge"][k] for r in judged) for k in ("sent", "overturned", "errors"))
        comps = [r["score_judged"]["composite"] for r in judged
                 if r.get("score_judged") and r["score_judged"].get("composite") is not None]
        mean = f"{sum(comps) / len(comps):.3f} over {len(comps)} episode(s)" if comps else "n/a (a judge call failed)"
        console.print(f"judge {judged[0]['judge']['model']}: {sent} rule failures sent, {turned} found right, "
                      f"{errors} failed; composite with the judge {mean} (the rule composite is the headline)",
                      highlight=False, markup=False)
    metered = [r for r in done if "refused_writes" in r]
    if metered:
        console.print(f"the harness's meter refused {sum(r['refused_writes'] for r in metered)} memory write(s) "
                      f"and cut {sum(r['truncated_writes'] for r in metered)} to the note cap", highlight=False)
    for e in entries:
        console.print(f"{e.agent} on tier {e.tier} ({e.protocol}), {len(e.episode_set)} episode(s): composite "
                      f"{_ci(e.stat('composite'))}; abstention, reported apart: "
                      f"{_ci(e.stat('abstention'))}", highlight=False, markup=False)
    if len(entries) > 1:
        console.print("note: the episodes span several tiers or protocols; each is summarised on its own, never "
                      "averaged together", highlight=False, markup=False)


@dataclass(frozen=True)
class RunOptions:
    """The ``run`` options the budget family honours."""

    agent: str
    serial: bool = False
    no_cache: bool = False
    allow_model_change: bool = False
    limit: int | None = None
    executor: str = "local"
    ray_address: str | None = None
    judge: bool = False


def run_batch(cfg: AppConfig, env: Path, out_dir: Path, opts: RunOptions, *, console: Console,
              episodes: list[EpisodeFile] | None = None, make_client: Any = None) -> int:
    """Run (or resume) every episode of ``env`` into ``out_dir``; print the summary; return the exit code.

    ``make_client`` builds the client from the run's config (default: its endpoints and cache; tests pass a
    scripted one); locally one client serves every episode, under Ray each task builds its own.

    Raises:
        ConfigError: for an agent, executor or option this family cannot honour.
        DataError: for an episode file that does not load, or a folder without episodes.
        RunError: when ``out_dir`` is in use, or holds a run of other episodes, settings or model.
    """
    eps = episodes if episodes is not None else find_episodes(env, opts.limit)
    settings = Settings(opts.agent, cfg.run.seed, cfg.budget.tools)
    judge = opts.judge or cfg.budget.judge
    llm_cfg = cfg.llm.model_copy(update={"cache": False}) if opts.no_cache else cfg.llm
    serial = opts.serial or cfg.run.serial
    llm = make_client(cfg.model_copy(update={"llm": llm_cfg})) if make_client is not None else \
        LLMClient.from_config(llm_cfg, serial=serial)
    llm.sample_seed = settings.run_seed
    interface = interface_of(opts.agent, eps[0].path, llm)
    memory_role = False
    if interface == "memory":
        from .memory_agents import plan_agent

        refuse_judge(judge)
        plan = plan_agent(opts.agent, llm)  # an unmeterable agent is refused before anything is written
        memory_role = "memory" in (plan.spec.roles or ("memory",))
    roles = ("agent", *(("memory",) if interface == "memory" else ()), *(("judge",) if judge else ()))
    if opts.executor == "ray":
        from ...run.ray_executor import check_endpoints, import_ray

        import_ray()
        check_endpoints(cfg.model_copy(update={"llm": llm_cfg}), roles)
    failures: list[dict[str, Any]] = []
    skipped: set[str] = set()
    t0 = wall_clock()

    async def go() -> None:
        try:
            served = await llm.model_identity("agent")
            if judge:
                from .judging import judge_identity

                await judge_identity(llm)  # the model under test as its own judge is refused before any episode
            # A memory agent's writes come from the memory role: its model is pinned as the agent's is.
            others = {"memory": await llm.model_identity("memory")} if memory_role else {}
            changes = check_model(out_dir, served, allow_change=opts.allow_model_change, roles=others)
            todo = [ep for ep in eps if ep.rel not in skipped]
            _write_batch(out_dir, settings, served, env, eps)
            extra = {"agent_model": served, "model_changes": changes, "run_seed": settings.run_seed}
            if opts.executor == "ray":
                from .ray_tasks import run_on_ray

                failures.extend(await run_on_ray(
                    cfg.model_copy(update={"llm": llm_cfg}), out_dir, [(ep.path, ep.rel, ep.label) for ep in todo],
                    opts.agent, served, extra, address=opts.ray_address, ledger=llm.ledger,
                    make_client=make_client, roles=roles, judge=judge))
                return
            gate = asyncio.Semaphore(1 if serial else max(1, cfg.run.user_concurrency))

            async def play(ep: EpisodeFile) -> None:
                async with gate:
                    view = _counted_view(llm)
                    try:
                        results = await run_episode(ep.path, opts.agent, out_dir / ep.rel, view,
                                                    tools=cfg.budget.tools, judge=judge)
                    except (ConfigError, DataError):
                        raise  # bad input: one line and exit 2, not one failed episode among others
                    except AMemGymError as exc:
                        failures.append({"episode": ep.rel, "label": ep.label, "error": str(exc)})
                        return
                    finally:
                        llm.ledger.merge(view.ledger)
                    results.update(extra, episode_path=ep.rel)
                    atomic_write_json(out_dir / ep.rel / "results.json", results)

            await asyncio.gather(*(play(ep) for ep in todo))
        finally:
            await llm.aclose()

    out_dir.mkdir(parents=True, exist_ok=True)
    with run_lock(out_dir, "amemgym run"):
        remove_stale_temps(out_dir)  # left by a killed invocation; this one holds the lock
        skipped.update(ep.rel for ep in eps if _finished(out_dir / ep.rel, ep, settings))
        set_call_limit(cfg.run.agent_call_timeout)
        asyncio.run(go())
        rows: list[tuple[EpisodeFile, dict[str, Any] | None, str]] = []
        found: list[RunResult] = []
        failed = {f["episode"]: f["error"] for f in failures}
        for ep in eps:
            results = read_results(out_dir / ep.rel)
            if results is None or ep.rel in failed:
                rows.append((ep, None, f"failed: {failed.get(ep.rel, 'no results')}"))
                continue
            rows.append((ep, results, "done earlier (skipped)" if ep.rel in skipped else "done"))
            found.append(RunResult(out_dir / ep.rel, str(out_dir), results))
        entries = build_entries(found)
        batch = read_batch(out_dir) or {}
        kind = (found[0].results.get("policy"), found[0].results.get("store")) if found else (None, None)
        _write_batch(out_dir, settings, str(batch.get("agent_model")), env, eps, entry_summary(entries), kind)
        if failures:
            atomic_write_json(out_dir / "failures.json", {"family": "budget", "failures": failures})
        else:
            (out_dir / "failures.json").unlink(missing_ok=True)
    print_summary(console, out_dir, rows, entries)
    total = llm.ledger.to_dict()["total"]
    console.print(f"this invocation: {total['calls']} model calls, {total.get('cache_hits', 0)} cache hits, "
                  f"{total['prompt_tokens']} prompt + {total['completion_tokens']} completion tokens, "
                  f"{wall_clock() - t0:.1f} s; results under {out_dir}", highlight=False)
    if failures:
        console.print(f"[red]{len(failures)} episode(s) failed[/red] (see {out_dir / 'failures.json'}); re-run the "
                      "same command to retry them", highlight=False)
        return 1
    return 0


def run_trials(cfg: AppConfig, env: Path, out_dir: Path, opts: RunOptions, trials: int, *, console: Console,
               make_client: Any = None) -> int:
    """``--trials N``: the run N times into ``OUT/trial_k`` (run seed ``run.seed + k - 1``), then ``trials.json``."""
    eps = find_episodes(env, opts.limit)
    base = cfg.run.seed
    codes = []
    with run_lock(out_dir, "amemgym run --trials"):
        for k in range(1, trials + 1):
            trial_cfg = cfg.model_copy(deep=True)
            trial_cfg.run.seed = base + k - 1
            console.print(f"trial {k}/{trials} (run seed {trial_cfg.run.seed})", highlight=False)
            codes.append(run_batch(trial_cfg, env, out_dir / f"trial_{k}", opts, console=console, episodes=eps,
                                   make_client=make_client))
        summary = trial_summary(out_dir, trials)
        atomic_write_json(out_dir / "trials.json", summary)
    for key, t in summary["pooled"].items():
        std = "n/a" if t["spread"]["std"] is None else f"{t['spread']['std']:.4f}"
        passk = "n/a" if t["consistency"] is None else f"{t['consistency']:.3f}"
        console.print(f"{key}: composite per trial {', '.join(_num(x) for x in t['composite_per_trial'])}; std "
                      f"between trials {std}; pass^{t['k']} over questions {passk}", highlight=False, markup=False)
    console.print(f"trials summary: {out_dir / 'trials.json'}", highlight=False)
    return max(codes)


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def trial_summary(out_dir: Path, trials: int) -> dict[str, Any]:
    """Per trial its seed, completeness, per-entry composite and flags; pooled, the spread and pass^k."""
    from .board import load_entries

    rows = []
    for k in range(1, trials + 1):
        d = out_dir / f"trial_{k}"
        batch = read_batch(d) or {}
        entries = load_entries([d]) if d.is_dir() else []
        failures_path = d / "failures.json"
        failed = len(json.loads(failures_path.read_text(encoding="utf-8")).get("failures", [])) \
            if failures_path.is_file() else 0
        flags = [f"{failed} episode(s) failed"] if failed else []
        for e in entries:
            if e.unfinished:
                flags.append(f"{e.agent}/{e.tier}: {len(e.unfinished)} planned episode(s) unfinished")
            if e.episodes_without_composite:
                flags.append(f"{e.agent}/{e.tier}: no composite on {len(e.episodes_without_composite)} episode(s)")
            if any(r.results.get("search_embedder_problem") for r in e.runs):
                flags.append(f"{e.agent}/{e.tier}: search fell back to BM25")
        rows.append({"trial": d.name, "run_seed": batch.get("run_seed"), "complete": not flags,
                     "composite": {f"{e.agent}/{e.tier}/{e.protocol}": e.stat("composite") for e in entries},
                     "flags": flags})
    pooled = {}
    for e in load_entries([out_dir]):
        t = e.trials()
        pooled[f"{e.agent}/{e.tier}/{e.protocol}"] = {
            "episodes": len(e.episode_set), "composite": e.stat("composite"),
            **(t or {"k": 1, "seeds": e.seeds, "same_episodes": True, "composite_per_trial": [e.stat("composite")
               ["mean"]], "spread": {"mean": e.stat("composite")["mean"], "std": None, "n": 1},
               "questions_in_all_trials": 0, "consistency": None, "pass_at_1": None})}
    return {"family": "budget", "trials": rows, "pooled": pooled, "definitions": {
        "composite": "per entry (agent, tier, protocol): mean over episodes; pooled, each episode's trials are "
                     "averaged first, so the interval is over episodes",
        "spread": "each trial's mean composite over its episodes; their mean and sample standard deviation",
        "consistency": "pass^k: share of (episode, question) asked in all k trials answered correctly in all k",
    }}
