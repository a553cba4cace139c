"""``python -m amemgym.eval.upperbound``: the original script's path for :mod:`amemgym.compat.upperbound`."""

from __future__ import annotations

from ..compat.flags import main_guard
from ..compat.upperbound import main

__all__ = ["main"]

if __name__ == "__main__":
    main_guard(main)
