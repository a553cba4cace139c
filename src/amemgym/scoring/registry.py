"""The metric registry: a metric is one pure function plus a name (docs/design.md §5).

Every number of ``metrics.json`` that is a metric, every metric column of the leaderboard and the report,
every spread in ``trials.json`` and every per-period record of the Gym episode comes from here, so a new
metric is one decorated function and nothing else changes. A metric has a *level*, which says what its
function takes and where its value is written:

``cell``
    ``fn(cell: Cell) -> float | None`` on one (user, period) cell's scored questions. Written per cell,
    then per period and overall as the mean over users with a 95 % interval (None cells left out).
``count``
    ``fn(cell: Cell) -> int``: a tally of one cell (questions, failures), written per cell only; the
    ``pooled`` ratios are built from counts.
``pooled``
    ``fn(rows) -> float | None`` on the per-cell rows (the dicts written per cell) of one period, and again
    on every row of the run: a rate pooled over cells rather than a mean of per-cell values.
``run``
    ``fn(rows) -> Any`` on every per-cell row of the run, written in the overall block only.
``unit``
    ``fn(record) -> float | None`` on one unit's record of a family that runs on :mod:`amemgym.engine`'s
    contract (a budget episode's ``results.json``). Registered per family with :func:`unit_metric`, apart from
    the state-tracking metrics above; written per unit, then per group as the mean over units with a 95 %
    interval.

This module is only the registry: it names no metric. The state-tracking family's built-ins (the scores
of §5, the failure counts and rates, the two alternative memory-score aggregations, the headline and the
display order) register in :mod:`amemgym.families.statetrack.metrics`, whose ``Cell`` the cell-level
functions take, with the same decorator a new metric uses::

    @metric("lucky_guesses", "share of questions answered right with a probe wrong", label="lucky guesses")
    def lucky_guesses(cell: Cell) -> float | None:
        ...

Whatever reads the cell, count, pooled or run levels imports that module first, so they are registered.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

Level = Literal["cell", "count", "pooled", "run", "unit"]
#: One cell's values as written under ``per_user`` in ``metrics.json`` (cell and count metrics by name).
Row = Mapping[str, Any]


@dataclass(frozen=True)
class Metric:
    """A registered metric.

    Attributes:
        name: its identity, and its key under ``definitions`` in ``metrics.json``.
        description: what the value means, in one sentence.
        fn: the function (its argument depends on ``level``, see the module docstring).
        level: ``cell``, ``count``, ``pooled`` or ``run``.
        label: the lowercase display name (table columns, console); the curve title is it capitalised.
        short: the name in narrow terminal tables.
        bounded: the value lies in [0, 1], so its interval is clipped to it and its curve drawn on it.
        higher_is_better: the direction in which a value is better; None for a reference (random).
        curve: the report draws it per period (cell metrics).
        define: ``metrics.json`` lists ``description`` under ``definitions``.
        column: the leaderboard and the report's summary table show it.
        trials: ``trials.json`` gives its spread across trials (cell metrics; an analytic one is the same in
            every trial).
        percent: the report shows it as a percentage.
        group: a pooled metric is written under this key of its block (``failure_rates``), as ``key``.
        key: where a pooled metric's value is written (the name by default; every other level writes under
            its name).
        family: the family a unit metric belongs to (None for the state-tracking metrics).
        headline: the metric boards rank by (one among the cell metrics, one per family among unit metrics).
    """

    name: str
    description: str
    fn: Callable[[Any], Any]
    level: Level
    label: str
    short: str
    bounded: bool = True
    higher_is_better: bool | None = True
    curve: bool = True
    define: bool = True
    column: bool = True
    trials: bool = True
    percent: bool = False
    group: str | None = None
    key: str = ""
    family: str | None = None
    headline: bool = False

    @property
    def title(self) -> str:
        """The label with a capital first letter (curve titles)."""
        return self.label[:1].upper() + self.label[1:]

    def read(self, block: Mapping[str, Any]) -> Any:
        """This metric's entry in a per-period or overall block of ``metrics.json`` (None when absent)."""
        if self.group is None:
            return block.get(self.key)
        group = block.get(self.group)
        return group.get(self.key) if isinstance(group, Mapping) else None


_REGISTRY: dict[str, Metric] = {}
#: Keys that ``metrics.json`` (and ``trials.json``) use for other things than a metric: a metric written
#: under one would overwrite them.
RESERVED: frozenset[str] = frozenset({"period", "users", "undefined_memory_cells", "memory_cells", "flags",
                                      "degenerate", "memory_recall", "trial", "complete", "ci"})


