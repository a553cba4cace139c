"""The per-session checkpoint of a long conversation, rewritten whole or journaled: CPU and bytes written.

Run: ``PYTHONPATH=src python bench/bench_checkpoint.py [--users 4]``.

It generates a procedural ``v1.base`` environment, runs it with default settings (the native agent, whose
snapshot is its whole conversation) against the zero-latency benchmark endpoint, and then replays each
user's checkpoints from its ``sessions.jsonl``: after every session the record ``{period, session,
snapshot}`` with the conversation so far, and one more at each period's end, as the episode saves them.
Each checkpoint is saved both ways in turn, into two folders: written whole as one compact JSON line by
atomic replace (how earlier versions kept ``state.json``), and saved into the journal
(``engine.journal.JournalFile``: only what changed, appended; a whole rewrite when the file would pass
twice the record). Both fsync. Printed: the CPU per checkpoint of each (this process's CPU time around
the save; the disk wait is not CPU), their ratio, the bytes each wrote per user over the whole run, the
final file per user, and the load average before/after.
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


def checkpoints(sessions: Path) -> list[dict[str, Any]]:
    """The records the episode saves over one user's run, rebuilt from its session lines."""
    records = {(r["period"], r["session"]): r["messages"]
               for r in map(json.loads, sessions.read_text(encoding="utf-8").splitlines())}
    history: list[dict[str, Any]] = []
    out = []
    keys = sorted(records)
    for i, (p, s) in enumerate(keys):
        history += [{"role": m["role"], "content": m["content"]} for m in records[(p, s)]]
        # As the native agent's snapshot() does: fresh message dicts, the same strings.
        snapshot = {"kind": "native", "history": [dict(m) for m in history], "dropped_messages": 0}
        out.append(versioned({"period": p, "session": s + 1, "snapshot": snapshot}))
        if i + 1 == len(keys) or keys[i + 1][0] != p:
            out.append(versioned({"period": p + 1, "session": 0, "snapshot": snapshot}))
    return out


def main() -> None:
    """Parse flags, run, replay and print one table."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", type=int, default=4, help="users of the v1.base environment (default 4)")
    args = parser.parse_args()
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        rundir = run(tmp, args.users)
        cpu = {"whole": 0.0, "journal": 0.0}
        written = {"whole": 0, "journal": 0}
        final = {"whole": 0, "journal": 0}
        count = 0
        for n, sessions in enumerate(sorted(rundir.glob("users/*/sessions.jsonl"))):
            whole, journaled = tmp / "whole" / str(n) / "state.json", tmp / "journal" / str(n) / "state.jsonl"
            journal = JournalFile(journaled)
            for record in checkpoints(sessions):
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
        users = n + 1
    print(f"{users} users of v1.base, native agent, {count} checkpoints ({count / users:.0f} per user); "
          "the journal folds to the last checkpoint of every user")
    print(f"{'':>9}{'CPU us/ckpt':>13}{'MB written/user':>17}{'final KB/user':>15}")
    for name in ("whole", "journal"):
        print(f"{name:>9}{cpu[name] / count * 1e6:>13.0f}{written[name] / users / 2**20:>17.2f}"
              f"{final[name] / users / 1024:>15.0f}")
    print(f"journal / whole: CPU {cpu['journal'] / cpu['whole']:.2f}, bytes written "
          f"{written['journal'] / written['whole']:.3f}; load {load0:.1f}/{os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
