"""Domain templates: the budget schema of the one pack loader (:mod:`amemgym.packs.loader`).

The budget's domains are a pack, ``amemgym/packs/budget``: one file per domain says what its entities look
like (name parts, categories, typed attributes with plausible ranges and display formats, relation types),
and the pack's shared ``_pools.yaml`` holds the text pools attributes draw from. The loader reads the files
and gives one-line errors; this module is the schema. A typo fails at load with the file and the key named,
never later inside generation.

More domains come from a pack outside the built-in one: ``generate --pack PATH`` (a folder of domain files or
one file, with an optional ``_pools.yaml`` of further pools) or an installed distribution's ``amemgym.packs``
entry point naming a folder whose ``pack.yaml`` says ``family: budget``. Such a domain travels inside the
episodes generated from it (:class:`~amemgym.families.budget.model.DomainPack`), so running, validating and
exporting them needs no pack; it may not reuse a built-in domain's name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ...errors import DataError
from ...packs.loader import (
    PackError,
    PackSchema,
    builtin_pack,
    installed_pack_folders,
    load_item,
    load_pack,
    pack_files,
    shared_yaml,
)
from .model import DomainPack, Episode
from .reading import normalise, numbers

AttrType = Literal["int", "float", "text", "enum", "date", "series"]
NUMERIC: tuple[str, ...] = ("int", "float")
MIN_DOMAIN_ATTRIBUTES = 20
#: Distinct entity names a domain must be able to generate, so a name guessed from a public seed rarely
#: meets the same entity again (the original offers about this many).
MIN_NAMES = 600
#: A numeric range spanning more than this many times its (positive) minimum is drawn log-uniformly (world.py);
#: only such attributes are asked for a value, since a guess at the middle of a uniformly drawn range lands
#: within the 2 % tolerance about 2 % of the time.
LOG_SPREAD = 50.0


class Attribute(BaseModel):
    """One typed attribute of a domain's entities."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    label: str
    type: AttrType
    min: float | None = None
    max: float | None = None
    decimals: int = Field(0, ge=0, le=3)
    prefix: str = ""
    suffix: str = ""
    pool: str | None = None
    values: tuple[str, ...] = ()
    min_year: int | None = None
    max_year: int | None = None
    length: int = Field(4, ge=3, le=8)

    @model_validator(mode="after")
    def _fields_fit_type(self) -> Attribute:
        if self.type in ("int", "float", "series"):
            if self.min is None or self.max is None or not self.min < self.max:
                raise ValueError(f"{self.key}: a {self.type} attribute needs min < max")
        if self.type == "text" and not self.pool:
            raise ValueError(f"{self.key}: a text attribute needs a pool")
        if self.type == "enum" and len(self.values) < 3:
            raise ValueError(f"{self.key}: an enum attribute needs at least 3 values")
        if self.type == "date" and (self.min_year is None or self.max_year is None or self.min_year >= self.max_year):
            raise ValueError(f"{self.key}: a date attribute needs min_year < max_year")
        for side, text in (("prefix", self.prefix), ("suffix", self.suffix)):
            if numbers(text):
                # A value is written with it ("3.3 per 1000 people"): a reply that copies it names two numbers.
                raise ValueError(f"{self.key}: its {side} {text!r} holds a number, which the checker would read "
                                 "beside the value")
        return self

    @property
    def numeric(self) -> bool:
        """Whether values are single numbers (int or float)."""
        return self.type in NUMERIC

    @property
    def log_drawn(self) -> bool:
        """Whether values are drawn log-uniformly: a positive range wider than :data:`LOG_SPREAD` times its min."""
        return self.min is not None and self.max is not None and self.min > 0 and self.max > LOG_SPREAD * self.min

    @property
    def wide(self) -> bool:
        """A numeric attribute that may be asked for a value (drawn log-uniformly, see :data:`LOG_SPREAD`)."""
        return self.numeric and self.log_drawn


