"""Long-term vector memory for the RAG and AWE agents: a small protocol and an exact in-process store.

Why a plain numpy matrix (measured on the 2-core reference machine, dim 384, top-30, float32):

* numpy exact search (matrix-vector product + ``argpartition``): median 0.08 ms at 1k memories and
  0.45-0.65 ms at 10k (p95 1.6 ms single-threaded; the BLAS thread pool can spike p95 to tens of ms
  when the machine is oversubscribed, ``OMP_NUM_THREADS=1`` avoids that); 45k-100k single adds/s with
  amortised growth; no extra dependency, exact results, and the snapshot is just the matrix.
* Qdrant local mode (``qdrant-client``, in-memory): 2 ms at 1k and 22 ms at 10k per query, ~6-8k
  inserts/s; its on-disk mode also locks its folder to one process.
* sqlite-vec: a 160 kB wheel, but this Python's ``sqlite3`` is built without extension loading, so it
  would need ``pysqlite3``/``apsw`` as well.
* LanceDB: about 215 MB of wheels (lancedb + pylance + pyarrow) for a store that holds a few thousand
  rows per user.

``bench/bench_vector_store.py`` prints the current numbers. One agent holds one store per user, so a
store never sees more than a few thousand memories in the paper's protocol.

Plugging in a server store (Qdrant, pgvector, ...) for very large runs: implement :class:`VectorStore`
(``add``, ``update``, ``delete``, ``search``, ``snapshot``, ``restore``, ``__len__``, ``records``) with one
collection (or table) per user and run, keyed by the integer ids this module hands out, and pass a
factory returning it as the ``store_factory`` argument of the RAG/AWE agent classes (or as
``AgentContext.store_factory``, which is how the budget family hands them its metered store). ``snapshot`` must
return JSON-ready data that ``restore`` turns back into the same contents (for a server store this can be
the collection name plus an export, or the export alone); the runner persists it with every checkpoint.
"""

from __future__ import annotations

import base64
from dataclasses import asdict, dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..errors import AgentError


@dataclass(frozen=True)
class MemoryRecord:
    """One stored memory.

    Attributes:
        id: store-assigned integer id, increasing in insertion order.
        text: what is remembered.
        time: the simulated time the memory was written (``YYYY-MM-DD HH:MM``), never wall clock.
        kind: a tag such as ``user``/``assistant`` (RAG) or ``fact`` (AWE).
    """

    id: int
    text: str
    time: str
    kind: str = "fact"


@dataclass(frozen=True)
class Hit:
    """A search result: the record and its cosine similarity to the query."""

    record: MemoryRecord
    score: float


@runtime_checkable
class VectorStore(Protocol):
    """Where a memory agent keeps embedded memories (one store per agent, i.e. per user)."""

    def add(self, text: str, time: str, kind: str, vector: np.ndarray) -> int:
        """Store a memory and return its new id."""
        ...

    def update(self, memory_id: int, text: str, time: str, vector: np.ndarray) -> None:
        """Replace the text, time and vector of a memory."""
        ...

    def delete(self, memory_id: int) -> None:
        """Remove a memory."""
        ...

    def search(self, vector: np.ndarray, k: int) -> list[Hit]:
        """The ``k`` most similar memories, best first; ties broken by lower id."""
        ...

    def records(self) -> list[MemoryRecord]:
        """Every memory in id order."""
        ...

    def snapshot(self) -> dict[str, Any]:
        """JSON-ready contents that :meth:`restore` reproduces exactly."""
        ...

    def restore(self, snapshot: dict[str, Any]) -> None:
        """Replace the contents with a snapshot."""
        ...

    def __len__(self) -> int:
        """Number of memories."""
        ...


