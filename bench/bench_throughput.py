"""Throughput against a busy server: calls x mean latency / slots, over the whole `amemgym run` process's wall time.

Run: ``PYTHONPATH=src python bench/bench_throughput.py [--slots 16,64] [--users 40] [--repeat 1]``.

The environment is ``amemgym generate --config v1.base --generator procedural --users 40``. The endpoint
(``bench/_endpoint.py``, in its own process so its CPU is not the harness's) serves at most N chat and
embedding requests at once and queues the rest, as an inference server's batch does; each request holds
its slot for a latency drawn from a lognormal (median 0.1 s, log-sd 0.5, seeded). When the slots are never
idle, the run cannot end sooner than the **bound**: the seconds of service drawn for all calls divided by
N (calls x their mean latency / N). The target is **bound / wall**, with wall the whole ``amemgym run``
process from spawn to exit, run with default settings: only the endpoint's URL and model are set, and
the response cache lives in a fresh directory.

Each row prints the calls served, the mean latency drawn, the bound, the wall time, the ratio, the
harness's CPU per call (user + system CPU of the ``amemgym`` process and every process it waited for,
divided by the calls), the endpoint's CPU per call, and the 1-minute load average before and after the
run: on a shared machine other jobs' CPU shows up in the wall time, never in the CPU per call.

Below the table, each run's wall time is split by the endpoint's own timeline (when each request arrived,
got a slot and ended): **start-up** (spawn to the first request), **exit** (the last reply to the process's
exit), and between them the slot-seconds left idle, split at the last moment every slot was busy: idle slots
before it (**steady**) and after it (**tail**: the last users' sequential calls with slots to spare). Each
idle part is given as seconds of wall (idle slot-seconds / N), so bound + endpoint overhead (a slot held
past its drawn latency) + start-up + steady + tail + exit = wall. The **critical path** is the longest
user's strictly sequential calls (each session's agent replies and simulator turns, one at a time, then the
last period's evaluation, one call deep) times the mean latency drawn, and **best** is the ratio of a
simulated run of the same workload with a harness that costs nothing: every user starts at once, its
conversation is one call at a time, each period's evaluation (answer and probe per question) is released
when the period ends and the upper-bound questions after the first session, all into a first-come first-
served server of N slots with latencies drawn as the endpoint draws them. best < 1 is the workload's own
limit on such a server, not the harness's. The breakdown also gives the simulated wall with a server that
serves waiting conversation calls first (**prio**): the difference is what the queue's order costs.

``--latency 0 --profile FILE`` runs the process under cProfile against an instant endpoint, to see where
the harness's CPU goes (``python -m pstats FILE``).
"""

from __future__ import annotations

import argparse
import collections
import compileall
import heapq
import json
import math
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import Endpoint

import amemgym

MODEL = "fake-model"


