"""``python -m amemgym.eval.overall``: the original script's path for :mod:`amemgym.compat.overall`."""

from __future__ import annotations

from ..compat.flags import main_guard
from ..compat.overall import main

__all__ = ["main"]

if __name__ == "__main__":
    main_guard(main)
