"""Critical-path bound / whole-process wall time of `amemgym run`, next to the original implementation's.

Run: ``PYTHONPATH=src python bench/bench_side_by_side.py [--users 2,20] [--latency 0.2] [--repeat 2]
[--original PATH --original-cmd TEMPLATE]``.

For each size it writes a procedural environment in the original release's list format (no ``_amemgym``
keys; 3 periods after the first, 2 questions per user by default), starts the fake endpoint
(``bench/_endpoint.py``) in its own process with a fixed latency per call, and times the whole
``amemgym run`` process with default settings: only the endpoint's URL and model name are set, and the
response cache lives in a fresh directory so nothing is served from an earlier run. The package is
compiled to bytecode first, as an installed one is. It prints:

* calls the endpoint served (read from the endpoint process, so both implementations are counted alike);
* the critical-path bound: the longest chain of dependent calls of one user (``_common.chain_length``,
  native agent) times the latency; the same bound is used for both implementations;
* the wall time of the whole process (interpreter start, imports, run, metrics, report.html);
* bound / wall (1.0 = the run takes no longer than its longest dependent chain);
* the machine's 1-minute load average after the run (the benchmark is only as quiet as the machine);
* for amemgym, the part of the wall time spent in ``Runner.run`` (``wall_seconds_last_invocation`` of its
  metrics.json: episodes, evaluations and metrics, without interpreter start, imports and report), and
  how long writing report.html takes in a process that has already imported the run driver, as ``run``
  has when it writes it.

The original implementation is not vendored. Give a path to a clone with ``--original`` and the command
that runs it with ``--original-cmd``, a template with the placeholders ``{python}`` (this interpreter),
``{clone}``, ``{env}`` (the environment file), ``{url}`` (the endpoint's base URL, ending in ``/v1``),
``{model}`` and ``{out}`` (a fresh output directory). The command runs with the clone as its working
directory and ``OPENAI_BASE_URL``/``OPENAI_API_KEY`` set to the endpoint, against the same endpoint and
environment file, and is timed the same way.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import Endpoint, chain_length

import amemgym
from amemgym.config import env_preset, load_config
from amemgym.families.statetrack.data.io import dump_environment, load_environment
from amemgym.families.statetrack.generate.procedural import generate_procedural

MODEL = "fake-model"


def write_environment(path: Path, users: int, periods: int, questions: int, seed: int) -> int:
    """An environment in the original list format at ``path``; returns its longest native chain in calls."""
    cfg = env_preset("v1.base").model_copy(update={"num_user_profiles": users, "num_periods": periods,
                                                   "num_questions": questions})
    env, _ = generate_procedural(cfg, seed=seed, num_users=users)
    data = json.loads(dump_environment(env))
    for item in data:
        item.pop("_amemgym", None)  # the original release's files carry no amemgym metadata
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")
    loaded = load_environment(path)
    run_cfg = load_config(None)
    return max(chain_length(u, run_cfg, "native") for u in loaded.users)


def timed(cmd: list[str], cwd: Path | None, env: dict[str, str]) -> float:
    """Wall seconds of one process, from spawn to exit; a failure stops the bench with its stderr."""
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[:4]}... exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    return wall


def amemgym_cmd(env_file: Path, out: Path, url: str) -> list[str]:
    """``amemgym run`` with default settings, pointed at the endpoint."""
    return [sys.executable, "-m", "amemgym", "run", "--env", str(env_file), "--out", str(out),
            "--set", f"llm.default.base_url={url}", "--set", f"llm.default.model={MODEL}"]


def report_seconds(rundir: Path, env_file: Path) -> float:
    """Seconds to build and write report.html for ``rundir`` after the imports ``amemgym run`` already made."""
    # As in ``run``: the environment is in memory with its hash, the driver's imports are done, and so is the
    # report builder's (``run`` imports it in a worker thread while it waits on the network).
    # (Older versions took no environment and re-read the file: timed as they are.)
    # (Trees from before the statetrack folder keep these modules under amemgym.run and amemgym.data.)
    code = ("import time, inspect; from pathlib import Path; from rich.console import Console\n"
            "try:\n"
            "    from amemgym.families.statetrack.driver import write_run_report\n"
            "    from amemgym.families.statetrack.data.io import load_environment\n"
            "    from amemgym.families.statetrack.runner import environment_hash\n"
            "except ImportError:\n"
            "    from amemgym.run.driver import write_run_report\n"
            "    from amemgym.data.io import load_environment\n"
            "    from amemgym.run.engine import environment_hash\n"
            f"env = load_environment({str(env_file)!r}); sha = environment_hash(env); "
            "kw = {'environment': (env, sha)} if 'environment' in inspect.signature(write_run_report).parameters "
            "else {}; import amemgym.report.build; t=time.perf_counter(); "
            f"write_run_report(Path({str(rundir)!r}), Console(quiet=True), **kw); "
            "print(time.perf_counter()-t)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(res.stdout.strip().splitlines()[-1])


def main() -> None:
    """Parse flags, run each size (and implementation) ``--repeat`` times, print one row per run."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", default="2,20", help="comma-separated environment sizes")
    parser.add_argument("--periods", type=int, default=3, help="periods after the first")
    parser.add_argument("--questions", type=int, default=2, help="questions per user")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per call at the fake endpoint")
    parser.add_argument("--repeat", type=int, default=2, help="runs per size and implementation")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--original", type=Path, help="path to a clone of the original implementation")
    parser.add_argument("--original-cmd", help="command template that runs the original (see the docstring)")
    args = parser.parse_args()
    if bool(args.original) != bool(args.original_cmd):
        parser.error("--original and --original-cmd go together")
    # An installed package ships compiled bytecode; a source checkout run with PYTHONDONTWRITEBYTECODE would
    # otherwise recompile every module in every process and count that as the run's time.
    compileall.compile_dir(Path(amemgym.__file__).parent, quiet=1)
    if args.original:
        compileall.compile_dir(args.original, quiet=1)

    print(f"latency {args.latency * 1000:g} ms; {args.periods} periods after the first, {args.questions} "
          "questions per user; whole-process wall time")
    print(f"{'impl':<10}{'users':>6}{'calls':>7}{'chain':>7}{'bound s':>9}{'wall s':>9}{'bound/wall':>12}"
          f"{'run s':>8}{'report s':>10}{'load':>6}")
    ep = Endpoint(args.latency)
    try:
        with tempfile.TemporaryDirectory() as tmp_name:
            tmp = Path(tmp_name)
            for users in (int(u) for u in args.users.split(",")):
                env_file = tmp / f"env_{users}.json"
                chain = write_environment(env_file, users, args.periods, args.questions, args.seed)
                bound = chain * args.latency
                for k in range(args.repeat):
                    impls = [("amemgym", None)] + ([("original", args.original)] if args.original else [])
                    for name, clone in impls:
                        out = tmp / f"{name}_{users}_{k}"
                        env = {**os.environ, "AMEMGYM_CACHE_DIR": str(tmp / f"cache_{name}_{users}_{k}"),
                               "OPENAI_BASE_URL": ep.url, "OPENAI_API_KEY": "sk-bench"}
                        if clone is None:
                            cmd, cwd = amemgym_cmd(env_file, out, ep.url), None
                        else:
                            cmd = shlex.split(args.original_cmd.format(
                                python=sys.executable, clone=clone, env=env_file, url=ep.url, model=MODEL, out=out))
                            cwd = clone
                        before = ep.served()
                        wall = timed(cmd, cwd, env)
                        calls = ep.served() - before
                        if clone is None:
                            inner = json.loads((out / "metrics.json").read_text())["wall_seconds_last_invocation"]
                            extra = f"{inner:>8.2f}{report_seconds(out, env_file):>10.3f}"
                        else:
                            extra = f"{'-':>8}{'-':>10}"
                        print(f"{name:<10}{users:>6}{calls:>7}{chain:>7}{bound:>9.2f}{wall:>9.2f}"
                              f"{bound / wall:>12.2f}{extra}{os.getloadavg()[0]:>6.1f}", flush=True)
    finally:
        ep.close()


if __name__ == "__main__":
    main()
