"""Atomic writes removed: write the target in place."""
import os
from pathlib import Path

import amemgym.storage as storage


def naive(path, data):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


storage.atomic_write_bytes = naive
