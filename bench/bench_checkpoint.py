"""The per-session checkpoint of a long conversation, rewritten whole or journaled: CPU and bytes written.

Run: ``PYTHONPATH=src python bench/bench_checkpoint.py [--users 4] [--agents native,rag,awe,awi]``.

It generates a procedural ``v1.base`` environment, runs it with default settings against the zero-latency
benchmark endpoint, and then replays each user's recorded sessions into each agent (``ingest``, as an
off-policy run does; the memory agents' own calls answered in process, embeddings hashed), taking the
record ``{period, session, snapshot}`` after every session and one more at each period's end, as the
episode saves them. Each checkpoint is saved both ways in turn, into two folders: written whole as one
compact JSON line by atomic replace (how earlier versions kept ``state.json``), and saved into the journal
(``engine.journal.JournalFile``: only what changed, appended; a whole rewrite when the file would pass
twice the record). Both fsync. Printed per agent: the CPU per checkpoint of each (this process's CPU time
around the save; the disk wait is not CPU), their ratio, the bytes each wrote per user over the whole run
and their ratio, the final file per user (whole/journal), and the load average before/after.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import Endpoint

from amemgym.engine.journal import JournalFile, fold
from amemgym.records import versioned
from amemgym.storage import atomic_write_json

MODEL = "fake-model"


def run(tmp: Path, users: int) -> Path:
    """Generate and run a ``v1.base`` environment of ``users`` users; returns the run directory."""
    subprocess.run([sys.executable, "-m", "amemgym", "generate", "--config", "v1.base", "--generator", "procedural",
                    "--users", str(users), "--out", str(tmp / "env")], check=True, stdout=subprocess.DEVNULL)
    out = tmp / "run"
    with Endpoint(0.0) as ep:
        env = {**os.environ, "AMEMGYM_CACHE_DIR": str(tmp / "cache"), "OPENAI_API_KEY": "sk-bench"}
        done = subprocess.run([sys.executable, "-m", "amemgym", "run", "--env", str(tmp / "env" / "data.json"),
                               "--out", str(out), "--set", f"llm.default.base_url={ep.url}",
                               "--set", f"llm.default.model={MODEL}"], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"amemgym run exited {done.returncode}: {done.stderr.strip()[-2000:]}")
    return out


def memory_replies(req: Any) -> str:
    """Replies for the memory agents' own calls (AWE's facts and reconciliation, AWI's notes), in process."""
    from amemgym.testing.scripted_model import last_user

    text = last_user(req)
    if req.tag == "memory.extract":
        return json.dumps({"facts": [f"the user said: {line[:80]}" for line in text.splitlines()[-2:]]})
    if req.tag == "memory.reconcile":
        return json.dumps({"actions": [{"op": "add", "id": None, "text": text.splitlines()[-1][:80]}]})
    if req.tag == "memory.awi_write":
        return json.dumps({"updates": {f"note {len(text) % 7}": text[-60:]}})
    return "ok"


async def checkpoints(sessions: Path, agent_name: str) -> list[dict[str, Any]]:
    """The records the episode saves over one user's run: its sessions replayed into ``agent_name`` (the
    recorded exchanges ingested, as an off-policy run does), a checkpoint after each and one at each period's end."""
    from amemgym.agents import AgentContext, resolve_agent
    from amemgym.testing.scripted_model import scripted_client

    agent = resolve_agent(agent_name).build(scripted_client(memory_replies), AgentContext(user_id="u", seed=1))
    records = {(r["period"], r["session"]): r
               for r in map(json.loads, sessions.read_text(encoding="utf-8").splitlines())}
    out = []
    keys = sorted(records)
    for i, (p, s) in enumerate(keys):
        msgs = records[(p, s)]["messages"]
        for user, reply in zip(msgs[::2], msgs[1::2], strict=False):
            await agent.ingest(user["content"], reply["content"], time=records[(p, s)]["time"])
        snapshot = await agent.snapshot()
        out.append(versioned({"period": p, "session": s + 1, "snapshot": snapshot}))
        if i + 1 == len(keys) or keys[i + 1][0] != p:
            out.append(versioned({"period": p + 1, "session": 0, "snapshot": snapshot}))
    return out


Totals = tuple[int, int, dict[str, float], dict[str, int], dict[str, int]]


def replay(rundir: Path, tmp: Path, agent_name: str) -> Totals:
    """Save every checkpoint of every user both ways: (users, checkpoints, CPU s, bytes written, final bytes)."""
    cpu = {"whole": 0.0, "journal": 0.0}
    written = {"whole": 0, "journal": 0}
    final = {"whole": 0, "journal": 0}
    count = users = 0
    for n, sessions in enumerate(sorted(rundir.glob("users/*/sessions.jsonl"))):
        folder = tmp / agent_name / str(n)
        whole, journaled = folder / "state.json", folder / "state.jsonl"
        journal = JournalFile(journaled)
        for record in asyncio.run(checkpoints(sessions, agent_name)):
            before = journaled.stat().st_size if journaled.exists() else 0
            t0 = time.process_time()
            atomic_write_json(whole, record, compact=True)
            t1 = time.process_time()
            rewrote = journal.save(record)
            t2 = time.process_time()
            cpu["whole"] += t1 - t0
            cpu["journal"] += t2 - t1
            written["whole"] += whole.stat().st_size
            written["journal"] += journaled.stat().st_size - (0 if rewrote else before)
            count += 1
        if fold(journaled) != json.loads(whole.read_text(encoding="utf-8")):
            raise SystemExit(f"{journaled}: the journal does not fold to the last checkpoint")
        final["whole"] += whole.stat().st_size
        final["journal"] += journaled.stat().st_size
        users += 1
    return users, count, cpu, written, final


def main() -> None:
    """Parse flags, run, replay and print one table."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", type=int, default=4, help="users of the v1.base environment (default 4)")
    parser.add_argument("--agents", default="native,rag,awe,awi", help="agents to replay into (default all four)")
    args = parser.parse_args()
    load0 = os.getloadavg()[0]
    print(f"v1.base, {args.users} users; every user's checkpoints saved whole and journaled in turn; "
          "each journal folds to its last checkpoint")
    print(f"{'agent':>8}{'ckpts/user':>11}{'whole us':>10}{'journal us':>11}{'CPU ratio':>10}"
          f"{'whole MB/user':>14}{'journal MB/user':>16}{'bytes ratio':>12}{'final KB/user':>14}")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        rundir = run(tmp, args.users)
        for name in args.agents.split(","):
            users, count, cpu, written, final = replay(rundir, tmp, name)
            print(f"{name:>8}{count / users:>11.0f}{cpu['whole'] / count * 1e6:>10.0f}"
                  f"{cpu['journal'] / count * 1e6:>11.0f}{cpu['journal'] / cpu['whole']:>10.2f}"
                  f"{written['whole'] / users / 2**20:>14.2f}{written['journal'] / users / 2**20:>16.2f}"
                  f"{written['journal'] / written['whole']:>12.3f}"
                  f"{final['whole'] / users / 1024:>7.0f}/{final['journal'] / users / 1024:<6.0f}", flush=True)
    print(f"load {load0:.1f}/{os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
