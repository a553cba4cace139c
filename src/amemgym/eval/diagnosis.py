"""``python -m amemgym.eval.diagnosis``: the original script's path for :mod:`amemgym.compat.diagnosis`."""

from __future__ import annotations

from ..compat.diagnosis import main
from ..compat.flags import main_guard

__all__ = ["main"]

if __name__ == "__main__":
    main_guard(main)
