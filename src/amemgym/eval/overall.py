"""``python -m amemgym.eval.overall``: the original script's path for
:mod:`amemgym.families.statetrack.compat.overall`."""

from __future__ import annotations

from ..families.statetrack.compat.flags import main_guard
from ..families.statetrack.compat.overall import main

__all__ = ["main"]

if __name__ == "__main__":
    main_guard(main)
