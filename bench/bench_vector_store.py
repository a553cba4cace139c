"""Top-k latency and write throughput of the agents' vector store at 1k and 10k memories (dim 384).

Run: ``PYTHONPATH=src python bench/bench_vector_store.py``. Vectors are random unit vectors from a
seeded generator; latencies are medians and 95th percentiles over repeated queries.
"""

from __future__ import annotations

import time

import numpy as np

from amemgym.agents.vector_store import NumpyVectorStore

DIM = 384
TOPK = 30
QUERIES = 200


def unit_vectors(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` random L2-normalised float32 vectors."""
    x = rng.standard_normal((n, DIM)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def bench(n: int, rng: np.random.Generator) -> None:
    """Print write throughput (one add per memory, as agents write) and top-k latency at ``n`` memories."""
    vecs = unit_vectors(rng, n)
    store = NumpyVectorStore()
    start = time.perf_counter()
    for i, v in enumerate(vecs):
        store.add(f"memory {i}", "2021-01-01 19:00", "fact", v)
    add_rate = n / (time.perf_counter() - start)
    batch = NumpyVectorStore()
    start = time.perf_counter()
    batch.add_many([(f"memory {i}", "2021-01-01 19:00", "fact") for i in range(n)], vecs)
    batch_rate = n / (time.perf_counter() - start)
    times = []
    for q in unit_vectors(rng, QUERIES):
        t = time.perf_counter()
        store.search(q, TOPK)
        times.append(time.perf_counter() - t)
    ms = np.array(times) * 1e3
    print(f"{n:>6} memories: top-{TOPK} median {np.median(ms):.3f} ms, p95 {np.percentile(ms, 95):.3f} ms; "
          f"writes {add_rate:,.0f}/s one at a time, {batch_rate:,.0f}/s batched")


def main() -> None:
    """Run the benchmark at 1k and 10k memories."""
    rng = np.random.default_rng(0)
    for n in (1_000, 10_000):
        bench(n, rng)


if __name__ == "__main__":
    main()
