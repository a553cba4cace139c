"""Environment families: what each one provides to the shared commands, and how a file finds its family.

A *family* is one kind of benchmark environment: ``statetrack`` (a simulated user whose state changes over
periods, probed with multiple-choice questions) and ``budget`` (a stream of entity documents stored under a
write budget). The commands (``generate``, ``validate``, ``run``, ``report``, ``leaderboard``, ``compare``,
``export``) never ask which family they run: they resolve a :class:`Family` from the registry and call it.

- An environment file names its family in a top-level ``family`` field; a file without one (including
  the original AMemGym ``data.json``) belongs to :data:`DEFAULT_FAMILY`.
- A run directory belongs to the first registered family whose :meth:`Family.owns_run` accepts it, else
  to the default family.
- The training surface (a Gym environment, ``amemgym export``) is optional: :class:`TrainingFamily` adds it,
  and :func:`training_method` refuses a family without it in one line.

Built-in families are imported on first use, so importing this package (and ``amemgym run --help``)
loads nothing heavy.
"""

from __future__ import annotations

import importlib
import inspect
import json
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, runtime_checkable

from ..errors import ConfigError, DataError
from .folders import episode_files, folder_family

if TYPE_CHECKING:
    from rich.console import Console

#: The family of environment files and run directories that do not name one.
DEFAULT_FAMILY = "statetrack"

#: Built-in families: name -> "module:attribute" of the object implementing :class:`Family`.
BUILTIN: dict[str, str] = {
    "statetrack": "amemgym.families.statetrack.family:FAMILY",
    "budget": "amemgym.families.budget.family:FAMILY",
}


@dataclass(frozen=True)
class NoOptions:
    """The options of a family that takes none of its own for a command (beyond the shared ones)."""


#: A family's own options for one command: a frozen dataclass whose fields are named after the options.
Opts = TypeVar("Opts")


@dataclass(frozen=True)
class OptionValue:
    """One family-specific option as the command line gave it: ``given`` is False when it kept its default."""

    flag: str
    value: Any
    given: bool


@dataclass(frozen=True)
class GenerateRequest(Generic[Opts]):
    """The ``generate`` options every family takes, and the family's own in ``options``.

    Attributes:
        out_dir: folder to write into.
        options: the family's ``generate_options`` (statetrack: generator, users, personas, domains, packs,
            allow_partial, strict_checks; budget: tier, domain, official).
        config: config preset or file; sets: ``KEY.PATH=VALUE`` overrides.
        seed: the generation seed (None: the config's); salt: varies surface forms at the same seed.
    """

    out_dir: Path
    options: Opts
    config: str | None = "tiny"
    sets: list[str] | None = None
    seed: int | None = None
    salt: int = 0


@dataclass(frozen=True)
class ValidateRequest(Generic[Opts]):
    """The ``validate`` options every family takes (see ``amemgym validate --help``); the family's own in
    ``options`` (statetrack: margin, seed, embedder, gate_prior, judge; budget: seeds)."""

    env: Path
    options: Opts
    json_out: Path | None = None
    config: str | None = None
    sets: list[str] | None = None


@dataclass(frozen=True)
class RunRequest(Generic[Opts]):
    """The ``run`` options every family takes (see ``amemgym run --help``); ``env`` None means the bundled demo.
    The family's own are in ``options`` (statetrack: off_policy, resimulate_leaks, dry_run, json)."""

    out_dir: Path
    options: Opts
    env: Path | None = None
    agent: str = "native"
    config: str | None = None
    sets: list[str] | None = None
    serial: bool = False
    trials: int = 1
    executor: str = "local"
    ray_address: str | None = None
    models: Path | None = None
    no_cache: bool = False
    allow_model_change: bool = False
    model: str | None = None
    user_model: str | None = None
    judge_model: str | None = None
    max_connections: int | None = None
    limit: int | None = None


