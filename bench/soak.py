"""Fault + kill soak of both families: CLI runs against a faulty endpoint, SIGKILLed and resumed, match a clean run.

    PYTHONPATH=src python bench/soak.py --runs 10                    # both families
    PYTHONPATH=src python bench/soak.py --runs 10 --family budget    # or statetrack

**statetrack.** Every run is ``python -m amemgym run`` on the bundled tiny environment with its own run
directory and response cache, against one fake OpenAI-compatible endpoint (in this process) that injects a
fault into ``--fault-rate`` of the chat requests (every kind: 429 with and without Retry-After, 5xx, connection
resets, timeouts, truncated and malformed bodies, empty choices). Each run is killed with SIGKILL at 1-3 random
moments and re-run until it exits 0. At the end every run's metrics must equal those of a fault-free
reference run, every JSON file and JSONL line must parse, and no conversation turn may appear twice in a
trace. Then four hostile cases, each on a fresh run directory (loopback only, a handful of runs):

- concurrent writers: the same run started twice at once; exactly one must be refused (exit 2);
- echoed key: a server answering 401 with the Authorization header in its body; the key must appear in no
  file of the run directory and not in the output;
- empty replies: a server whose replies are empty strings; the run must not exit 0 nor claim completeness,
  and once the server is fixed the same cache must not replay an empty reply;
- a key echoed on the success path: a server that lists the key in its model id and repeats it (as a
  bearer token) in every reply; the run finishes and the key appears in no file, no cache and no output.

Every killed and resumed run must also be left without the temp files of its killed writers.
After each hostile case the run is finished against a healthy server and must match the reference too.

**budget.** Two lite episodes (``amemgym generate --family budget``, companies seed 0 and films seed 1) run
as one multi-episode ``amemgym run --env FOLDER`` with the built-in LLM tool agent (the text protocol: the
stand-in, :class:`~amemgym.testing.budget.BudgetScript`, declines the tool probe), answering every question
of the first episode and none right of the second. Each run has a faulty endpoint of its own, which stamps
every call it serves, so the calls served to a run are known exactly. Each run is SIGKILLed at 1-3 random
moments and resumed until it exits 0; then

- ``metrics.json`` (per episode, per tier, complete, missing, failures), every episode's ``results.json``
  (all but its usage and wall time) and its ``trace.jsonl`` (byte for byte) equal the fault-free reference;
- every JSON/JSONL parses, no trace holds a tool call (event, step) twice, no temp file or
  ``usage.pending.json`` or ``usage.journal`` is left;
- ``usage.json`` never counts more calls than the endpoint served the run; the reference's count and the
  last (unkilled) invocation's are exact; a killed invocation may miss only a call served within half a
  second of the kill (its reply still on the way: each call is journalled as its reply arrives). How many
  calls were missed that way is printed.

Then the hostile cases that apply to a budget run: concurrent writers, a key echoed in a 401 body (the
run must not exit 0), a key in the served model id and in the probe's reply and every note the agent writes
(the run finishes; the key is in no file, no cache, no output), each finished against a healthy server and
compared with the reference where it finishes.

Prints the counts; exits 1 on any mismatch, damaged file, leaked key or wrongly accepted hostile case.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from amemgym.testing.fake_endpoint import FakeEndpoint  # noqa: E402
from amemgym.testing.runs import damaged_files, kill_after, start_run, wait_for_work  # noqa: E402

#: A client timeout below the endpoint's held "timeout" fault, and enough retries that a 20 % rate never
#: exhausts them (0.2 ** 9 per call).
#: No model name: each process then lists the endpoint's models first, which marks the start of its work.
SETTINGS = ["--set", "llm.default.timeout_s=1.0", "--set", "llm.default.max_retries=8"]
SCORE_KEYS = ("overall", "per_period", "per_user", "complete", "missing", "answers")


def start(ep: FakeEndpoint, rundir: Path, cache: Path) -> subprocess.Popen[str]:
    return start_run(ep, ["run", "--out", str(rundir), *SETTINGS], cache, api_key="soak-key",
                     pythonpath=ROOT / "src", capture=False)


def run_to_end(ep: FakeEndpoint, rundir: Path, cache: Path, max_attempts: int = 10) -> int:
    """Re-run until exit 0 (a run whose retries ran out exits 1 and is resumed too); returns the attempts."""
    for attempt in range(1, max_attempts + 1):
        proc = start(ep, rundir, cache)
        proc.communicate(timeout=600)
        if proc.returncode == 0:
            return attempt
        if proc.returncode != 1:
            raise SystemExit(f"run exited {proc.returncode}")
    raise SystemExit(f"{rundir}: not finished after {max_attempts} attempts")


def scores(rundir: Path) -> dict[str, Any]:
    metrics = json.loads((rundir / "metrics.json").read_text(encoding="utf-8"))
    return {k: metrics[k] for k in SCORE_KEYS}


def _finish(ep: FakeEndpoint, rundir: Path, cache: Path, reference: dict[str, Any]) -> bool:
    """Finish ``rundir`` against the healthy endpoint; True when its metrics match the reference."""
    ep.force_faults, ep.fault_rate = {}, 0.0
    run_to_end(ep, rundir, cache)
    return scores(rundir) == reference


def hostile(ep: FakeEndpoint, root: Path, reference: dict[str, Any]) -> dict[str, int]:
    """The concurrent-writer, echoed-key and empty-reply cases; counts of what went wrong (all 0 = pass)."""
    bad = {"writers_not_refused": 0, "keys_leaked": 0, "empty_runs_accepted": 0, "empty_served_from_cache": 0,
           "mismatches": 0, "damaged": 0, "success_keys_leaked": 0}
    ep.fault_rate = 0.0
    # Concurrent writers: the same command twice at once. Each call is held a while, so the first run is still
    # writing when the second starts however fast it is (a run that ended first would rightly be resumed).
    rundir, cache = root / "hostile_writers", root / "hostile_writers_cache"
    ep.latency = 0.3
    procs = [start_run(ep, ["run", "--out", str(rundir), *SETTINGS], cache, api_key="soak-key",
                       pythonpath=ROOT / "src") for _ in range(2)]
    codes = sorted(p.wait(timeout=600) for p in procs)
    outputs = [p.communicate()[0] for p in procs]
    ep.latency = 0.0
    bad["writers_not_refused"] += codes != [0, 2]
    if codes != [0, 2]:
        writers_said(procs, outputs)
    bad["mismatches"] += not _finish(ep, rundir, cache, reference)
    bad["damaged"] += len(damaged_files(rundir))
    # A 401 that echoes the key.
    key = "soak-echoed-key-7f3a9"
    rundir, cache = root / "hostile_echo", root / "hostile_echo_cache"
    ep.force_faults = {"*": "echo_auth_401"}
    proc = start_run(ep, ["run", "--out", str(rundir), *SETTINGS], cache, api_key=key, pythonpath=ROOT / "src")
    text, _ = proc.communicate(timeout=600)
    files = [p for p in rundir.rglob("*") if p.is_file()]
    bad["keys_leaked"] += (key in text) + sum(key in p.read_text(encoding="utf-8", errors="replace") for p in files)
    bad["mismatches"] += not _finish(ep, rundir, cache, reference)
    # Empty replies, then the fixed server with the same cache.
    rundir, cache = root / "hostile_empty", root / "hostile_empty_cache"
    ep.force_faults = {"*": "empty_content"}
    proc = start_run(ep, ["run", "--out", str(rundir), *SETTINGS], cache, api_key="soak-key",
                     pythonpath=ROOT / "src")
    proc.communicate(timeout=600)
    metrics = json.loads((rundir / "metrics.json").read_text(encoding="utf-8")) if (rundir / "metrics.json").exists() \
        else {"complete": False}
    bad["empty_runs_accepted"] += proc.returncode == 0 or bool(metrics.get("complete"))
    ep.force_faults = {}
    before = ep.served
    bad["mismatches"] += not _finish(ep, rundir, cache, reference)
    bad["empty_served_from_cache"] += ep.served == before
    bad["damaged"] += len(damaged_files(rundir))
    # The key in the model list and in every reply of a run that succeeds.
    key = "soak-success-key-91c2e"
    rundir, cache = root / "hostile_success_echo", root / "hostile_success_echo_cache"
    model, responder = ep.model, ep.responder

    def echo(body: dict[str, Any]) -> Any:
        reply = responder(body)
        return f"{reply} (Authorization: Bearer {key})" if isinstance(reply, str) and not reply.startswith("{") \
            else reply

    ep.model, ep.responder = f"model-{key}", echo
    try:
        proc = start_run(ep, ["run", "--out", str(rundir), *SETTINGS], cache, api_key=key, pythonpath=ROOT / "src")
        text, _ = proc.communicate(timeout=600)
    finally:
        ep.model, ep.responder = model, responder
    files = [p for root_ in (rundir, cache) for p in root_.rglob("*") if p.is_file()]
    bad["success_keys_leaked"] += (proc.returncode != 0) + (key in text) + sum(
        key.encode() in p.read_bytes() for p in files)
    return bad


# ---- the budget family ---------------------------------------------------------------------------------------

#: The budget episodes (tier, domain, seed), generated by the CLI into the soak's folder; the stand-in agent
#: answers every question of the first and none right of the second, so the two score differently.
BUDGET_EPISODES = (("lite", "companies", 0), ("lite", "films", 1))
#: Seconds each budget call is held: spreads a budget run (about 50 calls, two episodes at once) over a few
#: seconds, longer than the engine's usage flush interval, so kills land both before and after a flush.
#: The hostile cases, which only need their runs finished, hold calls HOSTILE_LATENCY.
BUDGET_LATENCY = 0.1
HOSTILE_LATENCY = 0.02
#: Results fields that legitimately differ between a resumed and a clean run (counters and timings).
VOLATILE_RESULTS = ("usage", "wall_seconds_last_invocation")
#: A call served longer than this before a SIGKILL must be in usage.json: the engine journals each call as
#: its reply arrives (engine/usage.py), so only a reply still on its way to the killed process may be missed;
#: the half second is slack for a loaded machine's event loop.
USAGE_SLACK = 0.5


class CountingEndpoint(FakeEndpoint):
    """A fake endpoint serving one budget run only, stamping each chat request it serves (``served_at``), so the
    calls the run was served are known exactly and, for a killed invocation, which of them it must have
    counted."""

    def reset_counters(self) -> None:
        super().reset_counters()
        self.served_at: list[float] = []

    def _decide(self, body: dict[str, Any]) -> tuple[str, str | None]:
        kind, fault = super()._decide(body)
        if fault is None:
            with self._lock:
                self.served_at.append(time.monotonic())
        return kind, fault

    def served_between(self, start: float, end: float) -> int:
        with self._lock:
            return sum(start <= t < end for t in self.served_at)


def budget_endpoint(responder: Any, seed: int, fault_rate: float = 0.0) -> CountingEndpoint:
    return CountingEndpoint(responder=responder, latency=BUDGET_LATENCY, timeout_sleep=1.3, retry_after=0.01,
                            seed=seed, fault_rate=fault_rate).start()


def budget_args(env: Path, rundir: Path) -> list[str]:
    return ["run", "--env", str(env), "--out", str(rundir), *SETTINGS]


def budget_record(rundir: Path) -> dict[str, Any]:
    """What a finished budget run must reproduce: its metrics' scores, every episode's results without the
    counters and timings, and every episode's trace line for line."""
    metrics = json.loads((rundir / "metrics.json").read_text(encoding="utf-8"))
    record: dict[str, Any] = {"metrics": {k: metrics[k] for k in ("per_unit", "groups", "complete", "missing",
                                                                  "failures")}}
    for results in sorted(rundir.rglob("results.json")):
        unit = str(results.parent.relative_to(rundir))
        data = json.loads(results.read_text(encoding="utf-8"))
        record[f"{unit}/results"] = {k: v for k, v in data.items() if k not in VOLATILE_RESULTS}
        record[f"{unit}/trace"] = (results.parent / "trace.jsonl").read_text(encoding="utf-8")
    return record


