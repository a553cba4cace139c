"""Many budget episodes in one run: layout, summary per tier, resume without re-running, --limit, trials."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from amemgym.cli import app
from amemgym.config import AppConfig, load_config
from amemgym.engine.runner import RunOptions, run_units
from amemgym.engine.trials import run_unit_trials
from amemgym.families import family_for_env
from amemgym.families.budget.generate import build_episode
from amemgym.families.budget.io import save_episode
from amemgym.families.budget.model import Episode
from amemgym.families.budget.units import UNITS
from amemgym.llm.client import LLMClient
from amemgym.llm.types import ChatRequest
from amemgym.scoring.intervals import mean_ci
from amemgym.testing.budget import BudgetScript, client_factory
from amemgym.testing.scripted_model import ScriptedBackend

EPISODES = (("lite", "cities", 0), ("lite", "companies", 0), ("lite", "films", 0))
#: The scripted tool agent: writes each document batch once, answers with the gold (or abstains on wrong domains).
Agent = BudgetScript
#: A run's client factory answering every call with the script (other test modules import it by this name).
factory = client_factory


@pytest.fixture(scope="module")
def envs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Episode]]:
    root = tmp_path_factory.mktemp("env")
    episodes = []
    for tier, domain, seed in EPISODES:
        ep = build_episode(tier, domain, seed)
        save_episode(ep, root / domain / f"seed{seed}" / "data.json")
        episodes.append(ep)
    return root, episodes


def run(env: Path, out: Path, agent: Agent, *, limit: int | None = None, serial: bool = True,
        seed: int = 0) -> tuple[int, str]:
    cfg = load_config("tiny")
    cfg.run.seed = seed
    log = io.StringIO()
    code = run_units(UNITS, cfg, env, out, RunOptions(agent="native", serial=serial, limit=limit),
                     console=Console(file=log, width=250), make_client=client_factory(agent))
    return code, log.getvalue()


def composites(out: Path) -> dict[str, float]:
    return {p.parent.relative_to(out).as_posix(): json.loads(p.read_text())["score"]["composite"]
            for p in sorted(out.rglob("results.json"))}


def test_every_episode_runs_into_its_folder_and_the_summary_is_a_t_interval_over_episodes(
        envs: tuple[Path, list[Episode]], tmp_path: Path) -> None:
    env, episodes = envs
    agent = Agent(episodes, wrong_domains=("films",))
    code, log = run(env, tmp_path / "out", agent, serial=False)
    assert code == 0, log
    got = composites(tmp_path / "out")
    assert list(got) == ["cities/seed0", "companies/seed0", "films/seed0"]
    assert got["cities/seed0"] > got["films/seed0"]  # the agent answers films wrong on purpose
    ci = mean_ci(list(got.values()))
    lo, hi = max(0.0, ci["lo"]), min(1.0, ci["hi"])  # type: ignore[type-var]
    assert f"composite {ci['mean']:.3f} [{lo:.3f}, {hi:.3f}]" in log
    assert "abstention, reported apart" in log
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert [u["id"] for u in manifest["units"]] == list(got) and manifest["family"] == "budget"
    assert not (tmp_path / "out" / "films" / "seed0" / "manifest.json").exists()
    # The same root files as a statetrack run.
    assert {p.name for p in (tmp_path / "out").iterdir() if p.is_file()} >= {
        "manifest.json", "metrics.json", "usage.json", "failures.json"}
    # Each episode reports its own usage, not the shared client's total.
    calls = [json.loads((tmp_path / "out" / r / "results.json").read_text())["usage"]["total"]["calls"] for r in got]
    # (the tool-protocol probe is the run's, made once before any episode, and counted in usage.json)
    assert sum(calls) == sum(agent.calls.values()) - agent.calls["probe"] and all(c > 0 for c in calls)
    usage = json.loads((tmp_path / "out" / "usage.json").read_text())["cumulative"]
    assert usage["total"]["calls"] == sum(agent.calls.values())


def test_limit_takes_the_first_episodes_in_natural_order(tmp_path: Path) -> None:
    env = tmp_path / "env"
    for seed in (10, 2, 1):  # natural order: seed1, seed2, seed10 (text order would put seed10 second)
        save_episode(build_episode("lite", "films", seed), env / "films" / f"seed{seed}" / "data.json")
    agent = Agent([build_episode("lite", "films", s) for s in (1, 2, 10)])
    code, log = run(env, tmp_path / "out", agent, limit=2)
    assert code == 0, log
    assert list(composites(tmp_path / "out")) == ["films/seed1", "films/seed2"]


def test_a_killed_run_resumes_without_rerunning_finished_episodes(envs: tuple[Path, list[Episode]],
                                                                  tmp_path: Path) -> None:
    env, episodes = envs
    reference = Agent(episodes)
    assert run(env, tmp_path / "ref", reference)[0] == 0
    per_domain = {d: reference.domain_calls(d) for _, d, _ in EPISODES}
    agent = Agent(episodes)
    # Serial order is cities, companies, films: die in the middle of companies.
    agent.kill_at = per_domain["cities"] + per_domain["companies"] // 2
    with pytest.raises(KeyboardInterrupt):
        run(env, tmp_path / "out", agent)
    assert (tmp_path / "out" / "cities" / "seed0" / "results.json").exists()
    assert not (tmp_path / "out" / "companies" / "seed0" / "results.json").exists()
    again = Agent(episodes)
    code, log = run(env, tmp_path / "out", again)
    assert code == 0, log
    assert again.domain_calls("cities") == 0  # finished: skipped, not replayed
    assert 0 < again.domain_calls("companies") < per_domain["companies"]  # resumed from its checkpoint
    assert again.domain_calls("films") == per_domain["films"]
    assert composites(tmp_path / "out") == composites(tmp_path / "ref")
    assert "done earlier (skipped)" in log
    # A third run has nothing to do.
    third = Agent(episodes)
    assert run(env, tmp_path / "out", third)[0] == 0 and sum(third.calls.values()) == 0


def test_a_resume_under_another_seed_is_refused(envs: tuple[Path, list[Episode]], tmp_path: Path) -> None:
    env, episodes = envs
    assert run(env, tmp_path / "out", Agent(episodes), limit=1)[0] == 0
    result = CliRunner().invoke(app, ["run", "--env", str(env), "--out", str(tmp_path / "out"), "--set",
                                      "run.seed=5"])
    assert result.exit_code == 2 and "run seed" in result.output


def test_mixed_tiers_are_summarised_per_tier_never_together(tmp_path: Path) -> None:
    env = tmp_path / "env"
    lite, std = build_episode("lite", "films", 0), build_episode("standard", "films", 0)
    save_episode(lite, env / "a" / "data.json")
    save_episode(std, env / "b" / "data.json")
    code, log = run(env, tmp_path / "out", Agent([lite, std]))
    assert code == 0, log
    flat = " ".join(log.split())
    assert "native on tier lite (budget/v1), 1 episode(s)" in flat
    assert "native on tier standard (budget/v1), 1 episode(s)" in flat
    assert "never averaged together" in flat
    groups = json.loads((tmp_path / "out" / "metrics.json").read_text())["groups"]
    assert sorted(groups) == ["lite", "standard"]


def test_bad_folders_exit_2_in_one_line(tmp_path: Path, original_env_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    res = CliRunner().invoke(app, ["run", "--env", str(empty), "--out", str(tmp_path / "o1")])
    assert res.exit_code == 2 and "no environment file" in res.output
    mixed = tmp_path / "mixed"
    save_episode(build_episode("lite", "films", 0), mixed / "b" / "data.json")
    (mixed / "s").mkdir()
    (mixed / "s" / "data.json").write_bytes(original_env_path.read_bytes())
    res = CliRunner().invoke(app, ["run", "--env", str(mixed), "--out", str(tmp_path / "o2")])
    assert res.exit_code == 2 and "mixes environment families" in " ".join(res.output.split())
    assert not (tmp_path / "o2").exists()
    res = CliRunner().invoke(app, ["run", "--env", str(mixed / "b"), "--out", str(tmp_path / "o3"),
                                   "--off-policy", str(tmp_path)])
    assert res.exit_code == 2 and "--off-policy" in res.output
    assert family_for_env(mixed / "b").name == "budget"


def one_error_line(args: list[str]) -> str:
    """The command's only output line: an error, with exit 2."""
    res = CliRunner().invoke(app, args)
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert res.exit_code == 2 and len(lines) == 1 and lines[0].startswith("error: "), res.output
    return " ".join(lines[0].split())


