"""Seeds derived from names, so every random choice is reproducible and independent of run order."""

from __future__ import annotations

import hashlib


def derive_seed(*parts: object) -> int:
    """A stable 31-bit seed from any parts (e.g. run seed, user id, period)."""
    digest = hashlib.blake2b("\x1f".join(str(p) for p in parts).encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little") & 0x7FFFFFFF
