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
import json
import signal
import threading
from typing import Any

from amemgym.testing.fake_endpoint import FakeEndpoint
from amemgym.testing.responder import default_responder, digest, last_user_text, request_schema


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
    args = parser.parse_args()
    stop = threading.Event()
    report = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGUSR1, lambda *_: report.set())
    with FakeEndpoint(latency=args.latency, latency_sigma=args.latency_sigma, slots=args.slots, seed=args.seed,
                      responder=bench_responder) as ep:
        print(ep.base_url, flush=True)
        while not stop.is_set():
            if report.wait(0.05):
                report.clear()
                print(json.dumps(ep.stats()), flush=True)


if __name__ == "__main__":
    main()
