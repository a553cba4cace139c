"""Torn-line recovery removed from read_jsonl."""
import json
from pathlib import Path

import amemgym.storage as storage


def strict(path):
    path = Path(path)
    if not path.exists():
        return
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            yield json.loads(line)


storage.read_jsonl = strict