def budget_damaged(rundir: Path) -> list[str]:
    """damaged_files, plus budget traces with a (event, step) twice, leftover temp files and pending usage."""
    bad = damaged_files(rundir)
    for trace in sorted(rundir.rglob("trace.jsonl")):
        try:
            keys = [(r["event"], r["step"]) for r in map(json.loads, trace.read_text(encoding="utf-8").splitlines())]
        except (ValueError, KeyError) as exc:
            bad.append(f"{trace.relative_to(rundir)}: {exc}")
            continue
        if len(keys) != len(set(keys)):
            bad.append(f"{trace.relative_to(rundir)}: a tool call recorded twice")
    bad += [f"{p.relative_to(rundir)}: temp file left by a killed writer" for p in rundir.rglob("*")
            if p.is_file() and (p.name.endswith(".tmp") or p.name.startswith(".write-check"))]
    for left in ("usage.pending.json", "usage.journal"):
        if (rundir / left).exists():
            bad.append(f"{left}: left after the run finished")
    return bad


def usage_calls(rundir: Path) -> tuple[int, int]:
    """usage.json's cumulative chat calls and the last invocation's: every role's but the embedder's (the
    endpoint counts chat requests; the stand-in agent never searches, so no embedding is asked for anyway)."""
    usage = json.loads((rundir / "usage.json").read_text(encoding="utf-8"))
    return tuple(sum(u["calls"] for role, u in usage[part].items() if role not in ("total", "embedder"))
                 for part in ("cumulative", "last_invocation"))  # type: ignore[return-value]


