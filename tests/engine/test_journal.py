"""The checkpoint journal: how could the folded value differ from what was saved, or a kill break the file?

Every test compares JSON *texts* (``json.dumps`` of the fold against ``json.dumps`` of the value saved), so
``1`` against ``1.0``, ``0.0`` against ``-0.0`` and a dict's key order all count. The attacks: random edit
sequences of random JSON values (growing and shrinking lists, items changed in place, keys removed, added
and reordered, numbers swapped for equal ones of another type, non-dict tops, dicts with non-string keys),
a caller that changes its own objects after a save (a plug-in handing out its live state), a kill
mid-append (a torn last line), a broken complete line, and the bytes a growing conversation costs.
"""

from __future__ import annotations

import asyncio
import copy
import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amemgym.engine.journal import JournalFile, changes, fold
from amemgym.engine.unit_writer import UnitWriter
from amemgym.errors import RunError
from amemgym.records import State, versioned
from amemgym.redact import redact_content, register_secret


def text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def saved_and_folded(path: Path, values: list[Any]) -> None:
    """Save each value in turn and check the fold after every save."""
    journal = JournalFile(path)
    for v in values:
        journal.save(v)
        assert text(fold(path)) == text(v)


leaves = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.sampled_from([0.0, -0.0, 1.0, 2.5]),
                   st.text(max_size=6))
json_values = st.recursive(
    leaves,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=3), inner, max_size=4)),
    max_leaves=20,
)


def mutate(value: Any, rng: random.Random) -> Any:
    """``value`` (a fresh copy) with one random edit somewhere inside it."""
    value = copy.deepcopy(value)
    holder = [value]
    parent: Any = holder
    key: Any = 0
    while isinstance(parent[key], (dict, list)) and parent[key] and rng.random() < 0.6:
        parent = parent[key]
        key = rng.choice(list(parent)) if isinstance(parent, dict) else rng.randrange(len(parent))
    node = parent[key]
    edit = rng.randrange(9)
    if isinstance(node, list) and edit < 3:
        node.extend(rng.choice([[1], ["x", {"a": 1}], [[], None]]))  # grows: an extend
    elif isinstance(node, list) and edit == 3 and node:
        del node[rng.randrange(len(node))]  # shrinks
    elif isinstance(node, dict) and edit < 2:
        node[rng.choice(["a", "b", "zz"])] = rng.choice([1, "s", [2]])  # a key set or added
    elif isinstance(node, dict) and edit == 2 and node:
        del node[rng.choice(list(node))]
    elif isinstance(node, dict) and edit == 3:
        parent[key] = dict(reversed(list(node.items())))  # same keys, another order
    elif isinstance(node, str) and edit < 4:
        parent[key] = node + rng.choice(["", "more", "é\n\""])
    elif isinstance(node, str) and edit < 6:
        parent[key] = node[: max(0, len(node) - rng.randrange(4))] + rng.choice(["ab", "c=", "defgh"])  # end rewritten
    elif isinstance(node, (int, float)) and edit < 4:
        # Equal in Python, another JSON text.
        parent[key] = rng.choice([float(node), int(node) if node == node else 0, bool(node), -0.0, 0.0])
    elif edit < 6:
        parent[key] = rng.choice([None, 3, 3.0, True, "t", [], {}, (1, 2), {1: "int key"}])
    else:
        parent[key] = [node]  # wrapped: the type under the key changes
    return holder[0]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(start=json_values, seed=st.integers(0, 2**32 - 1), steps=st.integers(1, 12))
def test_random_edit_sequences_fold_to_exactly_the_value_saved(tmp_path: Path, start: Any, seed: int,
                                                               steps: int) -> None:
    rng = random.Random(seed)
    values = [start]
    for _ in range(steps):
        values.append(mutate(values[-1], rng))
    path = tmp_path / f"j{seed}.jsonl"
    path.unlink(missing_ok=True)
    saved_and_folded(path, values)


