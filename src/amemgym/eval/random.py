"""``python -m amemgym.eval.random``: the original script's path for :mod:`amemgym.compat.random`."""

from __future__ import annotations

from ..compat.flags import main_guard
from ..compat.random import main

__all__ = ["main"]

if __name__ == "__main__":
    main_guard(main)
