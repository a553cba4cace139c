"""Content packs as data: one YAML file per life domain, validated when it is loaded.

A pack is a folder of ``<domain>.yaml`` files, optionally with a ``pack.yaml`` whose ``domains`` list
fixes their order (otherwise files are taken in name order). The built-in pack lives in
``amemgym/packs/statetrack``; other packs come from a path (``amemgym generate --pack PATH``) or from
an installed distribution's ``amemgym.packs`` entry point, which names a folder. A file that breaks the
schema or the pack rules (:func:`~.pack.pack_problems`) is refused at load
with one line naming the file, the domain and the key, so a typo never reaches the generator.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from functools import cache
from importlib import metadata, resources
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from .....errors import DataError
from .pack import Domain, Question, Value, Variable, pack_problems

ENTRY_POINT_GROUP = "amemgym.packs"
_INDEX = "pack.yaml"


class PackError(DataError):
    """A pack file is malformed or breaks a pack rule; the message names the file, domain and key."""


class _QuestionFile(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    key: str
    query: str
    clauses: dict[str, dict[str, str]]


class _DomainFile(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    name: str
    label: str
    needs_job: bool = False
    variables: dict[str, dict[str, list[str]]]
    questions: list[_QuestionFile]
    requests: list[str]
    event_titles: list[str]


class _IndexFile(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    domains: list[str]


def _read_yaml(path: Path) -> tuple[object, bytes]:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise PackError(f"{path}: cannot read ({exc.strerror or exc})") from None
    try:
        return yaml.safe_load(raw.decode("utf-8-sig")), raw
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" (line {where.line + 1})" if where is not None else ""
        raise PackError(f"{path}: not valid YAML{line}") from None


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"]) or "(top level)"
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{loc}: {err['msg']}{more}"


def load_domain(path: Path) -> Domain:
    """Load and check one domain file.

    Raises:
        PackError: if the file is unreadable, not YAML, off the schema, or breaks a pack rule.
    """
    data, raw = _read_yaml(path)
    name = data.get("name", "?") if isinstance(data, dict) else "?"
    try:
        spec = _DomainFile.model_validate(data)
    except ValidationError as exc:
        raise PackError(f"{path}: domain {name}: {_first_error(exc)}") from None
    domain = Domain(
        name=spec.name,
        label=spec.label,
        variables=tuple(
            Variable(var, tuple(Value(val, tuple(texts)) for val, texts in values.items()))
            for var, values in spec.variables.items()
        ),
        questions=tuple(Question(q.key, q.query, tuple(q.clauses), q.clauses) for q in spec.questions),
        requests=tuple(spec.requests),
        event_titles=tuple(spec.event_titles),
        needs_job=spec.needs_job,
        sha256=hashlib.sha256(raw).hexdigest(),
    )
    _raise_problems(path, pack_problems((domain,)))
    if path.stem != domain.name:
        raise PackError(f"{path}: domain {domain.name}: name: must match the file name ({path.stem!r})")
    return domain


def _raise_problems(where: object, problems: list[str]) -> None:
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise PackError(f"{where}: {problems[0]}{more}")


def load_pack(folder: Path) -> tuple[Domain, ...]:
    """Every domain of a pack folder (or a single domain file), in the pack's order.

    Raises:
        PackError: if the folder has no domain files, its index names a missing file, or a file is bad.
    """
    folder = Path(folder)
    if folder.is_file():
        return (load_domain(folder),)
    if not folder.is_dir():
        raise PackError(f"{folder}: no such pack folder or domain file")
    files = {p.stem: p for p in folder.glob("*.yaml") if p.name != _INDEX}
    order = sorted(files)
    if (folder / _INDEX).exists():
        data, _ = _read_yaml(folder / _INDEX)
        try:
            order = _IndexFile.model_validate(data).domains
        except ValidationError as exc:
            raise PackError(f"{folder / _INDEX}: {_first_error(exc)}") from None
        missing = [n for n in order if n not in files]
        if missing:
            raise PackError(f"{folder / _INDEX}: lists {missing[0]!r} but {missing[0]}.yaml is not in the folder")
    if not order:
        raise PackError(f"{folder}: no domain files (*.yaml)")
    return _combined(str(folder), (load_domain(files[n]) for n in order))


def _combined(where: str, domains: Iterable[Domain]) -> tuple[Domain, ...]:
    doms = tuple(domains)
    names = [d.name for d in doms]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise PackError(f"{where}: domain {dup} is defined twice")
    _raise_problems(where, pack_problems(doms))  # variable and question names must be unique across domains
    return doms


@cache
def all_domains() -> tuple[Domain, ...]:
    """The built-in pack's domains, in their fixed order."""
    with resources.as_file(resources.files("amemgym.packs") / "statetrack") as folder:
        return load_pack(folder)


def installed_packs() -> tuple[Domain, ...]:
    """Domains from installed distributions' ``amemgym.packs`` entry points (each names a pack folder).

    Raises:
        PackError: if an entry point cannot be loaded or names a bad pack.
    """
    found: list[Domain] = []
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            target = ep.load()
            folder = Path(str(target() if callable(target) else target))
        except Exception as exc:  # a third party's import error must become one line, not a traceback
            raise PackError(f"entry point {ep.name} ({ep.value}): cannot load: {exc}") from None
        found.extend(load_pack(folder))
    return tuple(found)


def select_domains(names: Sequence[str] | None = None, packs: Sequence[Path] = ()) -> tuple[Domain, ...]:
    """The domains a generation uses.

    With neither argument, the built-in pack (so a default run is the same on every machine). ``packs``
    adds the domains of each folder or file; ``names`` keeps only those domains, in the order given,
    looked up among the built-in, the added and the installed (entry-point) domains.

    Raises:
        PackError: if a name is unknown or two packs define the same domain.
    """
    added = tuple(d for p in packs for d in load_pack(Path(p)))
    chosen = _combined("selected packs", all_domains() + added)
    if not names:
        return chosen
    available = {d.name: d for d in chosen}
    if any(n not in available for n in names):
        available.update({d.name: d for d in installed_packs() if d.name not in available})
    unknown = [n for n in names if n not in available]
    if unknown:
        raise PackError(f"unknown domain {unknown[0]!r}; available: {', '.join(sorted(available))}")
    return _combined("selected packs", (available[n] for n in dict.fromkeys(names)))


def pack_digests(domains: Iterable[Domain]) -> dict[str, str]:
    """``{domain: sha256 of its file}``, for the environment's metadata."""
    return {d.name: d.sha256 for d in domains}


def pack_stats(domains: tuple[Domain, ...] | None = None) -> dict[str, int]:
    """Sizes of a pack: domains, variables, values, phrasings, questions and answer clauses."""
    doms = all_domains() if domains is None else domains
    variables = [v for d in doms for v in d.variables]
    questions = [q for d in doms for q in d.questions]
    return {
        "domains": len(doms),
        "variables": len(variables),
        "values": sum(len(v.values) for v in variables),
        "phrasings": sum(len(x.phrasings) for v in variables for x in v.values),
        "questions": len(questions),
        "clauses": sum(len(c) for q in questions for c in q.clauses.values()),
    }