def generate(out: Path, users: int, seed: int | None) -> Path:
    """``amemgym generate`` a procedural v1.base environment of ``users`` users; returns its data.json."""
    cmd = [sys.executable, "-m", "amemgym", "generate", "--config", "v1.base", "--generator", "procedural",
           "--users", str(users), "--out", str(out)]
    if seed is not None:
        cmd += ["--seed", str(seed)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return out / "data.json"


def children_cpu() -> float:
    """CPU seconds (user + system) of every child process this one has waited for."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_amemgym(env_file: Path, out: Path, url: str, extra: list[str],
                profile: Path | None) -> tuple[float, float, float, float]:
    """Wall and CPU seconds of one ``amemgym run`` process (default settings, a fresh cache directory), and
    its spawn and exit on ``time.perf_counter``'s clock."""
    prefix = [sys.executable] + (["-m", "cProfile", "-o", str(profile)] if profile else [])
    cmd = [*prefix, "-m", "amemgym", "run", "--env", str(env_file), "--out", str(out),
           "--set", f"llm.default.base_url={url}", "--set", f"llm.default.model={MODEL}", *extra]
    env = {**os.environ, "AMEMGYM_CACHE_DIR": str(out.parent / f"{out.name}.cache"), "OPENAI_API_KEY": "sk-bench"}
    cpu0, start = children_cpu(), time.perf_counter()
    proc = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    end = time.perf_counter()
    wall, cpu = end - start, children_cpu() - cpu0
    if proc.returncode != 0:
        raise SystemExit(f"amemgym run exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    return wall, cpu, start, end


def workload(env_file: Path) -> list[tuple[list[int], int, int, int]]:
    """Per user: the sequential calls of each period (sum over its sessions of 2 x rounds - 1: a simulator
    turn before every reply but the first), the evaluation calls at each period's end (answer and probe per
    question), the upper-bound calls (the native agent's plan; docs/design.md §4) and the first session's calls."""
    from amemgym.config import load_config
    from amemgym.families.statetrack.data.io import load_environment
    from amemgym.families.statetrack.questioning import needed_combinations
    from amemgym.families.statetrack.schedule import rounds_for

    cfg = load_config()
    env = load_environment(env_file)
    return [([len(period.sessions) * (2 * rounds_for(user, cfg, p) - 1) for p, period in enumerate(user.periods)],
             2 * len(user.qas), len(needed_combinations(user)), 2 * rounds_for(user, cfg, 0) - 1)
            for user in env.users]


def simulate(plan: list[tuple[list[int], int, int, int]], slots: int, median: float, sigma: float,
             seed: int, *, priority: bool = False) -> tuple[int, float, float]:
    """The workload against a server of ``slots`` with a harness that costs nothing: (calls, service, wall).

    A user's next conversation call is sent when its previous reply arrives, a period's evaluation calls
    when the period ends, the upper bound after the first session. The server serves its queue first come,
    first served, or with ``priority`` every waiting conversation call before any evaluation call."""
    rng = random.Random(f"sim:{seed}")
    # Waiting calls as (sent at, user); conversation calls and the others (evaluation, upper bound) apart.
    talk: collections.deque[tuple[float, int]] = collections.deque((0.0, u) for u in range(len(plan)))
    other: collections.deque[tuple[float, int]] = collections.deque()
    events: list[tuple[float, int, int, int]] = []  # (reply due, order, kind (0 = conversation), user)
    left = [list(periods) for periods, _, _, _ in plan]
    period = [0] * len(plan)
    first_session = [first for _, _, _, first in plan]
    now, order, busy, calls, service = 0.0, 0, 0, 0, 0.0
    while True:
        while busy < slots and (talk or other):
            kind = 0 if talk and (priority or not other or talk[0][0] <= other[0][0]) else 1
            _, user = (talk if kind == 0 else other).popleft()
            seconds = median * math.exp(rng.gauss(0.0, sigma)) if sigma > 0 else median
            service, calls, busy, order = service + seconds, calls + 1, busy + 1, order + 1
            heapq.heappush(events, (now + seconds, order, kind, user))
        if not events:
            return calls, service, now
        now, _, kind, user = heapq.heappop(events)
        busy -= 1
        if kind != 0:
            continue
        p = period[user]
        left[user][p] -= 1
        first_session[user] -= 1
        if first_session[user] == 0:
            other.extend([(now, user)] * plan[user][2])
        if left[user][p] == 0:
            other.extend([(now, user)] * plan[user][1])
            period[user] += 1
        if period[user] < len(left[user]):
            talk.append((now, user))


def breakdown(spans: list[list[float]], slots: int, t0: float, t1: float) -> dict[str, float]:
    """Wall time split by the endpoint's timeline (see the module's docstring), in seconds."""
    first = min(s[0] for s in spans)
    last = max(s[2] for s in spans)
    steps = sorted([(s[1], 1) for s in spans] + [(s[2], -1) for s in spans])
    # The last moment every slot was busy: after it the server never is again.
    busy, saturated = 0, first
    for t, d in steps:
        busy += d
        if busy >= slots:
            saturated = t
    idle = {"steady": 0.0, "tail": 0.0}
    busy, prev = 0, first
    for t, d in steps:
        for name, lo, hi in (("steady", first, saturated), ("tail", saturated, last)):
            a, b = max(prev, lo), min(t, hi)
            if b > a:
                idle[name] += (slots - busy) * (b - a)
        busy, prev = busy + d, t
    return {"start-up": first - t0, "steady": idle["steady"] / slots, "tail": idle["tail"] / slots,
            "tail s": last - saturated, "exit": t1 - last, "span": sum(s[2] - s[1] for s in spans) / slots}


def main() -> None:
    """Parse flags and print one row per slot count and repetition."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slots", default="16,64", help="comma-separated numbers of requests served at once")
    parser.add_argument("--users", type=int, default=40)
    parser.add_argument("--latency", type=float, default=0.1, help="median seconds per call")
    parser.add_argument("--sigma", type=float, default=0.5, help="log-sd of the latency per call")
    parser.add_argument("--seed", type=int, default=1, help="seed of the latency draws")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--env", type=Path, help="an environment file instead of generating one")
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                        help="extra `amemgym run --set` (the target is measured without any)")
    parser.add_argument("--profile", type=Path, help="write a cProfile of the (last) run here")
    args = parser.parse_args()
    # An installed package ships compiled bytecode; a checkout would otherwise compile in every process.
    compileall.compile_dir(Path(amemgym.__file__).parent, quiet=1)
    extra = [x for s in args.sets for x in ("--set", s)]
    print(f"latency lognormal, median {args.latency * 1000:g} ms, log-sd {args.sigma:g}; {args.users} users, "
          f"v1.base procedural; whole-process wall time; extra settings: {' '.join(args.sets) or 'none'}")
    print(f"{'slots':>6}{'calls':>7}{'mean ms':>9}{'bound s':>9}{'wall s':>8}{'ratio':>7}"
          f"{'harness ms/call':>17}{'endpoint ms/call':>18}{'crit. path s':>14}{'best':>6}"
          f"{'load before/after':>19}", flush=True)
    rows: list[str] = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        env_file = args.env or generate(tmp / "env", args.users, None)
        plan = workload(env_file)
        timeline = tmp / "timeline.json"
        for n, slots in enumerate(int(s) for s in args.slots.split(",")):
            for k in range(args.repeat):
                ep = Endpoint(args.latency, [f"--latency-sigma={args.sigma}", f"--slots={slots}",
                                             f"--seed={args.seed + k}", f"--timeline={timeline}"])
                try:
                    load0 = os.getloadavg()[0]
                    before, ep_cpu0 = ep.stats(), ep.cpu_seconds()
                    profile = args.profile if args.profile and k == args.repeat - 1 else None
                    wall, cpu, t0, t1 = run_amemgym(env_file, tmp / f"run_{n}_{slots}_{k}", ep.url, extra, profile)
                    after, ep_cpu = ep.stats(), ep.cpu_seconds() - ep_cpu0
                    spans = json.loads(timeline.read_text())
                finally:
                    ep.close()
                calls = after["served"] + after["embed_calls"] - before["served"] - before["embed_calls"]
                service = after["service_seconds"] - before["service_seconds"]
                bound, mean = service / slots, service / calls
                critical = max(sum(periods) + 1 for periods, _, _, _ in plan) * mean
                sim_calls, sim_service, sim_wall = simulate(plan, slots, args.latency, args.sigma, args.seed + k)
                prio_wall = simulate(plan, slots, args.latency, args.sigma, args.seed + k, priority=True)[2]
                best = sim_service / slots / sim_wall if sim_wall else float("nan")  # nan: --latency 0
                print(f"{slots:>6}{calls:>7}{mean * 1000:>9.1f}{bound:>9.2f}{wall:>8.2f}"
                      f"{bound / wall:>7.2f}{cpu / calls * 1000:>17.2f}{ep_cpu / calls * 1000:>18.2f}"
                      f"{critical:>14.2f}{best:>6.2f}"
                      f"{load0:>10.1f}/{os.getloadavg()[0]:<8.1f}", flush=True)
                b = breakdown(spans, slots, t0, t1)
                rows.append(f"{slots:>6}{bound:>8.2f}{b['span'] - bound:>10.2f}{b['start-up']:>10.2f}"
                            f"{b['steady']:>8.2f}{b['tail']:>7.2f} ({b['tail s']:.2f} s){b['exit']:>7.2f}{wall:>8.2f}"
                            f"{sim_wall:>11.2f}{prio_wall:>7.2f} ({sim_calls} calls)")
        print("\nwall = bound + endpoint overhead + start-up + idle slots (steady, tail: over how long) + exit; "
              "and the simulated zero-cost harness's wall (first-come first-served server, prioritising server)")
        print(f"{'slots':>6}{'bound':>8}{'overhead':>10}{'start-up':>10}{'steady':>8}{'tail':>18}{'exit':>7}"
              f"{'wall':>8}{'sim. fifo':>11}{'prio':>7}")
        print("\n".join(rows))


if __name__ == "__main__":
    main()