def budget_invocation(ep: CountingEndpoint, env: Path, rundir: Path, cache: Path,
                      delay: float | None) -> tuple[int | None, int, int, float]:
    """One invocation, SIGKILLed after ``delay`` s of work (None: run to its end). Returns its exit code (None
    when killed), the calls the endpoint served it, of those the calls it must have counted in usage.json (all
    of them, unless killed), and its seconds of work (from its first request on)."""
    start_t = time.monotonic()
    proc = start_run(ep, budget_args(env, rundir), cache, api_key="soak-key", pythonpath=ROOT / "src",
                     capture=False)
    wait_for_work(ep, proc, ep.model_calls)
    work = time.monotonic()
    killed = kill_after(proc, 600 if delay is None else delay)
    end = time.monotonic()
    served = ep.served_between(start_t, end)
    if not killed:
        return proc.returncode, served, served, end - work
    return None, served, ep.served_between(start_t, end - USAGE_SLACK), end - work


def budget_to_end(ep: CountingEndpoint, env: Path, rundir: Path, cache: Path,
                  max_attempts: int = 10) -> tuple[int, int, int]:
    """Re-run until exit 0; the attempts, the calls served to them all, and to the last one."""
    served = 0
    for attempt in range(1, max_attempts + 1):
        code, last, _, _ = budget_invocation(ep, env, rundir, cache, None)
        served += last
        if code == 0:
            return attempt, served, last
        if code != 1:
            raise SystemExit(f"budget run {rundir} exited {code}")
    raise SystemExit(f"{rundir}: not finished after {max_attempts} attempts")