class NumpyVectorStore:
    """Exact cosine search over an in-memory float32 matrix (vectors are expected L2-normalised).

    Rows are kept in id order; deletes compact the matrix, so search is one matrix-vector product and
    an ``argpartition``. Ties in similarity go to the older memory (lower id), so results are
    deterministic whatever the BLAS thread count.
    """

    def __init__(self) -> None:
        self._records: list[MemoryRecord] = []
        # Rows beyond len(self._records) are spare capacity, doubled when full, so adding one memory at a
        # time stays amortised O(dim) instead of copying the whole matrix on every write.
        self._buf = np.zeros((0, 0), dtype=np.float32)
        self._next_id = 0

    @property
    def _matrix(self) -> np.ndarray:
        return self._buf[: len(self._records)]

    def _reserve(self, extra: int, dim: int) -> None:
        n = len(self._records)
        if self._buf.shape[1] == 0:
            self._buf = np.zeros((max(16, extra), dim), dtype=np.float32)
        elif n + extra > self._buf.shape[0]:
            grown = np.zeros((max(2 * self._buf.shape[0], n + extra), self._buf.shape[1]), dtype=np.float32)
            grown[:n] = self._buf[:n]
            self._buf = grown

    def __len__(self) -> int:
        return len(self._records)

    def _row(self, memory_id: int) -> int:
        for i, rec in enumerate(self._records):
            if rec.id == memory_id:
                return i
        raise AgentError(f"vector store has no memory with id {memory_id}")

    def _check_vector(self, vector: np.ndarray) -> np.ndarray:
        vec = np.asarray(vector, dtype=np.float32).reshape(-1)
        if self._buf.shape[1] and vec.shape[0] != self._buf.shape[1]:
            raise AgentError(f"vector of dimension {vec.shape[0]} does not match the store's {self._buf.shape[1]}")
        return vec

    def add(self, text: str, time: str, kind: str, vector: np.ndarray) -> int:
        """Append a memory; ids are never reused."""
        vec = self._check_vector(vector)
        rec = MemoryRecord(self._next_id, text, time, kind)
        self._reserve(1, vec.shape[0])
        self._buf[len(self._records)] = vec
        self._next_id += 1
        self._records.append(rec)
        return rec.id

    def add_many(self, items: list[tuple[str, str, str]], vectors: np.ndarray) -> list[int]:
        """Append several ``(text, time, kind)`` memories with one matrix copy.

        Public API for bulk loading (a plug-in importing memories; ``bench/bench_vector_store.py`` measures
        it); the built-in agents write one memory at a time with :meth:`add`.
        """
        if not items:
            return []
        vecs = np.asarray(vectors, dtype=np.float32).reshape(len(items), -1)
        self._check_vector(vecs[0])
        ids = list(range(self._next_id, self._next_id + len(items)))
        self._reserve(len(items), vecs.shape[1])
        self._buf[len(self._records) : len(self._records) + len(items)] = vecs
        self._next_id += len(items)
        self._records += [MemoryRecord(i, t, tm, k) for i, (t, tm, k) in zip(ids, items, strict=True)]
        return ids

    def update(self, memory_id: int, text: str, time: str, vector: np.ndarray) -> None:
        """Rewrite one memory in place (it keeps its id)."""
        row = self._row(memory_id)
        old = self._records[row]
        self._buf[row] = self._check_vector(vector)
        self._records[row] = MemoryRecord(old.id, text, time, old.kind)

    def delete(self, memory_id: int) -> None:
        """Drop one memory."""
        row = self._row(memory_id)
        n = len(self._records)
        self._buf[row : n - 1] = self._buf[row + 1 : n]
        del self._records[row]

    def search(self, vector: np.ndarray, k: int) -> list[Hit]:
        """Exact top-k by cosine similarity, best first, ties to the lower id."""
        n = len(self._records)
        if n == 0 or k <= 0:
            return []
        scores = self._matrix @ self._check_vector(vector)
        if k < n:
            # Partition at the k-th score, then keep every row tied with it so the tie-break sees them all.
            kth = np.partition(scores, n - k)[n - k]
            idx = np.nonzero(scores >= kth)[0]
        else:
            idx = np.arange(n)
        # Rows are in id order, so sorting by (-score, row) breaks ties by lower id.
        order = idx[np.lexsort((idx, -scores[idx]))][:k]
        return [Hit(self._records[i], float(scores[i])) for i in order]

    def records(self) -> list[MemoryRecord]:
        """All memories in id order."""
        return list(self._records)

    def snapshot(self) -> dict[str, Any]:
        """Records plus the float32 matrix as base64 (bit-exact)."""
        return {
            "next_id": self._next_id,
            "records": [asdict(r) for r in self._records],
            "dim": int(self._buf.shape[1]) if self._records else 0,
            "vectors": base64.b64encode(np.ascontiguousarray(self._matrix, dtype="<f4").tobytes()).decode("ascii"),
        }

    def restore(self, snapshot: dict[str, Any]) -> None:
        """Load a snapshot from :meth:`snapshot`."""
        try:
            records = [MemoryRecord(**r) for r in snapshot["records"]]
            dim = int(snapshot["dim"])
            raw = np.frombuffer(base64.b64decode(snapshot["vectors"]), dtype="<f4")
            matrix = raw.reshape(len(records), dim).astype(np.float32) if records else np.zeros((0, 0), np.float32)
            next_id = int(snapshot["next_id"])
        except (KeyError, TypeError, ValueError) as exc:
            raise AgentError(f"vector store snapshot is malformed: {exc}") from None
        self._records, self._buf, self._next_id = records, np.ascontiguousarray(matrix), next_id