def family_options(family: Family, command: str, values: Mapping[str, OptionValue]) -> Any:
    """The family's own options for ``command`` (its ``<command>_options`` model, else :class:`NoOptions`).

    ``values`` holds every family-specific option of the command line, by field name. The family receives
    only the fields its model declares; an option it does not declare is refused when it was given, so an
    option is never accepted and then silently ignored.

    Raises:
        ConfigError: an option the family does not take was given (one line naming the flags).
    """
    model = getattr(family, f"{command}_options", NoOptions)
    taken = {f.name for f in fields(model)}
    refused = list(dict.fromkeys(v.flag for name, v in values.items() if name not in taken and v.given))
    if refused:
        where = "runs yet" if command == "run" else command
        raise ConfigError(f"{', '.join(refused)} not supported for {family.name}-family {where}")
    return model(**{name: v.value for name, v in values.items() if name in taken})


@dataclass(frozen=True)
class Board:
    """One family's leaderboard over its run directories, ready to print or save.

    Attributes:
        family: the family's name; boards of different families are never merged.
        title: table title.
        columns: column names of ``rows`` (display strings).
        rows: one row per entry, first column the group number (groups never span families).
        notes: lines to print after the table (unranked runs and why, grouping notes).
        markdown: the board as a Markdown table with its explanation.
        csv: the board as CSV with full-precision numbers.
    """

    family: str
    title: str
    columns: tuple[str, ...]
    rows: list[list[str]]
    notes: list[str]
    markdown: str
    csv: str


@runtime_checkable
class Family(Protocol):
    """What an environment family provides to the shared commands.

    Every method that a command calls returns the command's exit code (0 success, 1 a failed check) or
    raises an :class:`~amemgym.errors.AMemGymError` for bad input, which the command turns into one line
    and exit 2.

    A family may declare its own options per command as class attributes ``generate_options``,
    ``validate_options`` and ``run_options`` (frozen dataclasses); the command builds the one of the
    family it resolved (:func:`family_options`) and refuses an option the family does not declare. Without
    one the family takes only the shared options.
    """

    name: str

    def owns_run(self, run_dir: Path) -> bool:
        """Whether ``run_dir`` holds a run of this family (read from its manifest or results, never guessed)."""
        ...

    def generate(self, request: GenerateRequest[Any], console: Console) -> int:
        """Write one or more environment files under ``request.out_dir``."""
        ...

    def validate(self, request: ValidateRequest[Any], console: Console) -> int:
        """Run the family's validity checks on an environment file; 1 if any fails."""
        ...

    def run(self, request: RunRequest[Any], console: Console) -> int:
        """Run (or resume) an agent on an environment into ``request.out_dir``."""
        ...

    def report(self, run_dirs: list[Path], out_file: Path, *, env: Path | None, figures: Path | None,
               console: Console) -> int:
        """Write one self-contained HTML report over this family's run directories."""
        ...

    def leaderboard(self, run_dirs: list[Path]) -> Board:
        """Rank this family's runs within groups that are comparable (same tier/environment and protocol)."""
        ...

    def compare(self, run_a: Path, run_b: Path, *, bootstrap: int, seed: int, console: Console) -> int:
        """Paired comparison of two runs (or run collections) of this family: B - A."""
        ...


_LOADED: dict[str, Family] = {}
_EXTRA: dict[str, Family] = {}


def register_family(family: Family) -> None:
    """Add a family (a plug-in or a test double) to the registry under ``family.name``.

    Raises:
        ConfigError: when the name is taken or the object does not satisfy :class:`Family`.
    """
    problems = check_family(family)
    if problems:
        raise ConfigError(f"family {getattr(family, 'name', family)!r} is not usable: {'; '.join(problems)}")
    if family.name in BUILTIN or family.name in _EXTRA:
        raise ConfigError(f"a family named {family.name!r} is already registered")
    _EXTRA[family.name] = family


def unregister_family(name: str) -> None:
    """Remove a family added with :func:`register_family` (built-ins stay)."""
    _EXTRA.pop(name, None)


def family_names() -> list[str]:
    """Registered family names, built-ins first, the default first of all."""
    return [*BUILTIN, *_EXTRA]


