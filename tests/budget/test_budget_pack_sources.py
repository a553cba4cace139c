"""Budget domains from outside the built-in pack: a ``--pack`` file or folder, or an installed distribution's
``amemgym.packs`` entry point. The domain travels inside its episodes, so run and validate need no pack; a
malformed pack, or a file that redefines a built-in domain, is one line and exit 2."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from amemgym.cli import app
from amemgym.families.budget.domain import episode_domain, load_domain
from amemgym.families.budget.generate import build_episode, episode_bytes
from amemgym.families.budget.io import load_episode
from amemgym.packs.loader import builtin_pack
from amemgym.testing.budget import BudgetScript
from amemgym.testing.fake_endpoint import FakeEndpoint


def _movies(folder: Path, name: str = "movies") -> Path:
    """A budget domain file ``name`` made from the built-in films domain (the same attributes, another name)."""
    data = yaml.safe_load((builtin_pack("budget") / "films.yaml").read_text())
    data["name"] = name
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _cli(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(app, list(args))
    return res.exit_code, " ".join(res.output.split())


def _generate(out: Path, *extra: str, domain: str = "movies") -> tuple[int, str]:
    return _cli("generate", "--family", "budget", "--tier", "lite", "--domain", domain, "--seed", "3",
                "--out", str(out), *extra)


def _run(env: Path, out: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, dict]:
    episode, _ = load_episode(env)
    with FakeEndpoint(responder=BudgetScript([episode]).body_reply) as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        code, text = _cli("run", "--env", str(env), "--out", str(out), "--set", "llm.cache=false")
    results = json.loads((out / "results.json").read_text()) if (out / "results.json").exists() else {}
    return code, text, results


def test_a_pack_file_generates_validates_and_runs_with_nothing_else(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    pack = _movies(tmp_path / "mypack")
    code, text = _generate(tmp_path / "env", "--pack", str(pack))
    assert code == 0, text
    env = tmp_path / "env" / "data.json"
    episode, raw = load_episode(env)
    assert episode.domain == "movies" and episode.domain_pack is not None
    assert episode_domain(episode).name == "movies"
    # Drawn from the pack's template (the films attributes), under its own name's seeds.
    assert {k for e in episode.entities for k in e.attrs} <= {a.key for a in load_domain("films").attributes}
    assert episode.entities != build_episode("lite", "films", 3).entities
    assert episode_bytes(episode) == raw
    pack.unlink()  # the file carries its domain: validate and run need the pack no more
    code, text = _cli("validate", "--env", str(env), "--seeds", "1")
    assert code == 0 and "PASS" in text, text
    code, text, results = _run(env, tmp_path / "run", monkeypatch)
    assert code == 0, text
    assert results["score"]["composite"] is not None and results["score"]["composite"] > 0.5


def test_a_pack_folder_with_its_own_pools_and_index(tmp_path: Path) -> None:
    folder = tmp_path / "pack"
    path = _movies(folder)
    data = yaml.safe_load(path.read_text())
    text_attr = next(a for a in data["attributes"] if a["type"] == "text")
    text_attr["pool"] = "studios"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    studios = [f"Studio {c}" for c in "ABCDEFGHIJKL"]
    (folder / "_pools.yaml").write_text(yaml.safe_dump({"studios": studios}))
    (folder / "pack.yaml").write_text("family: budget\ndomains: [movies]\n")
    code, text = _generate(tmp_path / "env", "--pack", str(folder))
    assert code == 0, text
    episode, _ = load_episode(tmp_path / "env" / "data.json")
    assert episode.domain_pack is not None and episode.domain_pack.pools["studios"] == studios
    values = {e.attrs.get(text_attr["key"]) for e in episode.entities} - {None}
    assert values and values <= set(studios)


def _install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str, module: str = "") -> None:
    """A distribution offering ``target`` under the ``amemgym.packs`` entry point, as pip would install it."""
    site = tmp_path / "site"
    dist = site / "mypacks-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: mypacks\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[amemgym.packs]\nmovies = {target}\n")
    if module:
        (site / "mypacks_data.py").write_text(module)
    monkeypatch.syspath_prepend(str(site))
    sys.modules.pop("mypacks_data", None)


def test_an_installed_budget_pack_is_found_by_name_and_left_alone_by_statetrack(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "installed"
    _movies(folder)
    (folder / "pack.yaml").write_text("family: budget\ndomains: [movies]\n")
    _install(tmp_path, monkeypatch, "mypacks_data:FOLDER", f"FOLDER = {str(folder)!r}\n")
    code, text = _generate(tmp_path / "env")
    assert code == 0, text
    episode, _ = load_episode(tmp_path / "env" / "data.json")
    assert episode.domain_pack is not None and episode.domain == "movies"
    # Generation by name (the Gym env's reset) finds it too, and gives the same episode.
    assert build_episode("lite", "movies", 3) == episode
    # The statetrack family reads only its own installed packs: its unknown-domain error lists no budget file.
    from amemgym.families.statetrack.generate.procedural.packs import PackError, select_domains

    with pytest.raises(PackError, match="unknown domain 'movies'"):
        select_domains(["movies"])


def test_an_installed_pack_with_a_built_in_name_never_replaces_the_built_in(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "installed"
    path = _movies(folder, "films")
    data = yaml.safe_load(path.read_text())
    data["noun"] = "picture"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    (folder / "pack.yaml").write_text("family: budget\ndomains: [films]\n")
    _install(tmp_path, monkeypatch, "mypacks_data:FOLDER", f"FOLDER = {str(folder)!r}\n")
    code, text = _generate(tmp_path / "env", domain="films")
    assert code == 0, text
    episode, raw = load_episode(tmp_path / "env" / "data.json")
    assert episode.domain_pack is None and raw == episode_bytes(build_episode("lite", "films", 3))
    assert load_domain("films").noun == "film"


@pytest.mark.parametrize("case", ["bad key", "built-in name", "statetrack index", "no such path", "bad pools"])
def test_a_malformed_pack_is_one_line_and_exit_2(case: str, tmp_path: Path) -> None:
    folder = tmp_path / "pack"
    path = _movies(folder, "films" if case == "built-in name" else "movies")
    if case == "bad key":
        path.write_text(path.read_text().replace("noun:", "nuon:", 1))
    elif case == "statetrack index":
        (folder / "pack.yaml").write_text("family: statetrack\ndomains: [movies]\n")
    elif case == "bad pools":
        (folder / "_pools.yaml").write_text("cities: [only, three, values]\n")
    given = tmp_path / "missing" if case == "no such path" else folder
    code, text = _generate(tmp_path / "env", "--pack", str(given),
                           domain="films" if case == "built-in name" else "movies")
    assert code == 2, text
    assert "Traceback" not in text and not (tmp_path / "env" / "data.json").exists()
    expected = {"bad key": "noun: Field required", "built-in name": "films is a built-in domain",
                "statetrack index": "a pack of the statetrack family, not budget",
                "no such path": "no such pack folder", "bad pools": "at least 10 values"}[case]
    assert expected in text, text


@pytest.mark.parametrize("case", ["import error", "missing folder"])
def test_a_broken_entry_point_is_one_line_and_exit_2(case: str, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    if case == "import error":
        _install(tmp_path, monkeypatch, "mypacks_data:FOLDER", "raise ImportError('no data today')\n")
    else:
        _install(tmp_path, monkeypatch, "mypacks_data:FOLDER", f"FOLDER = {str(tmp_path / 'gone')!r}\n")
    code, text = _generate(tmp_path / "env")
    assert code == 2 and "Traceback" not in text, text
    assert "entry point movies (mypacks_data:FOLDER)" in text
    assert ("no data today" if case == "import error" else "no such pack folder") in text


def test_a_file_cannot_smuggle_a_changed_built_in_domain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Adversarial: a pack domain renamed "films" inside the file, with the episode regenerated from it, would
    # pass the regeneration check and score under the built-in name. It is refused however consistent.
    pack = _movies(tmp_path / "pack")
    assert _generate(tmp_path / "env", "--pack", str(pack))[0] == 0
    env = tmp_path / "env" / "data.json"
    data = json.loads(env.read_text())
    data["domain"] = "films"
    data["domain_pack"]["template"]["name"] = "films"
    env.write_text(json.dumps(data))
    with FakeEndpoint() as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        code, text = _cli("run", "--env", str(env), "--out", str(tmp_path / "run"))
        assert ep.calls == 0
    assert code == 2 and "'films' is a built-in domain" in text, text
    assert "Traceback" not in text and not (tmp_path / "run" / "results.json").exists()
    code, text = _cli("validate", "--env", str(env))
    assert code == 1 and "'films' is a built-in domain" in text, text


def test_an_edited_carried_domain_is_refused(tmp_path: Path) -> None:
    # Widening a range in the carried template without regenerating changes what the file must contain.
    pack = _movies(tmp_path / "pack")
    assert _generate(tmp_path / "env", "--pack", str(pack))[0] == 0
    env = tmp_path / "env" / "data.json"
    data = json.loads(env.read_text())
    attr = next(a for a in data["domain_pack"]["template"]["attributes"] if a["type"] == "int")
    attr["max"] = attr["max"] * 3
    env.write_text(json.dumps(data))
    code, text = _cli("run", "--env", str(env), "--out", str(tmp_path / "run"))
    assert code == 2 and "is not the episode generated from" in text and "Traceback" not in text, text
    code, text = _cli("validate", "--env", str(env))
    assert code == 1 and "is not the episode generated from" in text, text


def test_a_budget_pack_given_to_statetrack_is_one_line(tmp_path: Path) -> None:
    from amemgym.families.statetrack.generate.procedural.packs import PackError, select_domains

    folder = tmp_path / "pack"
    _movies(folder)
    (folder / "pack.yaml").write_text("family: budget\ndomains: [movies]\n")
    with pytest.raises(PackError, match="a pack of the budget family, not statetrack"):
        select_domains(packs=[folder])
    code, text = _cli("generate", "--generator", "procedural", "--users", "1", "--pack", str(folder),
                      "--out", str(tmp_path / "st"))
    assert code == 2 and "not statetrack" in text and "Traceback" not in text, text