class Relation(BaseModel):
    """A typed relation between two entities of the same domain."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    phrase: str


class NameParts(BaseModel):
    """Entity names are ``first second``; the cross product holds at least :data:`MIN_NAMES` names."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    first: tuple[str, ...] = Field(min_length=8)
    second: tuple[str, ...] = Field(min_length=8)

    @model_validator(mode="after")
    def _enough_names(self) -> NameParts:
        if len(set(self.first)) * len(set(self.second)) < MIN_NAMES:
            raise ValueError(f"{len(set(self.first))} first x {len(set(self.second))} second parts make fewer than "
                             f"{MIN_NAMES} names")
        return self

    @model_validator(mode="after")
    def _names_read_apart(self) -> NameParts:
        # The checker compares names after normalise(): two names that read the same there ("Iron Brands",
        # "IRON Brands") would credit a reply naming the wrong entity, and a number in a name would be read
        # as the reply's answer.
        for part in (*self.first, *self.second):
            if not normalise(part):
                raise ValueError(f"name part {part!r} has no letter the checker can read")
            if numbers(part):
                raise ValueError(f"name part {part!r} holds a number, which the checker would read as an answer")
        seen: dict[str, str] = {}
        for a in dict.fromkeys(self.first):
            for b in dict.fromkeys(self.second):
                name = f"{a} {b}"
                other = seen.setdefault(normalise(name), name)
                if other != name:
                    raise ValueError(f"names {other!r} and {name!r} read the same to the checker (case, accents "
                                     "and punctuation set aside)")
        return self