def get_family(name: str) -> Family:
    """The registered family called ``name``, imported on first use.

    Raises:
        ConfigError: for an unknown name (the message lists the known ones).
    """
    if name in _EXTRA:
        return _EXTRA[name]
    if name not in BUILTIN:
        raise ConfigError(f"unknown family {name!r} (known: {', '.join(family_names())})")
    if name not in _LOADED:
        module, attr = BUILTIN[name].split(":")
        _LOADED[name] = getattr(importlib.import_module(module), attr)
    return _LOADED[name]


def declared_family(path: Path) -> str | None:
    """The ``family`` a data file declares at its top level, or None (older files declare none).

    Only a file whose top level is a JSON object holding the word ``"family"`` is parsed here (wherever the key
    sits, as JSON keys have no order); a top-level list, the statetrack users, is recognised from its first
    byte, and the word is looked for a chunk at a time, so a large statetrack file is not parsed twice. An
    unreadable file gives None: the family's own loader reports the problem.
    """
    # Only a regular file is peeked at: opening a FIFO would block until a writer appears. The family's
    # loader then refuses the non-file in one line.
    if not path.is_file():
        return None
    word = b'"family"'
    try:
        with path.open("rb") as fh:
            head = fh.read(4096).removeprefix(b"\xef\xbb\xbf").lstrip()
            while not head and (chunk := fh.read(4096)):
                head = chunk.lstrip()
            if not head.startswith(b"{"):
                return None
            seen = head
            while word not in seen and (chunk := fh.read(1 << 20)):
                seen = seen[-len(word):] + chunk  # the word may straddle two chunks
            if word not in seen:
                return None
    except OSError:
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, ValueError, RecursionError):
        return None
    value = data.get("family") if isinstance(data, dict) else None
    return None if value is None else str(value)


def family_for_env(path: Path | None) -> Family:
    """The family an environment file belongs to (None: the bundled demo of the default family).

    A folder belongs to the one family its episode files declare (``folders.py``).

    Raises:
        DataError: when the file names a family this amemgym does not know, or a folder holds no episode
            file or files of several families.
    """
    if path is None:
        return get_family(DEFAULT_FAMILY)
    if path.is_dir():
        return get_family(folder_family(path, {f: declared_family(f) or DEFAULT_FAMILY for f in episode_files(path)}))
    name = declared_family(path)
    if name is None:
        return get_family(DEFAULT_FAMILY)
    try:
        return get_family(name)
    except ConfigError:
        raise DataError(f"{path}: unknown family {name!r} (known: {', '.join(family_names())})") from None


def family_for_run(run_dir: Path) -> Family:
    """The family a run directory belongs to: the first non-default family that owns it, else the default."""
    for name in family_names():
        if name != DEFAULT_FAMILY and get_family(name).owns_run(run_dir):
            return get_family(name)
    return get_family(DEFAULT_FAMILY)


def group_runs(run_dirs: Sequence[Path]) -> dict[str, list[Path]]:
    """Run directories by family name, families in registry order, runs in the given order."""
    by_name: dict[str, list[Path]] = {}
    for d in run_dirs:
        by_name.setdefault(family_for_run(Path(d)).name, []).append(Path(d))
    return {n: by_name[n] for n in family_names() if n in by_name}


#: Method name -> its parameter names after ``self``, as :class:`Family` declares them.
_METHODS: dict[str, tuple[str, ...]] = {
    name: tuple(p for p in inspect.signature(getattr(Family, name)).parameters if p != "self")
    for name in ("owns_run", "generate", "validate", "run", "report", "leaderboard", "compare")
}