def usage_problem(rundir: Path, served: int, counted: int, last: int) -> str | None:
    """Why usage.json disagrees with the calls the endpoint served this run (None when it agrees): every call
    served must be counted once (a killed invocation may miss only a reply still on its way) and the last,
    unkilled invocation's count must be exact."""
    cumulative, last_invocation = usage_calls(rundir)
    if not counted <= cumulative <= served:
        return f"usage.json counts {cumulative} calls, the endpoint served {served} ({counted} had to be counted)"
    if last_invocation != last:
        return f"usage.json's last invocation counts {last_invocation} calls, the endpoint served it {last}"
    return None


def writers_said(procs: list[subprocess.Popen[str]], outputs: list[str | None]) -> None:
    """Print what two concurrent writers that did not end as 0 and 2 said (their exit codes and last lines)."""
    for p, out in zip(procs, outputs, strict=True):
        tail = " | ".join((out or "").strip().splitlines()[-3:])
        print(f"note: a concurrent writer exited {p.returncode}: {tail}", flush=True)


def budget_hostile(env: Path, responder: Any, root: Path, reference: dict[str, Any]) -> dict[str, int]:
    """The concurrent-writer and echoed-key cases on a budget run; counts of what went wrong (all 0 = pass)."""
    bad = {"writers_not_refused": 0, "keys_leaked": 0, "success_keys_leaked": 0, "mismatches": 0, "damaged": 0}

    def finish(ep: CountingEndpoint, rundir: Path, cache: Path) -> None:
        ep.force_faults, ep.fault_rate, ep.latency = {}, 0.0, HOSTILE_LATENCY
        budget_to_end(ep, env, rundir, cache)
        bad["mismatches"] += budget_record(rundir) != reference
        bad["damaged"] += len(budget_damaged(rundir))

    # Concurrent writers: the same run twice at once, each call held long enough that the first is still
    # writing when the second starts.
    rundir, cache = root / "hostile_writers", root / "hostile_writers_cache"
    with budget_endpoint(responder, 0) as ep:
        ep.latency = 0.3
        procs = [start_run(ep, budget_args(env, rundir), cache, api_key="soak-key", pythonpath=ROOT / "src")
                 for _ in range(2)]
        while all(p.poll() is None for p in procs):
            time.sleep(0.05)
        ep.latency = HOSTILE_LATENCY  # one has ended (the refused one, unless the lock failed): finish quickly
        codes = sorted(p.wait(timeout=600) for p in procs)
        outputs = [p.communicate()[0] for p in procs]
        bad["writers_not_refused"] += codes != [0, 2]
        if codes != [0, 2]:
            writers_said(procs, outputs)
        finish(ep, rundir, cache)
    # A 401 that echoes the key, from the first chat call (the tool probe) on.
    key = "soak-budget-echoed-key-4e1d7"
    rundir, cache = root / "hostile_echo", root / "hostile_echo_cache"
    with budget_endpoint(responder, 0) as ep:
        ep.force_faults, ep.latency = {"*": "echo_auth_401"}, HOSTILE_LATENCY
        proc = start_run(ep, budget_args(env, rundir), cache, api_key=key, pythonpath=ROOT / "src")
        text, _ = proc.communicate(timeout=600)
        files = [p for p in rundir.rglob("*") if p.is_file()]
        bad["keys_leaked"] += (proc.returncode == 0) + (key in text) + sum(key.encode() in p.read_bytes()
                                                                           for p in files)
        finish(ep, rundir, cache)
    # The key in the served model's id and in every reply of a run that succeeds: in the probe's prose and in
    # the text of every note the agent writes (so in the store, the ledger, the trace and the cache).
    key = "soak-budget-success-key-b83f0"

    def echo(body: dict[str, Any]) -> Any:
        reply = responder(body)
        if not reply.startswith("{"):
            return f"{reply} (Authorization: Bearer {key})"
        call = json.loads(reply)
        if call["tool"] == "write":
            call["args"]["text"] += f" Authorization: Bearer {key}"
        return json.dumps(call)

    rundir, cache = root / "hostile_success_echo", root / "hostile_success_echo_cache"
    with budget_endpoint(echo, 0) as ep:
        ep.model, ep.latency = f"model-{key}", HOSTILE_LATENCY
        proc = start_run(ep, budget_args(env, rundir), cache, api_key=key, pythonpath=ROOT / "src")
        text, _ = proc.communicate(timeout=600)
    files = [p for root_ in (rundir, cache) for p in root_.rglob("*") if p.is_file()]
    bad["success_keys_leaked"] += (proc.returncode != 0) + (key in text) + sum(key.encode() in p.read_bytes()
                                                                               for p in files)
    if proc.returncode != 0:
        print(f"budget success-echo run exited {proc.returncode}: {text[-1500:]}", flush=True)
    return bad