@pytest.mark.parametrize("values", [
    pytest.param([{"h": [1]}, {"h": [1, 2]}, {"h": [1, 2, 3], "n": 1}], id="growing list"),
    pytest.param([{"h": [{"c": "a"}, {"c": "b"}]}, {"h": [{"c": "a"}, {"c": "B"}, {"c": "c"}]}],
                 id="item changed in place"),
    pytest.param([{"a": 1, "b": 2}, {"a": 1}, {"a": 1, "b": 2}, {"b": 2, "a": 1}], id="key removed, back, reordered"),
    pytest.param([{"h": [1, 2, 3]}, {"h": [1, 2]}, {"h": []}], id="shrinking list"),
    pytest.param([[1, 2], [1, 2, 3], "now a string", "now a string, grown", 7, None, [1]], id="non-dict tops"),
    pytest.param([{"x": 1}, {"x": 1.0}, {"x": True}, {"x": 0.0}, {"x": -0.0}, {"x": 0}],
                 id="equal numbers, other texts"),
    pytest.param([{"k": {1: "a"}}, {"k": {1: "a", "1x": "b"}}, {"k": {"1": "a"}}], id="non-string keys"),
    pytest.param([{"t": (1, 2)}, {"t": [1, 2, 3]}, {"t": (1, 2, 3, 4)}], id="tuples"),
    pytest.param([{"v": "QUJD"}, {"v": "QUJDREVG"}, {"v": "WFla"}], id="string grows, then changes"),
    pytest.param([{"v": "QUJDRA=="}, {"v": "QUJDREVGRw=="}, {"v": "QUJDREVGR0g="}, {"v": "QUJDREVGR0hJSktM"},
                  {"v": "QUJDREVGRw"}],
                 id="string's end rewritten as it grows (base64 padding), then shortened"),
    pytest.param([{"n": float("nan")}, {"n": float("nan")}, {"n": 1}], id="nan"),
])
def test_each_kind_of_change_round_trips(tmp_path: Path, values: list[Any]) -> None:
    saved_and_folded(tmp_path / "j.jsonl", values)


def test_a_caller_that_changes_its_own_objects_after_a_save_is_still_recorded(tmp_path: Path) -> None:
    # A plug-in may hand out its live state and keep changing it: the journal must compare against its own
    # copy of what it saved, never against the caller's object.
    path, live = tmp_path / "j.jsonl", {"history": ["a"], "n": 0}
    journal = JournalFile(path)
    for i in range(6):
        journal.save(live)
        assert text(fold(path)) == text(live)
        live["history"].append(f"m{i}")
        live["history"][0] += "!"
        live["n"] += 1


def test_a_growing_conversation_appends_and_writes_linear_bytes(tmp_path: Path) -> None:
    path = tmp_path / "state.jsonl"
    journal, history, written, wholes = JournalFile(path), [], 0, 0
    for session in range(200):
        history = history + [{"role": "user", "content": f"turn {session} " * 20},
                             {"role": "assistant", "content": f"reply {session} " * 30}]
        before = path.stat().st_size if path.exists() else 0
        whole = journal.save(versioned({"period": session // 10, "session": session % 10 + 1,
                                        "snapshot": {"kind": "native", "history": history}}))
        wholes += whole
        size = path.stat().st_size
        written += size if whole else size - before
        assert text(fold(path)["snapshot"]["history"]) == text(history)
    final = len(text(fold(path)))
    assert wholes <= 12  # whole rewrites only as the value doubles (log2 of 200 sessions' growth, plus the first)
    assert written < 4 * final  # rewriting it in full every session would be about 100 times the final size
    assert path.stat().st_size <= 2 * final + 200  # compaction keeps the file near the value's size
    lines = path.read_text().splitlines()
    assert all("changes" in json.loads(x) for x in lines[1:]) and "value" in json.loads(lines[0])


