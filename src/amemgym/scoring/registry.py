"""The metric registry: a per-(user, period) metric is one pure function plus a name.

:func:`amemgym.scoring.metrics.aggregate` computes every registered metric for each (user, period) cell,
then its mean with a 95 % interval over users, per period and overall; the report draws one curve per
registered metric that asks for one. The built-in metrics (overall, random, upper bound, memory score)
are registered in :mod:`amemgym.scoring.metrics` with the same decorator a new metric uses::

    @metric("lucky_guesses", "share of questions answered right with a probe wrong", title="Lucky guesses")
    def lucky_guesses(cell: Cell) -> float | None:
        ...
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .metrics import QuestionOutcome


@dataclass(frozen=True)
class Cell:
    """The scored questions of one user at one period, with their write/read/utilization diagnosis.

    Attributes:
        user: the user id.
        period: the period index.
        outcomes: the cell's scored questions (at least one).
        diagnosis: per question index, ``{"variables": {var: "ok" | "write" | "read"}, "utilization": bool}``.
    """

    user: str
    period: int
    outcomes: tuple[QuestionOutcome, ...]
    diagnosis: Mapping[int, Mapping[str, Any]]


CellFunction = Callable[[Cell], "float | None"]


@dataclass(frozen=True)
class Metric:
    """A registered per-cell metric.

    Attributes:
        name: the key the metric is written under (per cell, per period and overall).
        description: what the value means, in one sentence.
        fn: the value of one (user, period) cell, None when undefined there (left out of the means).
        title: the display name of its report curve.
        bounded: the value lies in [0, 1], so its interval is clipped to it and its curve drawn on it.
        curve: the report draws it per period.
        define: ``metrics.json`` lists ``description`` under ``definitions``.
    """

    name: str
    description: str
    fn: CellFunction
    title: str
    bounded: bool = True
    curve: bool = True
    define: bool = True


_REGISTRY: dict[str, Metric] = {}


def metric(name: str, description: str, *, title: str | None = None, bounded: bool = True, curve: bool = True,
           define: bool = True) -> Callable[[CellFunction], CellFunction]:
    """Register the decorated function as the per-cell metric ``name`` (see :class:`Metric`).

    Raises:
        ValueError: if ``name`` is taken (two metrics under one key would silently overwrite each other).
    """

    def register(fn: CellFunction) -> CellFunction:
        if name in _REGISTRY:
            raise ValueError(f"a metric named {name!r} is already registered")
        _REGISTRY[name] = Metric(name, description, fn, title or name.replace("_", " ").capitalize(),
                                 bounded, curve, define)
        return fn

    return register


def unregister(name: str) -> None:
    """Remove a registered metric (a test's or a plugin's); unknown names are ignored."""
    _REGISTRY.pop(name, None)


def registered() -> tuple[Metric, ...]:
    """Every registered metric, in registration order (the built-ins first)."""
    return tuple(_REGISTRY.values())


#: Shown first, in this order (the headline quantities); other metrics follow in registration order.
_DISPLAY_FIRST: tuple[str, ...] = ("overall", "upper_bound", "random", "memory_score")


def in_display_order() -> tuple[Metric, ...]:
    """Every registered metric in the order summaries and reports show them."""
    first = [_REGISTRY[n] for n in _DISPLAY_FIRST if n in _REGISTRY]
    return (*first, *(m for m in _REGISTRY.values() if m not in first))


def find(name: str) -> Metric | None:
    """The registered metric called ``name``, if any."""
    return _REGISTRY.get(name)


# The built-ins register on import of metrics.py; importing it here puts them first whichever module a
# caller imports first (metrics.py only needs the names defined above).
from . import metrics as _builtins  # noqa: E402,F401
