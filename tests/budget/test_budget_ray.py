"""Budget episodes as Ray tasks on a real local Ray: the same results as local, and a re-run calls nothing."""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from rich.console import Console

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'amemgym[ray]')")

from test_budget_batch import Agent  # noqa: E402

from amemgym.config import AppConfig, EndpointConfig, LLMConfig, load_config  # noqa: E402
from amemgym.engine.runner import RunOptions, run_units  # noqa: E402
from amemgym.families.budget.generate import build_episode  # noqa: E402
from amemgym.families.budget.io import save_episode  # noqa: E402
from amemgym.families.budget.units import UNITS  # noqa: E402
from amemgym.llm.client import LLMClient  # noqa: E402
from amemgym.llm.types import ChatRequest  # noqa: E402
from amemgym.testing.fake_endpoint import FakeEndpoint  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def ray_cluster() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    # Workers cannot import this test module, so its client factory travels by value.
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield
    ray.shutdown()


def config(ep: FakeEndpoint, cache: Path) -> AppConfig:
    cfg = load_config("tiny")
    cfg.llm = LLMConfig(default=EndpointConfig(base_url=ep.base_url, model="fake-model", timeout_s=20.0,
                                               max_concurrency=4), cache_path=str(cache))
    cfg.budget.tools = "text"  # no per-client tool probe, so both executors make exactly the episodes' calls
    return cfg


def test_ray_runs_each_episode_as_a_task_with_the_local_results(tmp_path: Path) -> None:
    env = tmp_path / "env"
    episodes = [build_episode("lite", d, 0) for d in ("cities", "films")]
    for e in episodes:
        save_episode(e, env / e.domain / "seed0" / "data.json")
    agent = Agent(episodes, wrong_domains=("films",))

    def respond(body: dict) -> str:
        msgs = tuple({"role": m["role"], "content": m["content"]} for m in body["messages"])
        return agent(ChatRequest(role="agent", messages=msgs))

    with FakeEndpoint(responder=respond) as ep:
        out = {}
        for executor in ("local", "ray"):
            log = io.StringIO()
            code = run_units(UNITS, config(ep, tmp_path / f"{executor}.sqlite"), env, tmp_path / executor,
                             RunOptions(agent="native", executor=executor), console=Console(file=log, width=200))
            assert code == 0, log.getvalue()
            out[executor] = {p.parent.name + p.parent.parent.name: json.loads(p.read_text())
                             for p in (tmp_path / executor).rglob("results.json")}
        for key, local in out["local"].items():
            remote = out["ray"][key]
            assert remote["score"] == local["score"] and remote["answers"] == local["answers"]
            assert remote["run_seed"] == 0 and remote["agent_model"] == local["agent_model"]
            assert remote["usage"]["total"]["calls"] == local["usage"]["total"]["calls"] > 0
        ep.reset_counters()
        again = run_units(UNITS, config(ep, tmp_path / "ray.sqlite"), env, tmp_path / "ray",
                          RunOptions(agent="native", executor="ray"), console=Console(file=io.StringIO()))
        assert again == 0 and ep.calls == 0


@dataclass(frozen=True)
class OtherModelOnWorkers:
    """A client factory whose clients, outside the driver process, say they serve another model."""

    driver_pid: int

    def __call__(self, cfg: AppConfig) -> LLMClient:
        llm = LLMClient.from_config(cfg.llm)
        if os.getpid() != self.driver_pid:
            llm._identities["agent"] = "another-model"
        return llm


def test_a_task_that_fails_is_recorded_and_the_run_exits_1(tmp_path: Path) -> None:
    env = tmp_path / "env"
    episode = build_episode("lite", "films", 0)
    save_episode(episode, env / "films" / "seed0" / "data.json")
    agent = Agent([episode])

    def respond(body: dict) -> str:
        msgs = tuple({"role": m["role"], "content": m["content"]} for m in body["messages"])
        return agent(ChatRequest(role="agent", messages=msgs))

    with FakeEndpoint(responder=respond) as ep:
        log = io.StringIO()
        code = run_units(UNITS, config(ep, tmp_path / "c.sqlite"), env, tmp_path / "out",
                         RunOptions(agent="native", executor="ray"), console=Console(file=log, width=200),
                         make_client=OtherModelOnWorkers(os.getpid()))
        assert ep.calls_by_kind.get("chat", 0) == 0
    assert code == 1, log.getvalue()
    (failure,) = json.loads((tmp_path / "out" / "failures.json").read_text())["failures"]
    assert failure["user"] == "films/seed0" and "another-model" in failure["error"]
    assert not (tmp_path / "out" / "films" / "seed0" / "results.json").exists()
