"""How far the exposure judge can be trusted: its reading of a procedural file against the pack's.

On a procedural file the content pack's reader knows exactly which facts each opening states, so it is the
ground truth here. The judge role (the embedded model unless the config gives the judge an endpoint) reads
the same openings, then reads them again after every opening is replaced by a message that states nothing.
Printed per (user, period) and in total:

- ``found``: changes of the period the judge says are stated (all are; fewer means false FAILs);
- ``invented``: facts the judge reports that the text does not state (on silenced openings each one
  that happens to match a change would be a false PASS).

Usage (one call per user and period, twice; minutes on a CPU-served model)::

    python bench/bench_exposure_judge.py [--config tiny] [--users 2]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time

from amemgym.config import load_config
from amemgym.families.statetrack.data import load_environment
from amemgym.families.statetrack.generate.procedural import tiny_environment_path
from amemgym.families.statetrack.validity.exposure import UnreadPeriod, judge_reader, pack_reader
from amemgym.llm.client import LLMClient

SILENT = "Hi! Could you help me plan the next few weeks? I'd like some ideas."


async def main(config: str, users: int) -> None:
    env = load_environment(tiny_environment_path())
    env.users = env.users[:users]
    cfg = load_config(config)
    cfg.llm.cache = False  # a cached reply is no reading
    lexical, _, _ = pack_reader(env)
    assert lexical is not None
    llm = LLMClient.from_config(cfg.llm)
    read = judge_reader(llm)
    where = cfg.llm.chat_base_url("judge") or f"embedded {cfg.llm.embedded.model}"
    print(f"judge: {where}; load average {os.getloadavg()[0]:.1f}")
    totals = {False: [0, 0, 0, 0], True: [0, 0, 0, 0]}  # changes, found, facts, invented
    try:
        for silent in (False, True):
            for user in env.users:
                for p, period in enumerate(user.periods):
                    if silent:
                        for s in period.sessions:
                            s.query = SILENT
                    truth = lexical(user, p)
                    started = time.perf_counter()
                    try:
                        got = await read(user, p)
                    except UnreadPeriod:
                        got = set()
                    changes = {(k, up.new) for k, up in period.updates.items()}
                    row = [len(changes), len(changes & got), len(got), len(got - truth)]
                    totals[silent] = [a + b for a, b in zip(totals[silent], row, strict=True)]
                    print(f"{'silenced' if silent else 'original'} user {user.id[:8]} period {p}: changes {row[0]}, "
                          f"found {row[1]}, facts {row[2]}, invented {row[3]} ({time.perf_counter() - started:.0f} s)")
    finally:
        await llm.aclose()
    for silent, (changes, found, facts, invented) in totals.items():
        print(f"{'silenced' if silent else 'original'} openings: found {found}/{changes} changes; "
              f"{invented}/{facts} reported facts not in the text")
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="tiny")
    parser.add_argument("--users", type=int, default=2)
    args = parser.parse_args()
    asyncio.run(main(args.config, args.users))