def soak_budget(args: argparse.Namespace, root: Path) -> bool:
    """The budget soak: tiny lite episodes generated by the CLI, an LLM tool agent (the text protocol) played by
    :class:`~amemgym.testing.budget.BudgetScript` behind a faulty endpoint of its own per run; True when
    everything passed."""
    from amemgym.families.budget.io import load_episode
    from amemgym.testing.budget import BudgetScript

    t0 = time.perf_counter()
    rng = random.Random(f"budget:{args.seed}")
    env = root / "envs"
    for tier, domain, seed in BUDGET_EPISODES:
        gen = subprocess.run([sys.executable, "-m", "amemgym", "generate", "--family", "budget", "--tier", tier,
                              "--domain", domain, "--seed", str(seed), "--out", str(env / domain / f"seed{seed}")],
                             capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT / "src"),
                                                                  "AMEMGYM_CACHE_DIR": str(root / "gen-cache")})
        if gen.returncode != 0:
            raise SystemExit(f"budget generate failed: {gen.stdout[-1000:]}{gen.stderr[-1000:]}")
    episodes = [load_episode(p, verify=False)[0] for p in sorted(env.rglob("data.json"))]
    responder = BudgetScript(episodes, wrong_domains=("films",)).body_reply
    # The reference: fault-free, never killed; its usage must equal the endpoint's count exactly.
    usage_bad: list[str] = []
    with budget_endpoint(responder, args.seed) as ep:
        code, served, _, work = budget_invocation(ep, env, root / "reference", root / "reference-cache", None)
        if code != 0:
            raise SystemExit(f"budget reference run exited {code}")
        reference = budget_record(root / "reference")
        problem = usage_problem(root / "reference", served, served, served)
        usage_bad += [f"reference: {problem}"] if problem else []
    print(f"budget reference run: {work:.1f} s of work, {served} requests served", flush=True)
    kills = resumes = mismatches = lost = served_all = 0
    faults: Counter[str] = Counter()
    damaged: list[str] = []
    for k in range(args.runs):
        name = f"run_{k:02d}"
        rundir, cache = root / name, root / f"cache_{k:02d}"
        with budget_endpoint(responder, args.seed * 1000 + k, args.fault_rate) as ep:
            served = counted = 0
            cuts = sorted(rng.uniform(0.05, 1.5 * work) for _ in range(rng.randint(1, 3)))
            for delay in (b - a for a, b in zip([0.0, *cuts], cuts, strict=False)):
                code, s, c, _ = budget_invocation(ep, env, rundir, cache, delay)
                if code not in (None, 0, 1):
                    raise SystemExit(f"budget run {rundir} exited {code}")
                served, counted = served + s, counted + c
                kills += code is None
                resumes += 1
                damaged += [f"budget/{name}/{d}" for d in damaged_files(rundir)]
            # The last invocation is never killed: its own count must be exact.
            attempts, s, last = budget_to_end(ep, env, rundir, cache)
            served, counted, resumes = served + s, counted + s, resumes + attempts - 1
            faults.update(ep.faults)
        damaged += [f"budget/{name}/{d}" for d in budget_damaged(rundir)]
        if budget_record(rundir) != reference:
            mismatches += 1
            diff = sorted(key for key, value in budget_record(rundir).items() if reference.get(key) != value)
            print(f"budget run {k}: differs from the reference in {', '.join(diff)}", flush=True)
        problem = usage_problem(rundir, served, counted, last)
        lost, served_all = lost + served - usage_calls(rundir)[0], served_all + served
        print(f"budget run {k}: {len(cuts)} kill moment(s), {served} calls served, {counted} of them before the "
              f"last half second of a kill, usage.json {usage_calls(rundir)[0]}", flush=True)
        usage_bad += [f"{name}: {problem}"] if problem else []
    print(f"budget runs: {args.runs}")
    print(f"budget faults injected: {sum(faults.values())} "
          f"({', '.join(f'{n} {kind}' for kind, n in sorted(faults.items()))})")
    print(f"budget kills: {kills}")
    print(f"budget resumes: {resumes}")
    print(f"budget results mismatches: {mismatches}")
    print(f"budget usage mismatches: {len(usage_bad)}")
    print(f"budget calls served but not in usage.json (replies on their way at a kill): {lost} of "
          f"{served_all}")
    for line in usage_bad:
        print(f"  {line}")
    print(f"budget files damaged: {len(damaged)}")
    for line in damaged:
        print(f"  {line}")
    bad = budget_hostile(env, responder, root, reference)
    for name, count in bad.items():
        print(f"budget hostile {name.replace('_', ' ')}: {count}")
    print(f"budget wall time: {time.perf_counter() - t0:.1f} s", flush=True)
    return not (mismatches or usage_bad or damaged or any(bad.values()))



