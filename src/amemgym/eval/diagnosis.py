"""``python -m amemgym.eval.diagnosis``: the original script's path for
:mod:`amemgym.families.statetrack.compat.diagnosis`."""

from __future__ import annotations

from ..families.statetrack.compat.diagnosis import main
from ..families.statetrack.compat.flags import main_guard

__all__ = ["main"]

if __name__ == "__main__":
    main_guard(main)
