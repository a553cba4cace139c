"""Statetrack content packs: the statetrack schema of the one pack loader (:mod:`amemgym.packs.loader`).

A statetrack pack is a folder of ``<domain>.yaml`` life domains (order: its ``pack.yaml`` index, else by
name). The built-in pack lives in ``amemgym/packs/statetrack``; other packs come from a path (``amemgym
generate --pack PATH``) or from an installed distribution's ``amemgym.packs`` entry point, which names a
folder. Reading, the index and the one-line errors are the loader's; this module says what a domain file
holds and the rules across a pack (:func:`~.pack.pack_problems`), so a typo is refused at load with one line
naming the file, the domain and the key, never inside the generator.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from .....packs.loader import (
    ENTRY_POINT_GROUP,
    PackError,
    PackSchema,
    builtin_pack,
    combined,
    first_error,
    installed_pack_folders,
)
from .....packs.loader import load_item as _load_item
from .....packs.loader import load_pack as _load_pack
from .pack import Domain, Question, Value, Variable, pack_problems

__all__ = ["ENTRY_POINT_GROUP", "SCHEMA", "PackError", "all_domains", "installed_packs", "load_domain", "load_pack",
           "pack_digests", "pack_stats", "select_domains"]


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


def _domain(path: Path, data: object, raw: bytes, shared: object) -> Domain:
    """One domain file's parsed YAML as a checked :class:`Domain` (the schema's ``item``)."""
    name = data.get("name", "?") if isinstance(data, dict) else "?"
    try:
        spec = _DomainFile.model_validate(data)
    except ValidationError as exc:
        raise PackError(f"{path}: domain {name}: {first_error(exc)}") from None
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


def _check(domains: tuple[Domain, ...], where: str) -> None:
    _raise_problems(where, pack_problems(domains))  # variable and question names must be unique across domains


#: The statetrack schema of the pack loader.
SCHEMA = PackSchema(family="statetrack", item=_domain, name_of=lambda d: d.name, check=_check)


def load_domain(path: Path) -> Domain:
    """Load and check one domain file.

    Raises:
        PackError: if the file is unreadable, not YAML, off the schema, or breaks a pack rule.
    """
    return _load_item(Path(path), "statetrack")  # type: ignore[no-any-return]


def _raise_problems(where: object, problems: list[str]) -> None:
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise PackError(f"{where}: {problems[0]}{more}")


def load_pack(folder: Path) -> tuple[Domain, ...]:
    """Every domain of a pack folder (or a single domain file), in the pack's order.

    Raises:
        PackError: if the folder has no domain files, its index names a missing file, or a file is bad.
    """
    return _load_pack(Path(folder), "statetrack")


def _combined(where: str, domains: Iterable[Domain]) -> tuple[Domain, ...]:
    return combined("statetrack", where, domains)


@cache
def all_domains() -> tuple[Domain, ...]:
    """The built-in pack's domains, in their fixed order."""
    return load_pack(builtin_pack("statetrack"))


def installed_packs() -> tuple[Domain, ...]:
    """Domains from installed distributions' ``amemgym.packs`` entry points (each names a pack folder; those
    whose ``pack.yaml`` names another family are left to it).

    Raises:
        PackError: if an entry point cannot be loaded or names a bad pack.
    """
    return tuple(d for folder in installed_pack_folders("statetrack") for d in load_pack(folder))


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
