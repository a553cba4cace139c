"""The one pack loader: folders of YAML content files, each family with its own schema, checked at load.

A pack is a folder of ``<name>.yaml`` content files (a statetrack life domain, a budget entity domain). A
``pack.yaml`` index, when present, lists the files' order (otherwise name order) and may name the pack's
family (``family: budget``; a pack without one is a statetrack pack); files whose name starts with ``_``
are shared data of the pack (the budget's text pools), read by the family's schema, never content files.
The built-in packs live in ``amemgym/packs/<family>``; other packs come from a path or from an installed
distribution's ``amemgym.packs`` entry point, which names a folder (each family reads only the installed
folders of its own family).

What is the same for every family lives here: reading YAML with one-line errors, the index, the order,
duplicate names, the first schema error as ``key: message``. What differs is a :class:`PackSchema` the
family registers (:data:`SCHEMAS` names where each lives, imported only when that family's pack is read):
how one file becomes one item, the pack's shared files, and rules across the items. Every refusal is a
:class:`PackError`, one line naming the file and the key.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from importlib import metadata, resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from ..errors import DataError

__all__ = ["DEFAULT_FAMILY", "ENTRY_POINT_GROUP", "INDEX", "SCHEMAS", "PackError", "PackSchema", "builtin_pack",
           "first_error", "installed_pack_folders", "load_item", "load_pack", "pack_family", "pack_files",
           "read_yaml", "schema_for"]

ENTRY_POINT_GROUP = "amemgym.packs"
INDEX = "pack.yaml"
#: The family of an installed pack whose index names none (packs written before budget packs existed).
DEFAULT_FAMILY = "statetrack"

#: Where each family's schema is (``module:attribute``); imported on first use so the loader pulls in no family.
SCHEMAS: dict[str, str] = {
    "statetrack": "amemgym.families.statetrack.generate.procedural.packs:SCHEMA",
    "budget": "amemgym.families.budget.domain:SCHEMA",
}


class PackError(DataError):
    """A pack file is malformed or breaks a rule of its family; the message names the file and the key."""


@dataclass(frozen=True)
class PackSchema:
    """What one family's pack files mean.

    Attributes:
        family: the family name (the built-in pack is ``amemgym/packs/<family>``).
        item: turns one file's parsed YAML (and its raw bytes, for a digest) into one item, given the pack's
            shared data; raises PackError naming the path.
        name_of: an item's name (unique in a pack).
        shared: reads the pack folder's shared data (its ``_*.yaml`` files); None when it has none.
        check: rules across a whole pack's items, raising PackError naming ``where``; None when it has none.
    """

    family: str
    item: Callable[[Path, object, bytes, Any], Any]
    name_of: Callable[[Any], str]
    shared: Callable[[Path], Any] | None = None
    check: Callable[[tuple[Any, ...], str], None] | None = None


class _IndexFile(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    domains: list[str]
    family: str | None = None


#: libyaml's safe loader when PyYAML was built with it, else the pure-Python one. Both build only plain data
#: and give the same values and error marks; libyaml reads the built-in packs about ten times faster, which
#: every run pays at its end (the exposure check recognises the pack's variables) and every generate at start.
_SAFE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _safe_parse(text: str) -> object:
    loader = _SAFE_LOADER(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def read_yaml(path: Path) -> tuple[object, bytes]:
    """The parsed YAML of ``path`` and its raw bytes; one-line PackError if unreadable or not YAML."""
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise PackError(f"{path}: cannot read ({exc.strerror or exc})") from None
    try:
        return _safe_parse(raw.decode("utf-8-sig")), raw
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" (line {where.line + 1})" if where is not None else ""
        raise PackError(f"{path}: not valid YAML{line}") from None


def first_error(exc: ValidationError, more: bool = True) -> str:
    """The first schema error as ``dotted.key: message`` (with how many others there are, if ``more``)."""
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"]) or "(top level)"
    rest = f" (and {exc.error_count() - 1} more)" if more and exc.error_count() > 1 else ""
    return f"{loc}: {err['msg']}{rest}"


def schema_for(family: str) -> PackSchema:
    """The registered schema of ``family``."""
    where = SCHEMAS.get(family)
    if where is None:
        raise PackError(f"no pack schema for family {family!r} (known: {', '.join(sorted(SCHEMAS))})")
    module, _, attr = where.partition(":")
    schema = getattr(importlib.import_module(module), attr)
    assert isinstance(schema, PackSchema) and schema.family == family, where
    return schema


def builtin_pack(family: str) -> Path:
    """The folder of ``family``'s built-in pack (shipped inside the installed package)."""
    return Path(str(resources.files("amemgym.packs").joinpath(family)))