def check_family(family: object) -> list[str]:
    """Why ``family`` does not satisfy :class:`Family` (empty when it does).

    Checks the name (a non-empty lowercase identifier), that every method exists and is callable with the
    protocol's parameter names (the optional training methods of :class:`TrainingFamily` only when present),
    and that ``owns_run`` answers False for a directory that holds nothing.
    """
    problems: list[str] = []
    name = getattr(family, "name", None)
    if not isinstance(name, str) or not name or not name.isidentifier() or name != name.lower():
        problems.append(f"name must be a lowercase identifier, got {name!r}")
    required = [(method, params, True) for method, params in _METHODS.items()]
    optional = [(method, params, False) for method, (params, _) in _OPTIONAL.items()]
    for method, params, needed in required + optional:  # optional ones: when present, callable as declared
        fn = getattr(family, method, None)
        if fn is None and not needed:
            continue
        if not callable(fn):
            problems.append(f"missing method {method}()" if needed else f"{method} is not callable")
            continue
        try:
            have = inspect.signature(fn).parameters
        except (TypeError, ValueError):
            continue
        missing = [p for p in params if p not in have]
        if missing:
            problems.append(f"{method}() lacks parameter(s) {', '.join(missing)}")
    if not problems:
        with tempfile.TemporaryDirectory() as empty:
            try:
                if family.owns_run(Path(empty)):  # type: ignore[attr-defined]
                    problems.append("owns_run() claims an empty directory")
            except Exception as exc:  # a checker reports, it does not crash
                problems.append(f"owns_run() raised {type(exc).__name__} on an empty directory")
    return problems


# ---- training (optional capabilities; docs/design.md §13) ---------------------------------------------------


@dataclass(frozen=True)
class ExportResult:
    """What ``amemgym export`` wrote, as the family describes it.

    Attributes:
        path: the file written.
        lines: lines in it.
        detail: what the lines cover, shown in parentheses after the count.
        notes: lines to print after it (what was left out and why).
    """

    path: Path
    lines: int
    detail: str
    notes: tuple[str, ...] = ()


@runtime_checkable
class TrainingFamily(Family, Protocol):
    """A family that also offers the training surface. These methods are optional: a command that needs one
    refuses, with exit 2, a family that lacks it (:func:`training_method`).
    """

    def make_env(self, env: Path | None, **options: Any) -> Any:
        """A Gymnasium-style environment (``reset``/``step``/``render``/``close``) on the environment file ``env``
        (None: the family's default, shaped by ``options``)."""
        ...

    def export(self, run_dir: Path, out_file: Path, *, fmt: str, unit: str | None,
               with_evaluation: bool) -> ExportResult:
        """Write a finished run of this family as training data (``fmt`` ``openai-chat`` or ``jsonl``)."""
        ...

    def env_ids(self) -> dict[str, dict[str, Any]]:
        """Gymnasium ids this family offers, each with the ``make_env`` options it stands for."""
        ...


#: Optional method name -> (its parameter names after ``self``, what a user would call it in a refusal).
_OPTIONAL: dict[str, tuple[tuple[str, ...], str]] = {
    name: (tuple(p for p in inspect.signature(getattr(TrainingFamily, name)).parameters
                 if p not in ("self", "options")), what)
    for name, what in (("make_env", "the Gym environment"), ("export", "amemgym export"),
                       ("env_ids", "Gymnasium ids"))
}


def training_method(family: Family, method: str) -> Callable[..., Any]:
    """``family``'s optional training method ``method`` (``make_env``, ``export``, ``env_ids``).

    Raises:
        ConfigError: when the family does not provide it.
    """
    fn = getattr(family, method, None)
    if not callable(fn):
        raise ConfigError(f"{_OPTIONAL[method][1]} is not supported for family {family.name!r}")
    return fn  # type: ignore[no-any-return]


def make_env(env: Path | str | None = None, *, family: str | None = None, **options: Any) -> Any:
    """A Gym environment of the family of the environment file ``env`` (or of ``family`` when named).

    Raises:
        ConfigError: when the family offers no environment.
        DataError: when the file names an unknown family.
    """
    path = None if env is None else Path(env)
    fam = get_family(family) if family is not None else family_for_env(path)
    return training_method(fam, "make_env")(path, **options)


__all__ = ["BUILTIN", "DEFAULT_FAMILY", "Board", "ExportResult", "Family", "GenerateRequest", "NoOptions",
           "OptionValue", "RunRequest", "TrainingFamily", "ValidateRequest", "check_family", "declared_family",
           "family_for_env", "family_for_run", "family_names", "family_options", "get_family", "group_runs",
           "make_env", "register_family", "training_method", "unregister_family"]
