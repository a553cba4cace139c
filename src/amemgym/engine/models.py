"""The served models a run is pinned to: recorded on the first invocation, checked on every resume."""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import RunError

__all__ = ["pin_models"]


def pin_models(root: Path, before: Mapping[str, Mapping[str, Any]], now: Mapping[str, str], *,
               allow_change: bool) -> tuple[dict[str, dict[str, Any]], list[dict[str, str]]]:
    """The ``models`` entry of the manifest for ``now`` (role -> served model), and the changes from ``before``.

    A role new to the run is added; a role whose served model differs is a change, refused unless allowed.

    Raises:
        RunError: a role's model changed and ``allow_change`` is off.
    """
    changes = []
    for role, served in now.items():
        old = before.get(role)
        if old is not None and old.get("served") != served:
            changes.append({"role": role, "from": str(old.get("served")), "to": served})
    if changes and not allow_change:
        c = changes[0]
        raise RunError(f"{root}: was run with {c['role']} model {c['from']!r}, now {c['to']!r}; refusing to mix "
                       "models in one run (use a new --out directory, or pass --allow-model-change)")
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    models = {**{r: dict(m) for r, m in before.items()}, **{r: {"served": s} for r, s in now.items()}}
    return models, [{**c, "at": when} for c in changes]