def metric(name: str, description: str, *, level: Level = "cell", label: str | None = None,
           short: str | None = None, bounded: bool = True, higher_is_better: bool | None = True,
           curve: bool | None = None, define: bool = True, column: bool | None = None, trials: bool = True,
           percent: bool = False, group: str | None = None, key: str | None = None,
           headline: bool = False) -> Callable[[Callable[[Any], Any]], Callable[[Any], Any]]:
    """Register the decorated function as the metric ``name`` (see :class:`Metric` for the options).

    ``curve`` defaults to True for cell metrics; ``column`` to True for cell and pooled metrics (the ones
    with a value per run that a table can show).

    Raises:
        ValueError: if ``name`` is taken, its key is :data:`RESERVED` or written by another metric or group
            (two entries under one key would silently overwrite each other), ``group`` or ``key`` is
            given to a metric that is not pooled, or ``headline`` to one that is not a cell metric or while
            another cell metric is the headline.
    """
    if (group is not None or key is not None) and level != "pooled":
        raise ValueError(f"metric {name!r}: only pooled metrics sit in a group or under a key of their own")
    if headline and level != "cell":
        raise ValueError(f"metric {name!r}: only a cell metric can be the headline")

    def register(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
        if name in _REGISTRY:
            raise ValueError(f"a metric named {name!r} is already registered")
        # One namespace for every block's top-level keys; a group's members only need distinct keys in it.
        tops = {m.group or m.key for m in _REGISTRY.values()}
        top = group or key or name
        clash = (top in RESERVED or name in RESERVED
                 or (group is None and top in tops)
                 or (group is not None and (group, key or name) in {(m.group, m.key) for m in _REGISTRY.values()})
                 or (group is not None and any(m.group is None and m.key == group for m in _REGISTRY.values())))
        if clash:
            raise ValueError(f"metric {name!r}: its key is reserved or already written by another entry")
        if headline and any(m.headline for m in _REGISTRY.values()):
            raise ValueError(f"metric {name!r}: another metric is already the headline")
        text = label or name.replace("_", " ")
        _REGISTRY[name] = Metric(
            name, description, fn, level, text, short or text, bounded, higher_is_better,
            level == "cell" if curve is None else curve, define,
            level in ("cell", "pooled") if column is None else column, trials, percent, group, key or name,
            headline=headline)
        return fn

    return register


def ratio(name: str, description: str, numerator: str, denominator: str, **options: Any) -> None:
    """Register the pooled metric ``name``: the sum of one count over the cells divided by another's.

    ``numerator`` and ``denominator`` name count metrics; the ratio is None when the denominator sums to
    zero. ``options`` are those of :func:`metric` (``level`` is ``pooled``).
    """

    def pooled(rows: Sequence[Row]) -> float | None:
        total = sum(r[denominator] for r in rows)
        return sum(r[numerator] for r in rows) / total if total else None

    metric(name, description, level="pooled", **options)(pooled)


_UNITS: dict[str, dict[str, Metric]] = {}


def unit_metric(family: str, name: str, description: str, *, label: str | None = None, bounded: bool = True,
                higher_is_better: bool | None = True, headline: bool = False, trials: bool = True,
                column: bool = True) -> Callable[[Callable[[Any], Any]], Callable[[Any], Any]]:
    """Register the decorated ``fn(record) -> float | None`` as the unit metric ``name`` of ``family``.

    Raises:
        ValueError: if the family already has a metric ``name``, or a second headline.
    """

    def register(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
        own = _UNITS.setdefault(family, {})
        if name in own:
            raise ValueError(f"family {family!r} already has a metric named {name!r}")
        if headline and any(m.headline for m in own.values()):
            raise ValueError(f"family {family!r} already has a headline metric")
        text = label or name.replace("_", " ")
        own[name] = Metric(name, description, fn, "unit", text, text, bounded, higher_is_better, curve=False,
                           column=column, trials=trials, family=family, headline=headline)
        return fn

    return register


def unit_metrics(family: str) -> tuple[Metric, ...]:
    """The unit metrics of ``family`` in registration order (empty for a family that registered none)."""
    return tuple(_UNITS.get(family, {}).values())


def unregister_unit_metrics(family: str) -> None:
    """Remove every unit metric of ``family`` (a test's toy family)."""
    _UNITS.pop(family, None)


def unregister(name: str) -> None:
    """Remove a registered metric (a test's or a plugin's); unknown names are ignored."""
    _REGISTRY.pop(name, None)
    if name in _DISPLAY_FIRST:
        _DISPLAY_FIRST.remove(name)


def registered(level: Level | None = None) -> tuple[Metric, ...]:
    """The registered metrics (of one level), in registration order (the built-ins first)."""
    return tuple(m for m in _REGISTRY.values() if level is None or m.level == level)


#: Shown first, in this order (the headline quantities, as :func:`show_first` set them); other metrics follow
#: in registration order.
_DISPLAY_FIRST: list[str] = []


def show_first(*names: str) -> None:
    """Show the metrics ``names`` first, in this order, wherever metrics are listed (a family's headline set).

    Raises:
        ValueError: if a name is not registered.
    """
    missing = [n for n in names if n not in _REGISTRY]
    if missing:
        raise ValueError(f"no registered metric named {', '.join(map(repr, missing))}")
    _DISPLAY_FIRST[:] = list(names)


def in_display_order(level: Level = "cell") -> tuple[Metric, ...]:
    """The registered metrics of one level in the order summaries and reports show them."""
    first = [_REGISTRY[n] for n in _DISPLAY_FIRST if n in _REGISTRY and _REGISTRY[n].level == level]
    return (*first, *(m for m in registered(level) if m not in first))


def table_metrics() -> tuple[Metric, ...]:
    """The metric columns of the leaderboard and the report after the headline: cell metrics in display
    order, then pooled ones in registration order."""
    top = headline().name
    return tuple(m for m in (*in_display_order("cell"), *registered("pooled")) if m.column and m.name != top)


def find(name: str) -> Metric | None:
    """The registered metric called ``name``, if any."""
    return _REGISTRY.get(name)


def headline() -> Metric:
    """The registered headline metric (the cell metric registered with ``headline=True``).

    Raises:
        LookupError: if none is registered (nothing imported :mod:`amemgym.families.statetrack.metrics`).
    """
    for m in _REGISTRY.values():
        if m.headline:
            return m
    raise LookupError("no headline metric is registered")
