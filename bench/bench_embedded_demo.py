"""Time the README's first command, ``amemgym run --out DIR`` (bundled tiny env, embedded model), and where it goes.

Run: ``PYTHONPATH=src python bench/bench_embedded_demo.py [--set KEY=VALUE ...]`` only on a quiet machine
(llama.cpp's threads and any other CPU load thrash on 2 cores; the script prints the load average first
and refuses above ``--max-load`` unless ``--force``). It runs the command in a fresh process with a fresh
response cache, so nothing is reused, and prints its wall time (target: under 5 minutes on 2 cores).

The breakdown comes from the same process: it is started through a small hook (``--hook``, this file
imported before the CLI) that times the embedded server's start (model load) and adds up llama.cpp's own
``timings`` of every reply (prompt processing and generation, in milliseconds per request) before the
client reads it; the product's code and work are unchanged. Requests decode in parallel slots, so
server seconds can add up to more than the wall time; "harness and waiting" is what remains of the wall
time beside model load and the server's busy time, counted once per moment (a lower bound when slots
overlap). Per role it prints calls, prompt tokens sent and evaluated (the rest came from llama.cpp's
prefix cache), completion tokens and the seconds spent waiting on that role's calls.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: Environment variable naming the file the hook writes its totals to.
HOOK_OUT = "AMEMGYM_BENCH_DEMO_TIMINGS"


def install_hook() -> None:
    """In the ``amemgym run`` process: time the model load and add up every reply's llama.cpp timings."""
    import atexit

    from amemgym.llm import embedded, openai_backend

    totals = {"load_s": 0.0, "prompt_ms": 0.0, "predicted_ms": 0.0, "prompt_n": 0, "predicted_n": 0, "replies": 0,
              "busy_intervals": []}
    parse = openai_backend._chat_result

    def chat_result(resp, model, seconds, **options):  # type: ignore[no-untyped-def]
        t = resp.get("timings") if isinstance(resp, dict) else None
        if isinstance(t, dict):
            totals["replies"] += 1
            for key in ("prompt_ms", "predicted_ms", "prompt_n", "predicted_n"):
                totals[key] += t.get(key) or 0
            end = time.monotonic()
            totals["busy_intervals"].append((end - ((t.get("prompt_ms") or 0) + (t.get("predicted_ms") or 0)) / 1000,
                                             end))
        return parse(resp, model, seconds, **options)

    openai_backend._chat_result = chat_result  # type: ignore[assignment]
    start = embedded.EmbeddedServer._start_locked

    def timed_start(self):  # type: ignore[no-untyped-def]
        t0 = time.monotonic()
        try:
            return start(self)
        finally:
            totals["load_s"] += time.monotonic() - t0

    embedded.EmbeddedServer._start_locked = timed_start  # type: ignore[method-assign]

    def write() -> None:
        Path(os.environ[HOOK_OUT]).write_text(json.dumps(totals), encoding="utf-8")

    atexit.register(write)


def busy_seconds(intervals: list[list[float]]) -> float:
    """Length of the union of (start, end) intervals."""
    total, cur_start, cur_end = 0.0, None, None
    for s, e in sorted(map(tuple, intervals)):
        if cur_end is None or s > cur_end:
            if cur_end is not None:
                total += cur_end - cur_start
            cur_start, cur_end = s, e
        else:
            cur_end = max(cur_end, e)
    if cur_end is not None:
        total += cur_end - cur_start
    return total


def main() -> None:
    """Run the demo once and print the breakdown."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", action="append", default=[], help="config override passed to amemgym run")
    parser.add_argument("--agent", default="native")
    parser.add_argument("--max-load", type=float, default=1.5)
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    print(f"load average (1 min): {load:.2f}")
    if load > args.max_load and not args.force:
        raise SystemExit(f"machine busy (load {load:.2f} > {args.max_load}); rerun when quiet or pass --force")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "demo"
        hook = Path(tmp) / "timings.json"
        code = (f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
                "import bench_embedded_demo as b; b.install_hook(); "
                "from amemgym.cli import main; sys.argv[0] = 'amemgym'; main()")
        cmd = [sys.executable, "-c", code, "run", "--out", str(out), "--agent", args.agent]
        for item in args.set:
            cmd += ["--set", item]
        env = {**os.environ, "AMEMGYM_CACHE_DIR": str(Path(tmp) / "cache"), HOOK_OUT: str(hook)}
        start = time.perf_counter()
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            raise SystemExit(f"amemgym run failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
        usage = json.loads((out / "usage.json").read_text())["last_invocation"]
        metrics = json.loads((out / "metrics.json").read_text())
        t = json.loads(hook.read_text()) if hook.exists() else None
    print(f"wall time of `amemgym run --out DIR`: {wall:.1f} s (target < 300 s); "
          f"in the runner {metrics.get('wall_seconds_last_invocation', 0):.1f} s; load after {os.getloadavg()[0]:.2f}")
    if t:
        busy = busy_seconds(t["busy_intervals"])
        print(f"model load {t['load_s']:.1f} s; llama.cpp over {t['replies']} replies: prompt processing "
              f"{t['prompt_ms'] / 1000:.1f} s for {t['prompt_n']} tokens, generation {t['predicted_ms'] / 1000:.1f} s "
              f"for {t['predicted_n']} tokens (slot-seconds); server busy {busy:.1f} s of wall time; "
              f"harness and waiting {wall - t['load_s'] - busy:.1f} s")
    print(f"{'role':<11}{'calls':>7}{'prompt':>9}{'evaluated':>11}{'completion':>12}{'call s':>9}")
    for role, u in usage.items():
        if not isinstance(u, dict) or not u.get("calls"):
            continue
        print(f"{role:<11}{u['calls']:>7}{u['prompt_tokens']:>9}{u.get('prompt_tokens_processed', 0):>11}"
              f"{u['completion_tokens']:>12}{u['seconds']:>9.1f}")


if __name__ == "__main__":
    main()
