"""Domain templates: one data file per domain says what entities look like; validated at load.

A template lists name parts, categories, typed attributes (with plausible ranges and display formats)
and relation types. Text attributes draw from shared pools (``_pools.yaml``). A typo in a file fails at
load with the file and the key named, never later inside generation.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ...errors import DataError

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


def _read_yaml(name: str) -> object:
    root = resources.files(__package__).joinpath("domains")
    try:
        return yaml.safe_load(root.joinpath(name).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(f"no domain file {name}") from None
    except yaml.YAMLError as exc:
        raise DataError(f"domains/{name}: not valid YAML ({exc})") from None


def parse_domain(raw: object, source: str, pools: dict[str, tuple[str, ...]]) -> DomainTemplate:
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


@cache
def pools() -> dict[str, tuple[str, ...]]:
    """The shared text pools."""
    raw = _read_yaml("_pools.yaml")
    if not isinstance(raw, dict) or not all(isinstance(v, list) and len(v) >= 10 for v in raw.values()):
        raise DataError("domains/_pools.yaml: every pool must be a list of at least 10 values")
    return {str(k): tuple(str(x) for x in v) for k, v in raw.items()}


@cache
def domain_names() -> tuple[str, ...]:
    """Every bundled domain, sorted."""
    root = resources.files(__package__).joinpath("domains")
    names = [e.name[:-5] for e in root.iterdir() if e.name.endswith(".yaml") and not e.name.startswith("_")]
    return tuple(sorted(names))


@cache
def load_domain(name: str) -> DomainTemplate:
    """The bundled domain ``name``.

    Raises:
        DataError: when it does not exist or does not validate.
    """
    if name not in domain_names():
        raise DataError(f"unknown domain {name!r} (known: {', '.join(domain_names())})")
    domain = parse_domain(_read_yaml(f"{name}.yaml"), f"domains/{name}.yaml", pools())
    if domain.name != name:
        raise DataError(f"domains/{name}.yaml: name: {domain.name!r} differs from the file name")
    return domain
