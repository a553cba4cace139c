"""The response cache's batched writes: found before they are written, written whole, never a damaged file."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

from amemgym.config import EndpointConfig, LLMConfig
from amemgym.llm import LLMClient, ResponseCache
from amemgym.testing.fake_endpoint import FakeEndpoint

SRC = str(Path(__file__).resolve().parents[2] / "src")


def value(i: int) -> dict[str, object]:
    return {"text": f"reply {i}", "prompt_tokens": i, "completion_tokens": 1}


def rows_in_file(path: Path) -> dict[str, str]:
    """What another process reading the file sees (a plain SQLite connection)."""
    with sqlite3.connect(path) as conn:
        return dict(conn.execute("SELECT key, value FROM responses").fetchall())


def test_a_stored_reply_is_found_at_once_and_written_with_its_batch(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    cache = ResponseCache(path, batch_rows=3, batch_seconds=3600)
    cache.put("a", "agent", "m", value(1))
    cache.put("b", "agent", "m", value(2))
    assert cache.get("a") == value(1) and cache.get("b") == value(2)  # still waiting, found all the same
    assert rows_in_file(path) == {}
    cache.put("c", "agent", "m", value(3))  # the third fills the batch: all three in one transaction
    assert set(rows_in_file(path)) == {"a", "b", "c"}
    cache.put("a", "agent", "m", value(9))  # last write wins, waiting or written
    assert cache.get("a") == value(9)
    cache.flush()
    assert cache.get("a") == value(9) and len(cache) == 3
    cache.close()


def test_every_cache_of_a_process_on_one_file_sees_what_the_others_stored(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    first = ResponseCache(path, batch_rows=1000, batch_seconds=3600)
    second = ResponseCache(path, batch_rows=1000, batch_seconds=3600)
    first.put("a", "agent", "m", value(1))
    assert second.get("a") == value(1) and rows_in_file(path) == {}  # not written yet, found all the same
    second.flush()  # either one writes what both stored
    assert set(rows_in_file(path)) == {"a"} and first.get("a") == value(1)
    first.close()
    second.close()


def test_an_old_waiting_reply_is_written_by_the_next_store(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    cache = ResponseCache(path, batch_rows=1000, batch_seconds=0.0)
    cache.put("a", "agent", "m", value(1))
    assert set(rows_in_file(path)) == {"a"}
    cache.close()


def test_closing_and_the_clients_aclose_write_what_waits(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    cache = ResponseCache(path, batch_rows=1000, batch_seconds=3600)
    cache.put("a", "agent", "m", value(1))
    cache.close()
    assert set(rows_in_file(path)) == {"a"}

    import asyncio

    cache = ResponseCache(path, batch_rows=1000, batch_seconds=3600)
    llm = LLMClient(LLMConfig(default=EndpointConfig(base_url="http://127.0.0.1:9/v1", model="m")), cache=cache)
    cache.put("b", "agent", "m", value(2))
    asyncio.run(llm.aclose())
    assert set(rows_in_file(path)) == {"a", "b"}
    assert cache.get("b") == value(2)  # the cache stays open after the client's aclose
    cache.close()


def _writer(path: Path, n: int, *, then: str) -> subprocess.Popen[str]:
    code = textwrap.dedent(f"""
        import sys, time
        from pathlib import Path
        from amemgym.llm.cache import ResponseCache
        cache = ResponseCache(Path({str(path)!r}), batch_rows=64, batch_seconds=3600)
        for i in range({n}):
            cache.put(f"k{{i}}", "agent", "m", {{"text": f"reply {{i}}", "prompt_tokens": i, "completion_tokens": 1}})
        print("stored", flush=True)
        {then}
    """)
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": SRC})


def test_a_sigkill_loses_only_the_waiting_replies_and_never_damages_the_file(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    proc = _writer(path, 150, then="time.sleep(60)")
    assert proc.stdout is not None and proc.stdout.readline().strip() == "stored"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    rows = rows_in_file(path)
    # Two whole batches were written; the 22 replies still waiting are lost, nothing else, nothing torn.
    assert sorted(rows) == sorted(f"k{i}" for i in range(128))
    reopened = ResponseCache(path)
    assert all(reopened.get(f"k{i}") == value(i) for i in range(128))
    assert reopened.get("k140") is None
    reopened.close()


def test_a_normal_exit_writes_what_waits_without_a_close(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    proc = _writer(path, 10, then="")
    assert proc.wait(timeout=30) == 0
    assert sorted(rows_in_file(path)) == sorted(f"k{i}" for i in range(10))


async def test_same_seed_and_cache_give_the_same_results_bit_for_bit(tmp_path: Path) -> None:
    """More calls than a batch, the first client closed with aclose only: a second replays every one."""
    path = tmp_path / "c.sqlite"
    prompts = [[{"role": "user", "content": f"question number {i} about dinner"}] for i in range(150)]

    def client(ep: FakeEndpoint) -> LLMClient:
        cfg = LLMConfig(default=EndpointConfig(base_url=ep.base_url, model="fake-model", max_retries=1))
        llm = LLMClient(cfg, cache=ResponseCache(path))
        llm.sample_seed = 7
        return llm

    import asyncio

    with FakeEndpoint() as ep:
        first = client(ep)
        one = await asyncio.gather(*(first.chat("agent", p) for p in prompts))
        await first.aclose()
        served = ep.calls
        second = client(ep)
        two = await asyncio.gather(*(second.chat("agent", p) for p in prompts))
        await second.aclose()
        assert ep.calls == served == len(prompts)  # the second client asked the model nothing
    assert [(r.text, r.prompt_tokens, r.completion_tokens) for r in one] == \
        [(r.text, r.prompt_tokens, r.completion_tokens) for r in two]
    assert all(r.cached for r in two) and not any(r.cached for r in one)
