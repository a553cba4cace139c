"""Content packs as data files: loading, one-line errors, outside domains, digests in the metadata."""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from amemgym.cli import app
from amemgym.families.statetrack.generate.procedural import PackError, all_domains, load_pack, select_domains

BUILTIN = Path(str(resources.files("amemgym.packs") / "statetrack"))


def _outside_domain(folder: Path, name: str = "kitchen_garden") -> Path:
    """A new domain written outside the package: the cooking file with every name changed."""
    data = yaml.safe_load((BUILTIN / "cooking.yaml").read_text(encoding="utf-8"))
    data["name"] = name
    data["variables"] = {f"garden_{k}": v for k, v in data["variables"].items()}
    for q in data["questions"]:
        q["key"] = f"garden_{q['key']}"
        q["clauses"] = {f"garden_{k}": v for k, v in q["clauses"].items()}
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def test_builtin_pack_loads_every_domain_in_its_declared_order() -> None:
    names = [d.name for d in all_domains()]
    order = yaml.safe_load((BUILTIN / "pack.yaml").read_text(encoding="utf-8"))["domains"]
    assert names == order and len(names) >= 10
    assert all(re.fullmatch(r"[0-9a-f]{64}", d.sha256) for d in all_domains())


def test_a_typo_in_a_value_key_fails_at_load_naming_file_domain_and_key(tmp_path: Path) -> None:
    text = (BUILTIN / "cooking.yaml").read_text(encoding="utf-8")
    # One clause keyed by a misspelt value name.
    broken = text.replace("      barely_cooks: ", "      barely_cook: ", 1)
    assert broken != text
    (tmp_path / "cooking.yaml").write_text(broken, encoding="utf-8")
    with pytest.raises(PackError) as err:
        load_pack(tmp_path)
    msg = str(err.value)
    assert "\n" not in msg
    assert "cooking.yaml" in msg and "domain cooking" in msg and "barely_cook'" in msg


def test_a_misspelt_field_is_refused_with_its_name(tmp_path: Path) -> None:
    text = (BUILTIN / "work.yaml").read_text(encoding="utf-8").replace("event_titles:", "event_title:", 1)
    (tmp_path / "work.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(PackError, match=r"work\.yaml: domain work: event_title"):
        load_pack(tmp_path)


def test_the_cli_reports_a_bad_pack_in_one_line_with_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "pack"
    bad.mkdir()
    (bad / "cooking.yaml").write_text("name: cooking\nlabel: [unclosed\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["generate", "--pack", str(bad), "--out", str(tmp_path / "env")])
    assert result.exit_code == 2
    assert "cooking.yaml" in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_a_domain_from_outside_the_package_generates_and_is_recorded(tmp_path: Path) -> None:
    path = _outside_domain(tmp_path / "mypack")
    out = tmp_path / "env"
    result = CliRunner().invoke(app, [
        "generate", "--pack", str(path.parent), "--domains", "kitchen_garden,fitness,travel",
        "--users", "2", "--out", str(out),
    ])
    assert result.exit_code == 0, result.output
    users = json.loads((out / "data.json").read_text(encoding="utf-8"))
    garden = [u for u in users if "kitchen_garden" in u["_amemgym"]["packs"]]
    assert garden, "no user drew the outside domain"
    import hashlib

    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert all(u["_amemgym"]["packs"]["kitchen_garden"] == digest for u in garden)
    assert any(v.startswith("garden_") for u in garden for v in u["state_schema"])
    report = json.loads((out / "generation_report.json").read_text(encoding="utf-8"))
    assert set(report["packs"]) == {"kitchen_garden", "fitness", "travel"}


def test_unknown_and_duplicate_domains_are_refused(tmp_path: Path) -> None:
    with pytest.raises(PackError, match="unknown domain 'gardening'"):
        select_domains(["gardening"])
    copy = tmp_path / "dup"
    copy.mkdir()
    (copy / "cooking.yaml").write_bytes((BUILTIN / "cooking.yaml").read_bytes())
    with pytest.raises(PackError, match="cooking is defined twice"):
        select_domains(None, [copy])


def test_every_shipped_pack_file_reads_as_the_pure_python_safe_loader_reads_it(tmp_path: Path) -> None:
    from amemgym.packs.loader import read_yaml

    files = sorted(Path(str(resources.files("amemgym.packs"))).rglob("*.yaml"))
    assert len(files) > 10
    for path in files:
        assert read_yaml(path)[0] == yaml.safe_load(path.read_text(encoding="utf-8-sig")), path
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: 1\nb: [2, 3\nc: 4\n", encoding="utf-8")
    with pytest.raises(PackError, match=r"not valid YAML \(line \d+\)"):
        read_yaml(bad)
    tagged = tmp_path / "tagged.yaml"
    tagged.write_text("a: !!python/object/apply:os.system ['true']\n", encoding="utf-8")
    with pytest.raises(PackError, match="not valid YAML"):
        read_yaml(tagged)
