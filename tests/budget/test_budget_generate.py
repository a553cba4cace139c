"""Generation: determinism, the salt, domain files validated at load, and the CLI around it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from amemgym.cli import app
from amemgym.errors import DataError
from amemgym.families.budget.domain import domain_names, parse_domain, pools
from amemgym.families.budget.generate import build_episode, episode_bytes

runner = CliRunner()


def test_ten_domains_load() -> None:
    assert len(domain_names()) >= 10


def test_every_domain_names_about_six_hundred_entities() -> None:
    # Before: 16 x 12 = 192 names per domain.
    from amemgym.families.budget.domain import MIN_NAMES, load_domain

    for name in domain_names():
        parts = load_domain(name).name_parts
        assert len(set(parts.first)) * len(set(parts.second)) >= MIN_NAMES == 600


def test_a_domain_with_too_few_names_is_refused() -> None:
    from importlib import resources

    import yaml

    raw = yaml.safe_load(resources.files("amemgym.packs").joinpath("budget/films.yaml").read_text())
    raw["name_parts"]["second"] = raw["name_parts"]["second"][:12]
    with pytest.raises(DataError, match=r"name_parts: .*fewer than 600 names"):
        parse_domain(raw, "domains/films.yaml", pools())


def _films() -> dict:
    from importlib import resources

    import yaml

    return yaml.safe_load(resources.files("amemgym.packs").joinpath("budget/films.yaml").read_text())


def test_names_the_checker_cannot_tell_apart_are_refused() -> None:
    """Found by probing: "Iron Brands" and "IRON Brands" in one pack credited a reply naming the wrong entity,
    and a name part or unit holding a number ("Dynamics 7", "per 1000 people") scored faithful replies wrong."""
    raw = _films()
    first = raw["name_parts"]["first"]
    raw["name_parts"]["first"] = [*first, first[0].upper()]
    with pytest.raises(DataError, match=r"read the same to the checker"):
        parse_domain(raw, "domains/films.yaml", pools())
    raw = _films()
    raw["name_parts"]["second"] = [f"{raw['name_parts']['second'][0]} 7", *raw["name_parts"]["second"][1:]]
    with pytest.raises(DataError, match=r"holds a number"):
        parse_domain(raw, "domains/films.yaml", pools())
    raw = _films()
    numeric = next(a for a in raw["attributes"] if a["type"] in ("int", "float"))
    numeric["suffix"] = " per 1000 people"
    with pytest.raises(DataError, match=r"suffix ' per 1000 people' holds a number"):
        parse_domain(raw, "domains/films.yaml", pools())
    numeric["suffix"] = " km2"  # a digit inside a word is not a number
    parse_domain(raw, "domains/films.yaml", pools())


def test_same_seed_gives_identical_bytes() -> None:
    assert episode_bytes(build_episode("hard", "films", 4)) == episode_bytes(build_episode("hard", "films", 4))


def test_seeds_differ() -> None:
    assert episode_bytes(build_episode("lite", "films", 4)) != episode_bytes(build_episode("lite", "films", 5))


def test_salt_changes_values_but_not_names() -> None:
    plain, salted = build_episode("lite", "films", 4), build_episode("lite", "films", 4, salt=7)
    assert plain.entity_names == salted.entity_names
    changed = sum(a.attrs != b.attrs for a, b in zip(plain.entities, salted.entities, strict=True))
    assert changed == len(plain.entities)


def test_a_domain_typo_names_the_file_and_the_key() -> None:
    from importlib import resources

    import yaml

    raw = yaml.safe_load(resources.files("amemgym.packs").joinpath("budget/films.yaml").read_text())
    raw["attributes"][0]["mni"] = raw["attributes"][0].pop("min")
    with pytest.raises(DataError, match=r"domains/films.yaml: attributes\.0"):
        parse_domain(raw, "domains/films.yaml", pools())


def test_every_episode_has_mid_stream_and_final_questions_and_all_axes() -> None:
    ep = build_episode("standard", "hospitals", 2)
    kinds = {q.kind for q in ep.questions}
    assert {"retrieval", "update", "abstention"} <= kinds
    positions = [e.index for e in ep.events if e.kind == "question"]
    assert positions[0] < max(e.index for e in ep.events if e.kind == "documents")
    assert any(e.kind == "correction" for e in ep.events) and any(e.kind == "contradiction" for e in ep.events)


def test_multi_tier_cuts_the_stream_into_sessions() -> None:
    ep = build_episode("multi", "cities", 0)
    assert sorted({e.session for e in ep.events}) == [0, 1, 2]


def test_cli_generate_is_byte_identical_and_validate_passes(tmp_path: Path) -> None:
    args = ["generate", "--family", "budget", "--tier", "lite", "--domain", "films", "--seed", "2"]
    assert runner.invoke(app, [*args, "--out", str(tmp_path / "a")]).exit_code == 0
    assert runner.invoke(app, [*args, "--out", str(tmp_path / "b")]).exit_code == 0
    assert (tmp_path / "a/data.json").read_bytes() == (tmp_path / "b/data.json").read_bytes()
    result = runner.invoke(app, ["validate", "--env", str(tmp_path / "a/data.json")])
    assert result.exit_code == 0, result.output


def test_validate_fails_on_a_tampered_gold(tmp_path: Path) -> None:
    runner.invoke(app, ["generate", "--family", "budget", "--domain", "films", "--out", str(tmp_path)])
    data = json.loads((tmp_path / "data.json").read_text())
    q = next(q for q in data["questions"] if q["answer_type"] == "int")
    q["gold"] += 1
    (tmp_path / "data.json").write_text(json.dumps(data))
    result = runner.invoke(app, ["validate", "--env", str(tmp_path / "data.json")])
    assert result.exit_code == 1
    assert "FAIL" in result.output


def test_bad_inputs_exit_2_with_one_line(tmp_path: Path) -> None:
    result = runner.invoke(app, ["generate", "--family", "budget", "--domain", "nope", "--out", str(tmp_path)])
    assert result.exit_code == 2
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"family": "budget", "format_version": 99}))
    result = runner.invoke(app, ["validate", "--env", str(bad)])
    assert result.exit_code == 2


def test_official_writes_every_domain_at_each_seed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from amemgym.families.budget import commands

    monkeypatch.setattr(commands, "OFFICIAL_SEEDS", (0, 1))
    result = runner.invoke(app, ["generate", "--family", "budget", "--official", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert len(list(tmp_path.glob("*/seed*/data.json"))) == 2 * len(domain_names())