def test_a_torn_last_line_is_a_checkpoint_that_did_not_land(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    journal, pad = JournalFile(path), "p" * 100
    assert journal.save({"pad": pad, "h": [1]}) is True
    assert journal.save({"pad": pad, "h": [1, 2]}) is False  # appended
    complete = path.read_bytes()
    assert journal.save({"pad": pad, "h": [1, 2, 3]}) is False
    full = path.read_bytes()
    for cut in range(len(complete) + 1, len(full)):  # a kill mid-append: part of the line, no newline yet
        path.write_bytes(full[:cut])
        assert fold(path) == {"pad": pad, "h": [1, 2]}
    # A new writer (the resumed run) starts with a whole value, so the torn part never sits inside the file.
    resumed = JournalFile(path)
    assert resumed.save({"pad": pad, "h": [1, 2, 9]}) is True
    assert resumed.save({"pad": pad, "h": [1, 2, 9, 10]}) is False
    assert fold(path) == {"pad": pad, "h": [1, 2, 9, 10]} and len(path.read_text().splitlines()) == 2


@pytest.mark.parametrize(("content", "message"), [
    (b'{"journal": 1, "value": {"h": []}}\n{"chan', None),  # torn: fine, the first value holds
    (b'{"journal": 1, "value": {"h": []}}\nnot json\n{"changes": []}\n', "line 2"),
    (b'{"changes": [["set", ["h"], 1]]}\n', "line 1"),
    (b'{"journal": 1, "value": {"h": []}}\n{"changes": [["set", ["nope", "x"], 1]]}\n', "line 2"),
    (b'{"journal": 1, "value": {"h": []}}\n{"changes": [["extend", ["h"], "not a list"]]}\n', "line 2"),
    (b'{"journal": 1, "val', "no complete line"),
    (b"", "no complete line"),
])
def test_a_broken_journal_is_one_clear_error(tmp_path: Path, content: bytes, message: str | None) -> None:
    path = tmp_path / "j.jsonl"
    path.write_bytes(content)
    if message is None:
        assert fold(path) == {"h": []}
        return
    with pytest.raises(RunError, match=message):
        fold(path)


def test_changes_say_only_what_changed() -> None:
    old = {"period": 0, "session": 3, "snapshot": {"history": ["a", "b"], "dropped": 0}}
    new = {"period": 0, "session": 4, "snapshot": {"history": ["a", "b", "c", "d"], "dropped": 0}}
    assert changes(old, new) == [["set", ["session"], 4], ["extend", ["snapshot", "history"], ["c", "d"]]]
    assert changes({"a": 1}, [1]) is None  # another type at the top: a whole value
    # base64 of a growing byte string: the last padded quantum is rewritten, the rest is kept
    assert changes({"v": "QUJDRA=="}, {"v": "QUJDREVGRw=="}) == [["append", ["v"], "EVGRw==", 3]]


def test_the_unit_writer_reads_an_earlier_whole_file_and_replaces_it(tmp_path: Path) -> None:
    # A run written by an earlier version has state.json only: it is read until the journal holds the whole
    # record, and then removed.
    w = UnitWriter(tmp_path, "users/a")
    legacy = versioned({"period": 1, "session": 2, "snapshot": {"history": ["x"]}})
    w.path("state.json").parent.mkdir(parents=True)
    w.path("state.json").write_text(json.dumps(legacy))
    got = w.read_journal("state.jsonl", State, legacy="state.json")
    assert got is not None and (got.period, got.session, got.snapshot) == (1, 2, {"history": ["x"]})
    assert w.read_journal("state.jsonl", State) is None  # no legacy named: nothing

    async def save() -> None:
        w.put_journal("state.jsonl", versioned({"period": 1, "session": 3, "snapshot": {"history": ["x", "y"]}}),
                      replaces="state.json")
        await w.flush()

    asyncio.run(save())
    assert not w.exists("state.json")
    got = w.read_journal("state.jsonl", State, legacy="state.json")
    assert got is not None and (got.session, got.snapshot) == (3, {"history": ["x", "y"]})


def test_a_wrong_shaped_record_in_the_journal_names_the_field(tmp_path: Path) -> None:
    JournalFile(tmp_path / "state.jsonl").save(versioned({"period": -1, "session": 0, "snapshot": {}}))
    with pytest.raises(RunError, match="period"):
        UnitWriter(tmp_path).read_journal("state.jsonl", State)


@pytest.mark.parametrize(("old", "suffix"), [
    pytest.param("notes: my key is jrnl-secret-", "value-42 and more", id="registered key split at the joint"),
    pytest.param("notes: my key is ", "jrnl-secret-value-42", id="registered key after a space"),
    pytest.param("header Bearer ", "abcdefghijklmnop1234", id="bearer token after a space"),
    pytest.param("header Bearer", " abcdefghijklmnop1234", id="bearer, then a space and the token"),
    pytest.param("key sk-proj1234", "5678abcdefghijkl", id="sk- key split inside"),
    pytest.param("url https://user", ":hunter2pass@host", id="password in a url"),
    pytest.param("QUJDjrnl-secret-", "value-42QUJD", id="registered key inside a run"),
    pytest.param("QUJDREVGjrnl", "secretvalue42", id="registered key without a shape character"),
])
def test_a_string_that_grows_never_splits_a_key_between_two_lines(tmp_path: Path, old: str, suffix: str) -> None:
    # Each line is redacted on its own, so a key or credential spanning the joint of an appended string
    # would reach the file unmasked; the whole string must be written again instead.
    register_secret("jrnl-secret-value-42")
    register_secret("jrnlsecretvalue42")
    path, pad = tmp_path / "j.jsonl", "p" * 500  # room to append rather than compact
    journal = JournalFile(path)
    journal.save({"pad": pad, "memory": old})
    journal.save({"pad": pad, "memory": old + suffix})
    written = path.read_text(encoding="utf-8")
    assert written.count("\n") == 2  # the second save was a change line, not a whole rewrite
    assert fold(path)["memory"] == redact_content(old + suffix)  # masked exactly as a whole write would be
    assert "jrnl-secret-value-42" not in written and "hunter2pass" not in written
    assert "abcdefghijklmnop1234" not in written and "5678abcdefghijkl" not in written
    assert "secretvalue42" not in written


@pytest.mark.parametrize(("old", "suffix", "appended"), [
    pytest.param("- likes tea\n", "- moved to Lyon\n", True, id="at a line break"),
    pytest.param("QUJDREVGR0hJSktM" * 20, "TU5PUFFSU1RVVldY" * 4, True, id="base64 (a vector store's matrix)"),
    pytest.param("QUJD-REVGR0hJSktM" * 20, "TU5PUFFS" * 4, False, id="a run with a hyphen"),
    pytest.param("ab:cd" * 20, "efgh", False, id="a run with a colon"),
])
def test_which_growing_strings_are_appended(tmp_path: Path, old: str, suffix: str, appended: bool) -> None:
    path, pad = tmp_path / "j.jsonl", "p" * 2000
    journal = JournalFile(path)
    journal.save({"pad": pad, "memory": old})
    journal.save({"pad": pad, "memory": old + suffix})
    last = json.loads(path.read_text(encoding="utf-8").splitlines()[-1])
    want = ["append", ["memory"], suffix] if appended else ["set", ["memory"], old + suffix]
    assert last == {"changes": [want]}
    assert fold(path)["memory"] == old + suffix


def _memory_script() -> Any:
    """Replies for every built-in agent's memory calls: AWE adds, then updates and deletes (items changed in
    place and lists that shrink), AWI sets keys and later removes one."""
    from amemgym.testing.scripted_model import last_user

    step = iter(range(10**6))

    def respond(req: Any) -> str:
        n = next(step)
        if req.tag == "memory.extract":
            return json.dumps({"facts": [f"fact {n}: {last_user(req)[-20:]}"]})
        if req.tag == "memory.reconcile":
            actions = [[{"op": "add", "id": None, "text": f"new {n}"}],
                       [{"op": "update", "id": 0, "text": f"changed {n}"}],
                       [{"op": "delete", "id": 1}]][n % 3]
            return json.dumps({"actions": actions})
        if req.tag == "memory.awi_write":
            return json.dumps({"updates": {"kitchen": f"v{n}", "shift": None if n % 4 == 0 else "days"}})
        return f"reply {n}"

    return respond


@pytest.mark.parametrize("name", ["native", "rag-2-2-3", "awe-2-2-3", "awi-2-2", "awi-oracle-2-2"])
async def test_every_built_in_agents_snapshots_fold_back_exactly(tmp_path: Path, name: str) -> None:
    from amemgym.agents import AgentContext, resolve_agent
    from amemgym.testing.scripted_model import scripted_client

    ctx = AgentContext(user_id="u1", seed=3, state_schema={"kitchen": ["tiny", "full"], "shift": ["days", "nights"]})
    agent = resolve_agent(name).build(scripted_client(_memory_script()), ctx)
    path = tmp_path / "state.jsonl"
    journal = JournalFile(path)
    for i in range(12):
        await agent.reply(f"message {i} " * (i + 1), time=f"2021-01-{i + 1:02d} 19:00")
        record = versioned({"period": i // 4, "session": i % 4 + 1, "snapshot": await agent.snapshot()})
        journal.save(record)
        assert text(fold(path)) == text(record)
    assert len(path.read_text().splitlines()) > 1  # some checkpoints were appended, not rewritten
