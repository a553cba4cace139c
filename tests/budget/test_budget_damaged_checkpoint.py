"""A budget episode whose ``checkpoint.json`` cannot be read (torn by a kill, damaged by hand) is played again
from its first event on the next run, with a one-line notice, instead of failing every resume: the finished
episodes stay as they were, and the numbers equal those of a run that was never interrupted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_budget_batch import EPISODES, Agent, composites, envs, run  # noqa: F401  (envs is a fixture)

from amemgym.families.budget.model import Episode


def interrupted(env: Path, episodes: list[Episode], out: Path) -> tuple[Path, dict[str, int]]:
    """A run killed in the middle of its second episode: that episode's folder, and the calls a whole run
    makes per domain."""
    reference = Agent(episodes)
    assert run(env, out.parent / f"{out.name}-count", reference)[0] == 0
    per_domain = {d: reference.domain_calls(d) for _, d, _ in EPISODES}
    agent = Agent(episodes)
    agent.kill_at = per_domain["cities"] + per_domain["companies"] // 2  # serial: cities, companies, films
    with pytest.raises(KeyboardInterrupt):
        run(env, out, agent)
    unit = out / "companies" / "seed0"
    assert (unit / "checkpoint.json").is_file() and not (unit / "results.json").exists()
    return unit, per_domain


@pytest.mark.parametrize("damage", ["truncated", "not an object", "state without its keys"])
def test_an_unreadable_checkpoint_is_redone_and_scores_as_a_clean_run(envs: tuple[Path, list[Episode]],  # noqa: F811
                                                                      tmp_path: Path, damage: str) -> None:
    env, episodes = envs
    assert run(env, tmp_path / "clean", Agent(episodes))[0] == 0
    unit, per_domain = interrupted(env, episodes, tmp_path / "out")
    finished = (tmp_path / "out" / "cities" / "seed0" / "results.json").read_bytes()
    checkpoint = unit / "checkpoint.json"
    text = checkpoint.read_text()
    if damage == "truncated":
        checkpoint.write_text(text[: len(text) // 2])
    elif damage == "not an object":
        checkpoint.write_text("[1, 2]")
    else:
        data = json.loads(text)
        data["state"] = {"next_event": 3}
        checkpoint.write_text(json.dumps(data))
    again = Agent(episodes)
    code, log = run(env, tmp_path / "out", again)
    assert code == 0, log
    # The numbers are a clean run's, episode by episode and axis by axis.
    assert composites(tmp_path / "out") == composites(tmp_path / "clean")
    score = json.loads((unit / "results.json").read_text())["score"]
    assert score == json.loads((tmp_path / "clean/companies/seed0/results.json").read_text())["score"]
    # Nothing computed elsewhere is lost: the finished episode is untouched and was not played again.
    assert (tmp_path / "out" / "cities" / "seed0" / "results.json").read_bytes() == finished
    assert again.domain_calls("cities") == 0
    # The damaged episode was played again from its first event, said in one line, its file kept aside.
    assert again.domain_calls("companies") == per_domain["companies"]
    notices = [" ".join(line.split()) for line in log.splitlines() if "checkpoint.json" in line]
    assert len(notices) == 1 and "played again from its first event" in notices[0], log
    assert str(checkpoint) in notices[0] and (unit / "checkpoint.json.discarded").is_file()
    assert "checkpoint.json" in json.loads((unit / "results.json").read_text())["checkpoint_discarded"]

def test_a_checkpoint_of_another_agent_is_still_refused(envs: tuple[Path, list[Episode]],  # noqa: F811
                                                         tmp_path: Path) -> None:
    env, episodes = envs
    unit, _ = interrupted(env, episodes, tmp_path / "out")
    data = json.loads((unit / "checkpoint.json").read_text())
    data["identity"]["agent"] = "someone-else"
    (unit / "checkpoint.json").write_text(json.dumps(data))
    code, _ = run(env, tmp_path / "out", Agent(episodes))
    failures = json.loads((tmp_path / "out" / "failures.json").read_text())["failures"]
    assert code == 1 and [f["label"] for f in failures] == ["lite/companies/seed0"], failures
    assert "another agent" in failures[0]["error"]
    assert not (unit / "checkpoint.json.discarded").exists()