class DomainTemplate(BaseModel):
    """One domain: what its entities are called and which attributes and relations they carry."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    noun: str
    plural: str
    name_parts: NameParts
    categories: tuple[str, ...] = Field(min_length=3)
    relations: tuple[Relation, ...] = Field(min_length=1)
    attributes: tuple[Attribute, ...] = Field(min_length=MIN_DOMAIN_ATTRIBUTES)

    @model_validator(mode="after")
    def _unique_keys(self) -> DomainTemplate:
        keys = [a.key for a in self.attributes]
        dupes = sorted({k for k in keys if keys.count(k) > 1})
        if dupes:
            raise ValueError(f"duplicate attribute key(s): {', '.join(dupes)}")
        for kind in ("text", "enum", "date", "series"):
            if not any(a.type == kind for a in self.attributes):
                raise ValueError(f"no attribute of type {kind}")
        if sum(a.numeric for a in self.attributes) < 6:
            raise ValueError("needs at least 6 int/float attributes")
        return self

    def attribute(self, key: str) -> Attribute:
        """The attribute called ``key``."""
        for a in self.attributes:
            if a.key == key:
                return a
        raise KeyError(key)


def _where(loc: tuple[object, ...]) -> str:
    return ".".join(str(p) for p in loc) or "<top level>"


def parse_domain(raw: object, source: str, pools: Mapping[str, tuple[str, ...]]) -> DomainTemplate:
    """Validate one domain's data; errors name ``source`` and the offending key.

    Raises:
        DataError: on any schema problem or an unknown text pool.
    """
    try:
        domain = DomainTemplate.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise DataError(f"{source}: {_where(first['loc'])}: {first['msg']}") from None
    for a in domain.attributes:
        if a.type == "text" and a.pool not in pools:
            raise DataError(f"{source}: attributes.{a.key}.pool: unknown pool {a.pool!r} "
                            f"(known: {', '.join(sorted(pools))})")
    return domain


def _read_pools(folder: Path) -> dict[str, tuple[str, ...]]:
    """The pools of one ``_pools.yaml``, checked."""
    raw = shared_yaml(folder, "_pools.yaml")
    if not all(isinstance(v, list) and len(v) >= 10 for v in raw.values()):
        raise PackError(f"{Path(folder) / '_pools.yaml'}: every pool must be a list of at least 10 values")
    return {str(k): tuple(str(x) for x in v) for k, v in raw.items()}


def _pools_of(folder: Path) -> dict[str, tuple[str, ...]]:
    """The text pools a budget pack folder's domains may draw from: the built-in pack's ``_pools.yaml``; for
    any other folder, the folder's own ``_pools.yaml`` if it has one, and the built-in pools under the names
    it does not define (an episode carries the pools it drew from, so either way it regenerates the same)."""
    if Path(folder).resolve() == builtin_pack("budget").resolve():
        return _read_pools(folder)
    base = pools()
    if not (Path(folder) / "_pools.yaml").is_file():
        return dict(base)
    return {**base, **_read_pools(folder)}


def _domain(path: Path, data: object, raw: bytes, shared: Any) -> DomainTemplate:
    """One domain file as a checked template (the schema's ``item``)."""
    try:
        domain = parse_domain(data, str(path), shared)
    except DataError as exc:
        raise PackError(str(exc)) from None
    if domain.name != path.stem:
        raise PackError(f"{path}: name: {domain.name!r} differs from the file name")
    return domain


#: The budget schema of the pack loader.
SCHEMA = PackSchema(family="budget", item=_domain, name_of=lambda d: d.name, shared=_pools_of)


@cache
def pools() -> dict[str, tuple[str, ...]]:
    """The shared text pools of the built-in pack."""
    return _read_pools(builtin_pack("budget"))


@cache
def domain_names() -> tuple[str, ...]:
    """Every bundled domain, sorted."""
    return tuple(sorted(p.stem for p in pack_files(builtin_pack("budget"))))


@cache
def load_domain(name: str) -> DomainTemplate:
    """The bundled domain ``name``.

    Raises:
        DataError: when it does not exist or does not validate.
    """
    if name not in domain_names():
        raise DataError(f"unknown domain {name!r} (known: {', '.join(domain_names())})")
    return load_item(builtin_pack("budget") / f"{name}.yaml", "budget", pools())  # type: ignore[no-any-return]


def pack_of(domain: DomainTemplate, pools_: Mapping[str, tuple[str, ...]]) -> DomainPack:
    """What an episode file carries of a domain from outside the built-in pack: its template and used pools."""
    used = sorted({a.pool for a in domain.attributes if a.type == "text" and a.pool})
    return DomainPack(template=domain.model_dump(mode="json"), pools={k: list(pools_[k]) for k in used})


def unpack(pack: DomainPack, name: str) -> tuple[DomainTemplate, dict[str, tuple[str, ...]]]:
    """The domain an episode file carries, checked like a pack file, and its pools.

    Raises:
        DataError: if the template is off the schema, names another domain than ``name``, or takes a built-in
            domain's name (a file may not redefine a built-in domain).
    """
    pools_ = {k: tuple(v) for k, v in pack.pools.items()}
    domain = parse_domain(pack.template, "domain_pack.template", pools_)
    if domain.name != name:
        raise DataError(f"domain_pack.template.name: {domain.name!r} differs from the episode's domain {name!r}")
    if name in domain_names():
        raise DataError(f"domain_pack: {name!r} is a built-in domain; a file may not carry its own definition of it")
    return domain, pools_


def episode_domain(episode: Episode) -> DomainTemplate:
    """The domain of ``episode``: the one its file carries, else the built-in one of its name.

    Raises:
        DataError: if neither exists or the carried one is bad (see :func:`unpack`).
    """
    if episode.domain_pack is not None:
        return unpack(episode.domain_pack, episode.domain)[0]
    return load_domain(episode.domain)


def pack_domains(packs: Sequence[Path] = ()) -> dict[str, tuple[DomainTemplate, dict[str, tuple[str, ...]]]]:
    """Every domain outside the built-in pack: those of ``packs`` (folders or files, checked as budget packs),
    then those of installed budget packs; each with the pools it may draw from.

    Raises:
        PackError: if a pack is bad, two of ``packs`` define one name, or one redefines a built-in domain.
    """
    found: dict[str, tuple[DomainTemplate, dict[str, tuple[str, ...]]]] = {}
    for path in packs:
        folder = Path(path) if Path(path).is_dir() else Path(path).parent
        shared = _pools_of(folder) if Path(path).exists() else {}
        for d in load_pack(Path(path), "budget"):
            if d.name in domain_names():
                raise PackError(f"{path}: domain {d.name} is a built-in domain; give yours another name")
            if d.name in found:
                raise PackError(f"{path}: domain {d.name} is defined twice")
            found[d.name] = (d, shared)
    for folder in installed_pack_folders("budget"):
        shared = _pools_of(folder if folder.is_dir() else folder.parent)
        for d in load_pack(folder, "budget"):
            # As for statetrack packs: the built-in and the given packs come first, an installed copy is unused.
            if d.name not in domain_names():
                found.setdefault(d.name, (d, shared))
    return found


def resolve_domain(name: str, packs: Sequence[Path] = ()) -> DomainPack | None:
    """The domain ``name`` for a generation: None for a built-in one, else what the episode will carry.

    Raises:
        DataError: if no built-in, given or installed pack has it (one line listing those known).
    """
    if name in domain_names() and not packs:
        return None
    extra = pack_domains(packs)
    if name in domain_names():
        return None
    if name not in extra:
        raise DataError(f"unknown domain {name!r} (known: {', '.join(sorted([*domain_names(), *extra]))})")
    domain, shared = extra[name]
    return pack_of(domain, shared)
