"""One encoding per request: the body sent and the cache key come from the same bytes; the key format is stamped."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from amemgym.agents import resolve_agent
from amemgym.config import EndpointConfig, LLMConfig, load_config
from amemgym.errors import ConfigError
from amemgym.families.statetrack.data import load_environment
from amemgym.families.statetrack.runner import Runner
from amemgym.llm import LLMClient, ResponseCache
from amemgym.llm.types import CACHE_KEY_FORMAT, ChatRequest
from amemgym.testing.fake_endpoint import FakeEndpoint
from amemgym.testing.run_script import RunScript
from amemgym.testing.scripted_model import scripted_client

HISTORY = tuple({"role": "user" if i % 2 else "assistant", "content": f"turn {i} ünïcode"} for i in range(40))
SCHEMA = {"type": "object", "properties": {"a": {"type": "string"}}}


def test_the_body_carries_every_field_and_the_key_digests_the_same_bytes() -> None:
    req = ChatRequest(role="agent", messages=HISTORY, temperature=0.7, max_tokens=99, json_schema=SCHEMA,
                      schema_name="answer", seed=5, tools=({"type": "function", "function": {"name": "f"}},),
                      tool_choice="auto")
    body = json.loads(req.body("served-model"))
    assert body == {"model": "served-model", "messages": [dict(m) for m in HISTORY], "temperature": 0.7,
                    "max_tokens": 99, "seed": 5, "tool_choice": "auto",
                    "tools": [{"type": "function", "function": {"name": "f"}}],
                    "response_format": {"type": "json_schema",
                                        "json_schema": {"name": "answer", "schema": SCHEMA, "strict": True}}}
    head = json.dumps([CACHE_KEY_FORMAT, "openai:u", "id"], separators=(",", ":")).encode()
    assert req.cache_key("openai:u", "id") == hashlib.sha256(head + b"\n" + req.wire_fields).hexdigest()
    assert req.body("served-model").endswith(req.wire_fields[1:])


def test_every_field_that_changes_the_reply_changes_the_key_and_key_order_does_not() -> None:
    base = ChatRequest(role="agent", messages=HISTORY, json_schema=SCHEMA, seed=1)
    key = base.cache_key("b", "m")
    variants = [
        ChatRequest(role="agent", messages=HISTORY[:-1], json_schema=SCHEMA, seed=1),
        ChatRequest(role="agent", messages=HISTORY, json_schema=SCHEMA, seed=2),
        ChatRequest(role="agent", messages=HISTORY, json_schema=SCHEMA, seed=1, temperature=0.5),
        ChatRequest(role="agent", messages=HISTORY, json_schema=SCHEMA, seed=1, max_tokens=7),
        ChatRequest(role="agent", messages=HISTORY, json_schema=SCHEMA, seed=1, schema_name="other"),
        ChatRequest(role="agent", messages=HISTORY, json_schema={"type": "string"}, seed=1),
        ChatRequest(role="agent", messages=HISTORY, seed=1),
        ChatRequest(role="agent", messages=HISTORY, json_schema=SCHEMA, seed=1, tool_choice="none"),
    ]
    assert len({key, *(v.cache_key("b", "m") for v in variants)}) == len(variants) + 1
    assert base.cache_key("b2", "m") != key and base.cache_key("b", "m2") != key
    # The role and tag name the caller, not the reply: the same request from another role may share it.
    reordered = tuple({"content": m["content"], "role": m["role"]} for m in HISTORY)
    assert ChatRequest(role="judge", messages=reordered, json_schema=SCHEMA, seed=1, tag="t").cache_key("b", "m") == key


async def test_a_cached_call_encodes_its_history_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    encodes: list[str] = []
    real_json, real_orjson = json.dumps, orjson.dumps

    def counting_json(obj: Any, *args: Any, **kwargs: Any) -> str:
        # The fake endpoint (same process) encodes bodies for its own records; only the client's count.
        if isinstance(obj, dict) and "messages" in obj and sys._getframe(1).f_globals["__name__"].startswith(
                "amemgym.llm"):
            encodes.append("json")
        return real_json(obj, *args, **kwargs)

    def counting_orjson(obj: Any, *args: Any, **kwargs: Any) -> bytes:
        if isinstance(obj, dict) and "messages" in obj:
            encodes.append("orjson")
        return real_orjson(obj, *args, **kwargs)

    monkeypatch.setattr(json, "dumps", counting_json)
    monkeypatch.setattr(orjson, "dumps", counting_orjson)
    with FakeEndpoint() as ep:
        cfg = LLMConfig(default=EndpointConfig(base_url=ep.base_url, model="fake-model", max_retries=0))
        llm = LLMClient(cfg, cache=ResponseCache(tmp_path / "c.sqlite"))
        res = await llm.chat("agent", list(HISTORY))
        await llm.aclose()
    assert ep.calls == 1 and res.text and not res.cached
    assert len(encodes) == 1  # not once for the body and again for the key


def test_a_cache_of_an_older_key_format_is_restamped_and_its_rows_only_miss(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    ResponseCache(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA user_version = 1")
        conn.execute("INSERT INTO responses VALUES ('old', 'agent', 'm', '{\"text\": \"stale\"}')")
    conn.close()
    cache = ResponseCache(path)
    assert len(cache) == 1 and cache.get("old") == {"text": "stale"}
    assert cache.get(ChatRequest(role="agent", messages=HISTORY).cache_key("b", "m")) is None
    cache.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == CACHE_KEY_FORMAT
    conn.close()


def test_a_cache_of_a_newer_key_format_is_refused_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    ResponseCache(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version = {CACHE_KEY_FORMAT + 1}")
    conn.close()
    with pytest.raises(ConfigError, match="newer than this amemgym") as err:
        ResponseCache(path)
    assert "\n" not in str(err.value)


async def test_two_runs_over_one_cache_give_identical_metrics(original_env_path: Path, tmp_path: Path) -> None:
    env = load_environment(original_env_path)
    metrics, calls = [], []
    for name in ("first", "second"):
        llm = scripted_client(RunScript(env.users[0]), cache=tmp_path / "cache.sqlite")
        llm.sample_seed = 3  # a trial seed, mixed into every key: both runs must derive the same ones
        outcome = await Runner(env, resolve_agent("native"), tmp_path / name, load_config("tiny"), llm).run()
        assert outcome.metrics["complete"]
        found = json.loads((tmp_path / name / "metrics.json").read_bytes())
        # What the run cost and how long it took differ by design (the second is all cache replays).
        metrics.append(json.dumps({k: v for k, v in found.items()
                                   if k not in ("usage", "wall_seconds_last_invocation")}).encode())
        calls.append(llm.ledger.totals().calls)
        await llm.aclose()
    assert calls[0] > 0 and calls[1] == 0
    assert metrics[0] == metrics[1]
