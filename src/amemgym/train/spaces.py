"""Text spaces for :class:`~amemgym.train.MemoryEnv`, with or without Gymnasium installed.

Gymnasium's ``spaces.Text`` only admits characters from a fixed charset (letters and digits by
default), but conversation turns hold any Unicode. With Gymnasium installed we subclass it so
membership accepts any string of the right length while sampling still draws from the charset;
without it a minimal stand-in offers the same ``contains``/``sample``/``seed`` surface.
"""

from __future__ import annotations

import random
import string
from typing import Any

try:  # Gymnasium is the optional ``train`` extra.
    import gymnasium as _gym
    from gymnasium import spaces as _spaces
except ImportError:  # pragma: no cover - exercised only without the extra
    _gym = None  # type: ignore[assignment]
    _spaces = None  # type: ignore[assignment]

#: True when Gymnasium is importable and :class:`MemoryEnv` subclasses ``gymnasium.Env``.
HAVE_GYMNASIUM = _gym is not None

#: Upper bound on the length of an observation or action, in characters.
MAX_TEXT = 1_000_000

if _spaces is not None:

    class UnicodeText(_spaces.Text):
        """``gymnasium.spaces.Text`` whose membership test accepts any Unicode string within the length bounds."""

        def __init__(self, max_length: int = MAX_TEXT, *, min_length: int = 0, seed: int | None = None) -> None:
            super().__init__(max_length, min_length=min_length, seed=seed)

        def contains(self, x: Any) -> bool:
            """Any ``str`` whose length is within ``[min_length, max_length]``."""
            return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

else:  # pragma: no cover - exercised only without the extra

    class UnicodeText:  # type: ignore[no-redef]
        """Stand-in for a text space when Gymnasium is not installed."""

        def __init__(self, max_length: int = MAX_TEXT, *, min_length: int = 0, seed: int | None = None) -> None:
            self.max_length = max_length
            self.min_length = min_length
            self._rng = random.Random(seed)

        def seed(self, seed: int | None = None) -> int | None:
            """Reseed the sampler."""
            self._rng = random.Random(seed)
            return seed

        def sample(self) -> str:
            """A random alphanumeric string (short, for smoke tests)."""
            n = self._rng.randint(self.min_length, min(self.max_length, self.min_length + 32))
            return "".join(self._rng.choice(string.ascii_letters + string.digits) for _ in range(n))

        def contains(self, x: Any) -> bool:
            """Any ``str`` whose length is within ``[min_length, max_length]``."""
            return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

        def __contains__(self, x: Any) -> bool:
            return self.contains(x)

        def __repr__(self) -> str:
            return f"UnicodeText({self.min_length}, {self.max_length})"


def env_base() -> type:
    """``gymnasium.Env`` when installed, else ``object``."""
    return _gym.Env if _gym is not None else object
