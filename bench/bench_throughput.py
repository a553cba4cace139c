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

``--latency 0 --profile FILE`` runs the process under cProfile against an instant endpoint, to see where
the harness's CPU goes (``python -m pstats FILE``).
"""

from __future__ import annotations

import argparse
import compileall
import os
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


def run_amemgym(env_file: Path, out: Path, url: str, extra: list[str], profile: Path | None) -> tuple[float, float]:
    """Wall and CPU seconds of one ``amemgym run`` process (default settings, a fresh cache directory)."""
    prefix = [sys.executable] + (["-m", "cProfile", "-o", str(profile)] if profile else [])
    cmd = [*prefix, "-m", "amemgym", "run", "--env", str(env_file), "--out", str(out),
           "--set", f"llm.default.base_url={url}", "--set", f"llm.default.model={MODEL}", *extra]
    env = {**os.environ, "AMEMGYM_CACHE_DIR": str(out.parent / f"{out.name}.cache"), "OPENAI_API_KEY": "sk-bench"}
    cpu0, start = children_cpu(), time.perf_counter()
    proc = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall, cpu = time.perf_counter() - start, children_cpu() - cpu0
    if proc.returncode != 0:
        raise SystemExit(f"amemgym run exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    return wall, cpu


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
          f"{'harness ms/call':>17}{'endpoint ms/call':>18}{'load before/after':>19}", flush=True)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        env_file = args.env or generate(tmp / "env", args.users, None)
        for slots in (int(s) for s in args.slots.split(",")):
            for k in range(args.repeat):
                ep = Endpoint(args.latency, [f"--latency-sigma={args.sigma}", f"--slots={slots}",
                                             f"--seed={args.seed + k}"])
                try:
                    load0 = os.getloadavg()[0]
                    before, ep_cpu0 = ep.stats(), ep.cpu_seconds()
                    profile = args.profile if args.profile and k == args.repeat - 1 else None
                    wall, cpu = run_amemgym(env_file, tmp / f"run_{slots}_{k}", ep.url, extra, profile)
                    after, ep_cpu = ep.stats(), ep.cpu_seconds() - ep_cpu0
                finally:
                    ep.close()
                calls = after["served"] + after["embed_calls"] - before["served"] - before["embed_calls"]
                service = after["service_seconds"] - before["service_seconds"]
                bound = service / slots
                print(f"{slots:>6}{calls:>7}{service / calls * 1000:>9.1f}{bound:>9.2f}{wall:>8.2f}"
                      f"{bound / wall:>7.2f}{cpu / calls * 1000:>17.2f}{ep_cpu / calls * 1000:>18.2f}"
                      f"{load0:>10.1f}/{os.getloadavg()[0]:<8.1f}", flush=True)


if __name__ == "__main__":
    main()
