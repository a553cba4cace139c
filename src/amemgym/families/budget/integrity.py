"""Is an episode file the episode its header names? Regenerate and compare.

An episode is fully determined by (tier, domain, seed, salt), so the one check that covers every field's
meaning at once (a gold scaled by 1.5, a negative budget or note cap, a NaN gold, a question of an unknown
kind or pointing at nothing, a reference write count of -3) is to build the episode again and compare. The
comparison is on the parsed content, not the bytes, so a file re-indented by another tool still passes.
`run` refuses a file that differs (exit 2, one line naming the first difference); `validate` reports it as
a failure and skips the strategies, whose scores on such a file would mean nothing.

Regenerating takes 50-200 ms an episode, so a file that passed is remembered: an empty marker named by the
sha256 of its bytes, under ``<cache dir>/budget-verified/<generator digest>/``. The generator digest is the
sha256 of every source file of the budget family, its built-in pack and the seeding module, so any change to
the code that writes or checks an episode starts a fresh set. Only passes are remembered: a file whose bytes
differ in any way (a tampered one) has another sha256 and is regenerated and compared again. The markers are
trusted like the code beside them; remove the folder to check every file again.
"""

from __future__ import annotations

import hashlib
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from ... import seeding
from ...errors import AMemGymError
from ...llm.client import default_cache_dir
from .generate import build_episode
from .model import Episode

#: Longest rendering of a differing value in the message.
SHOWN = 60


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= SHOWN else text[: SHOWN - 3] + "..."


def first_difference(got: Any, want: Any, where: str = "") -> str | None:
    """Where two JSON-like values first differ, as ``path: X in the file, Y when regenerated``; None if equal."""
    if isinstance(got, dict) and isinstance(want, dict):
        for key in list(want) + [k for k in got if k not in want]:
            path = f"{where}.{key}" if where else str(key)
            if key not in got:
                return f"{path}: missing from the file"
            if key not in want:
                return f"{path}: not part of a generated episode"
            found = first_difference(got[key], want[key], path)
            if found:
                return found
        return None
    if isinstance(got, list) and isinstance(want, list):
        for i, (a, b) in enumerate(zip(got, want, strict=False)):
            found = first_difference(a, b, f"{where}.{i}")
            if found:
                return found
        if len(got) != len(want):
            return f"{where}: {len(got)} entries in the file, {len(want)} when regenerated"
        return None
    if type(got) is type(want) and got == want:
        return None
    return f"{where}: {_short(got)} in the file, {_short(want)} when regenerated"


def regenerate_command(episode: Episode) -> str:
    """The command that writes this episode's file afresh (with the pack it needs, for a carried domain)."""
    pack = " --pack PACK" if episode.domain_pack is not None else ""
    return (f"amemgym generate --family budget --tier {episode.tier.name} --domain {episode.domain} "
            f"--seed {episode.seed} --salt {episode.salt}{pack}")


def mismatch(episode: Episode) -> str | None:
    """Why ``episode`` is not the episode generated from its (tier, domain, seed, salt), or None when it is."""
    header = (f"tier {episode.tier.name}, domain {episode.domain}, seed {episode.seed}, salt {episode.salt}")
    try:
        fresh = build_episode(episode.tier.name, episode.domain, episode.seed, episode.salt, episode.domain_pack)
    except (AMemGymError, ValueError, OverflowError) as exc:
        return f"cannot be regenerated from its ({header}): {exc}"
    diff = first_difference(episode.model_dump(mode="json"), fresh.model_dump(mode="json"))
    if diff is None:
        return None
    return (f"is not the episode generated from its ({header}): {diff}; edited, or written by another "
            f"version of the generator (write it again with `{regenerate_command(episode)}`)")


@cache
def generator_digest() -> str:
    """The sha256 over every file that decides what an episode is (the budget family's source, its built-in
    pack, the seeding helpers), in a fixed order: verified files are remembered per digest."""
    package = Path(__file__).parent
    files = sorted(package.rglob("*.py")) + sorted(Path(str(resources.files("amemgym.packs"))).joinpath(
        "budget").glob("*.yaml")) + [Path(seeding.__file__)]
    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def _marker(raw: bytes) -> Path:
    return default_cache_dir() / "budget-verified" / generator_digest() / hashlib.sha256(raw).hexdigest()


def known_good(raw: bytes) -> bool:
    """Whether these exact bytes passed the check before, under the same generator."""
    try:
        return _marker(raw).is_file()
    except OSError:
        return False


def remember_good(raw: bytes) -> None:
    """Remember that these bytes passed (a cache that cannot be written only costs a regeneration later)."""
    try:
        marker = _marker(raw)
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()
    except OSError:
        pass
