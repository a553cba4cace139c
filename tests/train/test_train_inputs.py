"""The Gym environments' inputs (found by probing): a lone surrogate in an action plays on as U+FFFD instead of
ending the episode, and a constructor or reset option of the wrong type is one ConfigError line."""

from __future__ import annotations

import pytest

from amemgym.errors import ConfigError
from amemgym.families.budget.gym_env import BudgetEnv
from amemgym.train import MemoryEnv


def test_a_lone_surrogate_in_an_action_plays_on() -> None:
    env = BudgetEnv(embed_search=False)
    try:
        env.reset(seed=0)
        lone = chr(0xD800)
        obs, _, terminated, _, _ = env.step('{"tool": "write", "args": {"text": "Cinder revenue 523.8 ' + lone + '"}}')
        assert "stored note" in obs and not terminated
        obs, *_ = env.step('{"tool": "list", "args": {}}')
        assert "\ufffd" in obs  # the note holds the replacement character, not the surrogate
    finally:
        env.close()


@pytest.mark.parametrize(("make", "words"), [
    (lambda: MemoryEnv(max_steps="5"), "max_steps must be a positive int"),
    (lambda: MemoryEnv(max_steps=True), "max_steps must be a positive int"),
    (lambda: MemoryEnv(upper_bound="false"), "upper_bound must be True or False"),
    (lambda: BudgetEnv(seed=1.5, embed_search=False), "seed must be a whole number"),
    (lambda: BudgetEnv(seed=-1, embed_search=False), "seed must be a whole number"),
    (lambda: BudgetEnv(salt="3", embed_search=False), "salt must be a whole number"),
])
def test_a_constructor_argument_of_the_wrong_type_is_one_line(make, words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        make()


def test_a_reset_option_of_the_wrong_type_is_one_line() -> None:
    env = MemoryEnv()
    try:
        with pytest.raises(ConfigError, match="probes must be True or False"):
            env.reset(options={"probes": "yes"})
    finally:
        env.close()
