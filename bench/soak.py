"""Fault + kill soak: many CLI runs against a faulty endpoint, each SIGKILLed and resumed, must match a clean run.

    PYTHONPATH=src python bench/soak.py --runs 10

Every run is ``python -m amemgym run`` on the bundled tiny environment with its own run directory and
response cache, against one fake OpenAI-compatible endpoint (in this process) that injects a fault into
``--fault-rate`` of the chat requests (every kind: 429 with and without Retry-After, 5xx, connection resets,
timeouts, truncated and malformed bodies, empty choices). Each run is killed with SIGKILL at 1-3 random
moments and re-run until it exits 0. At the end every run's metrics must equal those of a fault-free
reference run, every JSON file and JSONL line must parse, and no conversation turn may appear twice in a
trace. Then three hostile cases, each on a fresh run directory (loopback only, a handful of runs):

- concurrent writers: the same run started twice at once; exactly one must be refused (exit 2);
- echoed key: a server answering 401 with the Authorization header in its body; the key must appear in no
  file of the run directory and not in the output;
- empty replies: a server whose replies are empty strings; the run must not exit 0 nor claim completeness,
  and once the server is fixed the same cache must not replay an empty reply;
- a key echoed on the success path: a server that lists the key in its model id and repeats it (as a
  bearer token) in every reply; the run finishes and the key appears in no file, no cache and no output.

Every killed and resumed run must also be left without the temp files of its killed writers.

After each hostile case the run is finished against a healthy server and must match the reference too.
Prints the counts; exits 1 on any mismatch, damaged file, leaked key or wrongly accepted hostile case.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
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
    for p in procs:
        p.communicate()
    ep.latency = 0.0
    bad["writers_not_refused"] += codes != [0, 2]
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=10, help="independent faulty runs (default 10)")
    parser.add_argument("--fault-rate", type=float, default=0.2)
    parser.add_argument("--seed", type=int, default=1, help="seed of the kill moments and the fault draws")
    parser.add_argument("--keep", type=Path, help="keep the run directories here instead of a temp folder")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    with TemporaryDirectory(prefix="amemgym-soak-") as tmp, \
            FakeEndpoint(timeout_sleep=1.3, retry_after=0.01, seed=args.seed) as ep:
        root = args.keep or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        proc = start(ep, root / "reference", root / "reference-cache")
        wait_for_work(ep, proc, 0)
        work = time.perf_counter()
        if proc.wait(timeout=600) != 0:
            raise SystemExit(f"reference run failed: {proc.stderr.read().decode(errors='replace')[-2000:]}")
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
        print(f"wall time: {time.perf_counter() - t0:.1f} s")
    return 1 if mismatches or damaged or any(bad.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