def _index(folder: Path) -> _IndexFile | None:
    """The pack folder's ``pack.yaml``, checked; None when it has none."""
    if not (folder / INDEX).exists():
        return None
    data, _ = read_yaml(folder / INDEX)
    try:
        return _IndexFile.model_validate(data)
    except ValidationError as exc:
        raise PackError(f"{folder / INDEX}: {first_error(exc)}") from None


def pack_family(folder: Path) -> str | None:
    """The family a pack folder (or a content file's folder) declares in its index; None when it declares none.

    Raises:
        PackError: if the index is unreadable or off its schema.
    """
    folder = Path(folder)
    index = _index(folder.parent if folder.is_file() else folder)
    return index.family if index is not None else None


def pack_files(folder: Path) -> list[Path]:
    """The content files of a pack folder in the pack's order (its index, else by name).

    Raises:
        PackError: if the folder is missing or has no content files, or its index names a missing file.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise PackError(f"{folder}: no such pack folder or domain file")
    files = {p.stem: p for p in folder.glob("*.yaml") if p.name != INDEX and not p.name.startswith("_")}
    order = sorted(files)
    index = _index(folder)
    if index is not None:
        order = index.domains
        missing = [n for n in order if n not in files]
        if missing:
            raise PackError(f"{folder / INDEX}: lists {missing[0]!r} but {missing[0]}.yaml is not in the folder")
    if not order:
        raise PackError(f"{folder}: no domain files (*.yaml)")
    return [files[n] for n in order]


def load_item(path: Path, family: str, shared: Any = None) -> Any:
    """One content file of ``family``'s pack, checked (``shared``: the pack's shared data, if its schema has any)."""
    schema = schema_for(family)
    if shared is None and schema.shared is not None:
        shared = schema.shared(Path(path).parent)
    data, raw = read_yaml(Path(path))
    return schema.item(Path(path), data, raw, shared)


def combined(family: str, where: str, items: Iterable[Any]) -> tuple[Any, ...]:
    """``items`` as one pack: names unique, and the family's rules across items hold."""
    schema = schema_for(family)
    out = tuple(items)
    names = [schema.name_of(i) for i in out]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise PackError(f"{where}: domain {dup} is defined twice")
    if schema.check is not None:
        schema.check(out, where)
    return out


def load_pack(folder: Path, family: str) -> tuple[Any, ...]:
    """Every item of a pack folder (or a single content file) of ``family``, in the pack's order.

    Raises:
        PackError: if the folder has no content files, its index names a missing file, or a file is bad.
    """
    schema = schema_for(family)
    folder = Path(folder)
    declared = pack_family(folder) if folder.exists() else None
    if declared is not None and declared != family:
        where = folder / INDEX if folder.is_dir() else folder.parent / INDEX
        raise PackError(f"{where}: a pack of the {declared} family, not {family}")
    if folder.is_file():
        return combined(family, str(folder), (load_item(folder, family),))
    files = pack_files(folder)
    shared = schema.shared(folder) if schema.shared is not None else None
    return combined(family, str(folder), (load_item(p, family, shared) for p in files))


def installed_pack_folders(family: str | None = None) -> list[Path]:
    """The folders installed distributions name under the ``amemgym.packs`` entry point (of ``family`` only,
    as its index declares, when given).

    Raises:
        PackError: if an entry point cannot be loaded or names no folder, or a folder's index is bad.
    """
    found: list[Path] = []
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            target = ep.load()
            folder = Path(str(target() if callable(target) else target))
        except Exception as exc:  # a third party's import error must become one line, not a traceback
            raise PackError(f"entry point {ep.name} ({ep.value}): cannot load: {exc}") from None
        if not folder.exists():
            raise PackError(f"entry point {ep.name} ({ep.value}): {folder}: no such pack folder or domain file")
        if family is None or (pack_family(folder) or DEFAULT_FAMILY) == family:
            found.append(folder)
    return found


def shared_yaml(folder: Path, name: str) -> Mapping[str, Any]:
    """A shared ``_name.yaml`` of a pack folder as a mapping (PackError if it is not one)."""
    data, _ = read_yaml(Path(folder) / name)
    if not isinstance(data, dict):
        raise PackError(f"{Path(folder) / name}: must be a mapping")
    return data