def soak_statetrack(args: argparse.Namespace, root: Path) -> bool:
    """The statetrack soak (the bundled tiny environment); True when everything passed."""
    rng = random.Random(args.seed)
    with FakeEndpoint(timeout_sleep=1.3, retry_after=0.01, seed=args.seed) as ep:
        t0 = time.perf_counter()
        proc = start(ep, root / "reference", root / "reference-cache")
        wait_for_work(ep, proc, 0)
        work = time.perf_counter()
        if proc.wait(timeout=600) != 0:
            raise SystemExit(f"reference run failed (exit {proc.returncode})")
        work = time.perf_counter() - work
        reference = scores(root / "reference")
        print(f"reference run: {work:.1f} s of work, {ep.served} requests served", flush=True)
        ep.reset_counters()
        ep.fault_rate = args.fault_rate
        kills = resumes = mismatches = 0
        damaged: list[str] = []
        for k in range(args.runs):
            rundir, cache = root / f"run_{k:02d}", root / f"cache_{k:02d}"
            # Faults slow a run down, so kill moments range past the clean run's length.
            cuts = sorted(rng.uniform(0.05, 1.5 * work) for _ in range(rng.randint(1, 3)))
            for delay in (b - a for a, b in zip([0.0, *cuts], cuts, strict=False)):
                proc = start(ep, rundir, cache)
                resumes += 1
                wait_for_work(ep, proc, ep.model_calls)
                kills += kill_after(proc, delay)
                damaged += [f"run_{k:02d}/{d}" for d in damaged_files(rundir)]
            resumes += run_to_end(ep, rundir, cache)
            resumes -= 1  # the first start of each run is not a resume
            damaged += [f"run_{k:02d}/{d}" for d in damaged_files(rundir)]
            damaged += [f"run_{k:02d}/{p.relative_to(rundir)}: temp file left by a killed writer"
                        for p in rundir.rglob("*") if p.is_file() and p.name.endswith(".tmp")]
            if scores(rundir) != reference:
                mismatches += 1
                print(f"run {k}: metrics differ from the reference", flush=True)
        injected = sum(ep.faults.values())
        print(f"runs: {args.runs}")
        print(f"faults injected: {injected} ({', '.join(f'{n} {kind}' for kind, n in sorted(ep.faults.items()))})")
        print(f"kills: {kills}")
        print(f"resumes: {resumes}")
        print(f"metrics mismatches: {mismatches}")
        print(f"files damaged: {len(damaged)}")
        for line in damaged:
            print(f"  {line}")
        bad = hostile(ep, root, reference)
        for name, count in bad.items():
            print(f"hostile {name.replace('_', ' ')}: {count}")
        print(f"statetrack wall time: {time.perf_counter() - t0:.1f} s", flush=True)
    return not (mismatches or damaged or any(bad.values()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=10, help="independent faulty runs per family (default 10)")
    parser.add_argument("--fault-rate", type=float, default=0.2)
    parser.add_argument("--seed", type=int, default=1, help="seed of the kill moments and the fault draws")
    parser.add_argument("--family", choices=("statetrack", "budget", "both"), default="both",
                        help="which family to soak (default both)")
    parser.add_argument("--keep", type=Path, help="keep the run directories here instead of a temp folder")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    ok = True
    with TemporaryDirectory(prefix="amemgym-soak-") as tmp:
        root = args.keep or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        if args.family in ("statetrack", "both"):
            ok &= soak_statetrack(args, root)
        if args.family in ("budget", "both"):
            ok &= soak_budget(args, root / "budget")
    print(f"wall time: {time.perf_counter() - t0:.1f} s")
    return 0 if ok else 1

if __name__ == "__main__":
    sys.exit(main())