@pytest.mark.parametrize("damage", ["cut short", "not UTF-8"])
def test_compare_names_a_manifest_it_cannot_read(envs: tuple[Path, list[Episode]], tmp_path: Path,
                                                damage: str) -> None:
    env, episodes = envs
    for name in ("a", "b"):
        assert run(env, tmp_path / name, Agent(episodes), limit=1)[0] == 0
    manifest = tmp_path / "a" / "manifest.json"
    text = manifest.read_bytes()
    manifest.write_bytes(text[: len(text) // 2] if damage == "cut short" else b"\xff\xfe" + text)
    line = one_error_line(["compare", str(tmp_path / "a"), str(tmp_path / "b")])
    assert str(manifest) in line and "cannot mix" not in line
    assert ("truncated or not JSON" if damage == "cut short" else "not UTF-8") in line


def test_audit_sim_refuses_a_budget_run(envs: tuple[Path, list[Episode]], tmp_path: Path) -> None:
    env, episodes = envs
    assert run(env, tmp_path / "out", Agent(episodes), limit=1)[0] == 0
    line = one_error_line(["audit-sim", str(tmp_path / "out")])
    assert "budget-family run" in line and "audit-sim applies to statetrack runs only" in line
    assert not (tmp_path / "out" / "sim_audit.json").exists()


def test_trials_make_fresh_calls_and_write_their_spread(envs: tuple[Path, list[Episode]], tmp_path: Path) -> None:
    env, episodes = envs
    agent = Agent(episodes)
    cfg = load_config("tiny")
    log = io.StringIO()
    # A persistent cache shared by both trials: trial 2 must still reach the model for every call.
    cache_cfg = cfg.llm.model_copy(update={"cache_path": str(tmp_path / "cache.sqlite")})
    cfg.llm = cache_cfg

    def make(c: AppConfig) -> LLMClient:
        from amemgym.llm.cache import ResponseCache

        return LLMClient(backends={"agent": ScriptedBackend(agent)}, cache=ResponseCache(tmp_path / "cache.sqlite"))

    code = run_unit_trials(UNITS, cfg, env, tmp_path / "out", RunOptions(agent="native", serial=True, limit=2), 2,
                           console=Console(file=log, width=250), make_client=make)
    assert code == 0, log.getvalue()
    per_trial = [json.loads((tmp_path / "out" / f"trial_{k}" / "cities" / "seed0" / "results.json").read_text())
                 for k in (1, 2)]
    assert [r["run_seed"] for r in per_trial] == [0, 1]
    assert all(r["usage"]["total"]["calls"] > 0 and r["usage"]["total"].get("cache_hits", 0) == 0
               for r in per_trial)
    assert per_trial[1]["usage"]["total"]["calls"] == per_trial[0]["usage"]["total"]["calls"]
    summary = json.loads((tmp_path / "out" / "trials.json").read_text())
    assert [t["trial"] for t in summary["trials"]] == ["trial_1", "trial_2"]
    assert [t["run_seed"] for t in summary["trials"]] == [0, 1]
    assert all(t["flags"] == [] for t in summary["trials"])
    (pooled,) = summary["pooled"].values()
    assert pooled["k"] == 2 and pooled["units"] == 2 and pooled["consistency"] == 1.0
    assert pooled["spread"]["std"] == 0.0
    # The leaderboard reads the trials folder as one row over two episodes and two trials.
    res = CliRunner().invoke(app, ["leaderboard", str(tmp_path / "out"), "--out-csv", str(tmp_path / "b.csv")])
    assert res.exit_code == 0, res.output
    import csv

    (row,) = csv.DictReader(io.StringIO((tmp_path / "b.csv").read_text()))
    assert (row["episodes"], row["trials"]) == ("2", "2")
    rep = CliRunner().invoke(app, ["report", str(tmp_path / "out"), "--out", str(tmp_path / "r.html")])
    assert rep.exit_code == 0, rep.output


def _seeds_reach_the_backend(agent: Agent) -> Any:
    return agent.seeds


def test_each_trial_seed_reaches_every_call(envs: tuple[Path, list[Episode]], tmp_path: Path) -> None:
    env, episodes = envs
    seen = []
    for seed in (0, 1):
        agent = Agent(episodes)
        assert run(env, tmp_path / f"s{seed}", agent, limit=1, seed=seed)[0] == 0
        seen.append(_seeds_reach_the_backend(agent))
    assert None not in seen[0] and not (seen[0] & seen[1])


def test_the_cli_runs_a_folder_with_a_models_file(envs: tuple[Path, list[Episode]], tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from amemgym.testing.fake_endpoint import FakeEndpoint

    env, episodes = envs
    agent = Agent(episodes)

    def respond(body: dict) -> str:
        msgs = tuple({"role": m["role"], "content": m["content"]} for m in body["messages"])
        return agent(ChatRequest(role="agent", messages=msgs))

    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with FakeEndpoint(responder=respond, model="served-x") as ep:
        models = tmp_path / "models.yaml"
        models.write_text(f"agent:\n  base_url: {ep.base_url}\n  model: served-x\n", encoding="utf-8")
        res = CliRunner().invoke(app, ["run", "--env", str(env), "--out", str(tmp_path / "out"), "--models",
                                       str(models), "--limit", "2", "--set", "llm.cache=false"])
    assert res.exit_code == 0, res.output
    assert list(composites(tmp_path / "out")) == ["cities/seed0", "companies/seed0"]
    assert json.loads((tmp_path / "out" / "manifest.json").read_text())["models"]["agent"]["served"] == "served-x"


def test_episode_views_share_one_client_but_count_their_own_usage() -> None:
    import asyncio

    from amemgym.engine.play import counted_view as _counted_view
    from amemgym.testing.scripted_model import HashEmbedder

    made = []
    llm = LLMClient(backends={"agent": ScriptedBackend(lambda req: "ok")})

    async def make() -> Any:
        made.append(1)
        return HashEmbedder()

    llm._make_embedder = make  # type: ignore[method-assign]

    async def go() -> None:
        a, b = _counted_view(llm), _counted_view(llm)
        await a.embed(["x"])
        await b.embed(["y"])
        await a.chat("agent", [{"role": "user", "content": "hi"}])
        assert len(made) == 1  # one embedding model for every episode
        assert a.ledger.to_dict()["total"]["calls"] == 2 and b.ledger.to_dict()["total"]["calls"] == 1
        assert llm.ledger.to_dict()["total"]["calls"] == 0  # merged by the batch when an episode ends

    asyncio.run(go())


def test_a_failed_episode_exits_1_and_its_run_is_never_ranked_as_complete(
        envs: tuple[Path, list[Episode]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import csv

    from amemgym.errors import RunError
    from amemgym.families import get_family
    from amemgym.families.budget import units

    env, episodes = envs
    real = units.play_episode

    async def failing(path: Path, agent: str, llm: LLMClient, checkpoint: Any, **options: Any) -> dict[str, Any]:
        if "films" in str(path):
            raise RunError("the films episode broke")
        return await real(path, agent, llm, checkpoint, **options)

    monkeypatch.setattr(units, "play_episode", failing)
    code, log = run(env, tmp_path / "out", Agent(episodes))
    assert code == 1 and "failed: the films episode broke" in " ".join(log.split())
    failures = json.loads((tmp_path / "out" / "failures.json").read_text())["failures"]
    assert [f["user"] for f in failures] == ["films/seed0"]
    assert run(env, tmp_path / "full", Agent(episodes))[0] == 1
    monkeypatch.setattr(units, "play_episode", real)
    assert run(env, tmp_path / "full", Agent(episodes))[0] == 0  # a re-run retries the failed episode
    assert json.loads((tmp_path / "full" / "failures.json").read_text())["failures"] == []
    rows = list(csv.DictReader(io.StringIO(get_family("budget").leaderboard([tmp_path / "out",
                                                                             tmp_path / "full"]).csv)))
    partial = next(r for r in rows if r["run"] == "out")
    assert partial["rank"] == "-" and "unfinished: 1 planned episode" in partial["flags"]
