"""The fake OpenAI-compatible endpoint for benchmarks, in its own process, with memory-writing replies.

The stock responder answers structured requests with the smallest valid instance (no facts, no notes), so
AWE and AWI would never store anything and their write chains would look shorter than they are. Here
every extraction yields one fact, every reconciliation adds it and every AWI write sets one note, so the
agents' memories grow as they would with a real model and retrieval has something to search.

Run: ``PYTHONPATH=src python bench/_endpoint.py --latency 0.1 --latency-sigma 0.5 --slots 16``; prints the
base URL, serves until SIGTERM, and prints its counters as one JSON line on each SIGUSR1.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import signal
import threading
from collections import defaultdict
from pathlib import Path
from typing import Any

from amemgym.testing.fake_endpoint import FakeEndpoint
from amemgym.testing.responder import default_responder, digest, last_user_text, request_kind, request_schema

#: The role behind each kind of request the responder tells apart.
_ROLE_OF_KIND = {"chat": "agent (reply)", "answer": "agent (answer)", "probe": "agent (probe)",
                 "structured": "memory", "simulator": "simulator"}


class PrefixTally:
    """How much of each prompt repeats an earlier prompt of the same role from its start (prefix caching).

    Two measures per role, in characters of the prompt's messages (role and content, in order):

    * ``previous``: the common prefix with that role's previous prompt (what a server that keeps one
      cached prefix per role could reuse);
    * ``any``: the longest run of leading whole messages that some earlier prompt of the role began with
      (what an unbounded prefix cache, matched message by message, could reuse).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._previous: dict[str, str] = {}
        self._seen: dict[str, set[bytes]] = defaultdict(set)
        self.chars: dict[str, int] = defaultdict(int)
        self.reused_previous: dict[str, int] = defaultdict(int)
        self.reused_any: dict[str, int] = defaultdict(int)
        self.calls: dict[str, int] = defaultdict(int)

    def add(self, body: dict[str, Any]) -> None:
        """Count one request."""
        role = _ROLE_OF_KIND.get(request_kind(body), "other")
        parts = [f"<{m.get('role')}>{m.get('content') or ''}" for m in body.get("messages") or []]
        text = "".join(parts)
        chain, chained, reused_any = hashlib.sha256(), [], 0
        for part in parts:
            chain.update(part.encode("utf-8"))
            chained.append((chain.copy().digest(), len(part)))
        with self._lock:
            seen = self._seen[role]
            for key, length in chained:
                if key not in seen:
                    break
                reused_any += length
            seen.update(key for key, _ in chained)
            previous = self._previous.get(role, "")
            common = 0
            for a, b in zip(previous, text, strict=False):
                if a != b:
                    break
                common += 1
            self._previous[role] = text
            self.calls[role] += 1
            self.chars[role] += len(text)
            self.reused_previous[role] += common
            self.reused_any[role] += reused_any

    def stats(self) -> dict[str, dict[str, float]]:
        """Per role: calls, characters, and the share of them reused from the previous and from any prompt."""
        with self._lock:
            return {role: {"calls": self.calls[role], "chars": self.chars[role],
                           "previous": self.reused_previous[role] / max(self.chars[role], 1),
                           "any": self.reused_any[role] / max(self.chars[role], 1)} for role in self.calls}


def bench_responder(body: dict[str, Any]) -> str:
    """Like the default responder, but memory writes produce content."""
    schema = request_schema(body)
    props = set((schema or {}).get("properties", {}))
    note = f"note {digest(body) % 10_000:04d}: " + " ".join(last_user_text(body).split()[-12:])
    if "facts" in props:
        return json.dumps({"facts": [note]})
    if "actions" in props:
        return json.dumps({"actions": [{"op": "add", "id": None, "text": note}]})
    if "updates" in props:
        return json.dumps({"updates": {f"topic {digest(body) % 7}": note}})
    return default_responder(body)


def main() -> None:
    """Serve until SIGTERM, printing the base URL first."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per call (the median with --latency-sigma)")
    parser.add_argument("--latency-sigma", type=float, default=0.0, help="log-sd of a lognormal latency per call")
    parser.add_argument("--slots", type=int, default=None, help="requests served at once; the rest queue")
    parser.add_argument("--seed", type=int, default=0, help="seed of the latency draws")
    parser.add_argument("--prefix-stats", action="store_true", help="tally prompt prefixes shared per role")
    parser.add_argument("--timeline", help="on each report, also write the (arrived, started, ended) of every "
                        "request that held a slot to this file, as JSON")
    args = parser.parse_args()
    tally = PrefixTally() if args.prefix_stats else None

    def respond(body: dict[str, Any]) -> str:
        if tally is not None:
            tally.add(body)
        return bench_responder(body)

    stop = threading.Event()
    report = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGUSR1, lambda *_: report.set())
    with FakeEndpoint(latency=args.latency, latency_sigma=args.latency_sigma, slots=args.slots, seed=args.seed,
                      responder=respond) as ep:
        print(ep.base_url, flush=True)
        while not stop.is_set():
            if report.wait(0.05):
                report.clear()
                if args.timeline:
                    Path(args.timeline).write_text(json.dumps(ep.timeline()))
                print(json.dumps({**ep.stats(), **({"prefix": tally.stats()} if tally else {})}), flush=True)


if __name__ == "__main__":
    main()
