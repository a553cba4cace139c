"""Budget domains are a pack read by the one pack loader, and the official lite set is byte-for-byte unchanged."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from amemgym.errors import DataError
from amemgym.families.budget.domain import MIN_NAMES, domain_names, load_domain
from amemgym.families.budget.generate import build_episode, episode_bytes
from amemgym.families.budget.tiers import OFFICIAL_SEEDS
from amemgym.packs.loader import PackError, builtin_pack, load_pack

#: sha256 over the bytes of each domain's official lite episodes (seeds 0-9 in order), taken before the
#: domains moved into the pack loader.
LITE_DIGESTS = {
    "agent_teams": "adda33ea12cb46e94285b3c784e81f99659841cbfa72ac323e08cccb8bf943a8",
    "cities": "3178813289e50504161136d977ab7fbaca2fa3cc7542023a431f018a586b2988",
    "code_modules": "ab19930e302ddc804d84d67befe05766034d7bf2c5f6022eeb2e6fccbb8e9b51",
    "companies": "8c66c4eee92c9bb58eb157cee1d86430c3ed023d286faf4ada730c43aaee14b8",
    "films": "5fdd901e7b87186b199c43e6ccb6cb2f6936ee451d28518d8553e36a568eeee6",
    "hospitals": "9785f7aa6702f252aa07f3beeea927468d888b156265dbbe8fa36f353f948ba7",
    "research_labs": "fcf3c1b805171ecc479f5fe77ff5f979e9b0839b82137c55c9c3df22ad05775f",
    "software_projects": "e32173f37d4dbed0191f4a29481d36fd4bdd1cb6813b5cef42b955171847ffaf",
    "sports_teams": "4874c54d37e4ef43de7fff5f9c9fc41aecfbb681860b8fbe19c7a463eba960af",
    "universities": "b3ef481df51b29dca4933ddd4ec5efa6b5185d48e0f8167261c2f443a5392f7e",
}


def test_the_official_lite_set_is_byte_identical() -> None:
    assert domain_names() == tuple(sorted(LITE_DIGESTS))
    for name, digest in LITE_DIGESTS.items():
        h = hashlib.sha256()
        for seed in OFFICIAL_SEEDS:
            h.update(episode_bytes(build_episode("lite", name, seed)))
        assert h.hexdigest() == digest, name


def test_budget_domains_come_from_the_shared_loader() -> None:
    folder = builtin_pack("budget")
    assert folder.name == "budget" and (folder / "films.yaml").is_file()
    pack = load_pack(folder, "budget")
    assert tuple(d.name for d in pack) == domain_names()
    assert all(d == load_domain(d.name) for d in pack)
    for d in pack:  # the name pools keep their size
        assert len(set(d.name_parts.first)) * len(set(d.name_parts.second)) >= MIN_NAMES


def _copy_pack(tmp_path: Path) -> Path:
    folder = tmp_path / "pack"
    folder.mkdir()
    for p in builtin_pack("budget").glob("*.yaml"):
        (folder / p.name).write_bytes(p.read_bytes())
    return folder


def test_a_bad_budget_domain_is_one_line_naming_file_and_key(tmp_path: Path) -> None:
    folder = _copy_pack(tmp_path)
    films = folder / "films.yaml"
    films.write_text(films.read_text().replace("noun:", "nuon:", 1))
    with pytest.raises(PackError) as info:
        load_pack(folder, "budget")
    msg = str(info.value)
    assert "\n" not in msg and str(films) in msg and "noun: Field required" in msg
    assert isinstance(info.value, DataError)


def test_an_unknown_text_pool_and_a_short_name_pool_are_refused(tmp_path: Path) -> None:
    import yaml

    folder = _copy_pack(tmp_path)
    films = folder / "films.yaml"
    data = yaml.safe_load(films.read_text())
    text = next(a for a in data["attributes"] if a["type"] == "text")
    text["pool"] = "nosuch"
    films.write_text(yaml.safe_dump(data))
    with pytest.raises(PackError, match=rf"films.yaml: attributes.{text['key']}.pool: unknown pool 'nosuch'"):
        load_pack(folder, "budget")
    data = yaml.safe_load((builtin_pack("budget") / "films.yaml").read_text())
    data["name_parts"]["first"] = data["name_parts"]["first"][:8]
    films.write_text(yaml.safe_dump(data))
    with pytest.raises(PackError, match=rf"fewer than {MIN_NAMES} names"):
        load_pack(folder, "budget")


def test_the_statetrack_pack_goes_through_the_same_loader() -> None:
    from amemgym.families.statetrack.generate.procedural.packs import all_domains

    pack = load_pack(builtin_pack("statetrack"), "statetrack")
    assert tuple(d.name for d in pack) == tuple(d.name for d in all_domains())


def test_an_unknown_family_schema_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(PackError, match="no pack schema for family 'nosuch'"):
        load_pack(tmp_path, "nosuch")
