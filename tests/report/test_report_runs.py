"""End-to-end: two scripted runs -> report, leaderboard and compare through the CLI."""

from __future__ import annotations

import asyncio
import csv
import io
import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from amemgym.agents import resolve_agent
from amemgym.commands.report import register
from amemgym.config import load_config
from amemgym.families.statetrack.data import load_environment, save_environment
from amemgym.families.statetrack.runner import Runner
from amemgym.llm.types import ChatRequest
from amemgym.testing.run_script import RunScript
from amemgym.testing.scripted_model import scripted_client

FIXTURE = Path(__file__).parents[1] / "fixtures" / "original_shape.json"
# Hostile markup whose effects, were it ever parsed, would be visible in the DOM.
EVIL = ("</script><script>document.title='PWNED'</script>"
        "<img src=x onerror=\"document.body.setAttribute('data-pwned','1')\"><b>bold</b>")
# Run A misses a few questions; run B answers everything (the default script is perfect).
PICKS_A = {
    (0, 1): ["rotating_nights", "full_home_kitchen"],
    (1, 0): ["fixed_daytime", "casual_5k"],
    (2, 0): ["fixed_daytime", "casual_5k"],
}


def two_user_env(path: Path) -> Path:
    """The fixture with its user duplicated under a second id, so heat maps have two rows."""
    env = load_environment(FIXTURE)
    second = env.users[0].model_copy(deep=True)
    second.id = "u-0002"
    env.users.append(second)
    save_environment(env, path)
    return path


class EvilScript(RunScript):
    """A scripted agent whose chat replies carry markup and a script-closing tag."""

    def __call__(self, req: ChatRequest) -> str:
        reply = super().__call__(req)
        if req.role == "agent" and req.tag not in ("agent.answer", "eval.upper_bound"):
            return "Try this: " + EVIL
        return reply


def make_run(env_path: Path, out: Path, script: RunScript, work: Path) -> dict:
    """Run the native agent with a scripted fake into ``out``; returns the metrics."""
    llm = scripted_client(script, cache=work / f"{out.name}.sqlite", embedder=False)
    env = load_environment(env_path)
    runner = Runner(env, resolve_agent("native"), out, load_config("tiny"), llm, env_path=env_path)
    return asyncio.run(runner.run()).metrics


def poison_memory(run: Path) -> None:
    """Put markup into a stored memory view and an evaluation reply (as a hostile agent could)."""
    for path in (run / "users").glob("*/eval/period_00.json"):
        rec = json.loads(path.read_text())
        rec["memory"] = "user likes <script>document.title='PWNED'</script> and " + EVIL
        rec["questions"][0]["reply"] = '{"answer": 1} ' + EVIL
        path.write_text(json.dumps(rec))


def build_two_runs(tmp: Path) -> tuple[Path, Path, Path]:
    """Environment file, run A (imperfect, with hostile text) and run B (perfect)."""
    env_path = two_user_env(tmp / "env.json")
    user = load_environment(env_path).users[0]
    run_a, run_b = tmp / "run_a", tmp / "run_b"
    make_run(env_path, run_a, EvilScript(user, PICKS_A), tmp)
    make_run(env_path, run_b, RunScript(user), tmp)
    poison_memory(run_a)
    return env_path, run_a, run_b


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    return build_two_runs(tmp_path_factory.mktemp("report_runs"))


def flat(text: str) -> str:
    """Output with rich's line wrapping undone."""
    return " ".join(text.split())


def cli() -> typer.Typer:
    app = typer.Typer()
    register(app)
    return app


def test_report_writes_self_contained_html_and_figures(runs, tmp_path: Path) -> None:
    _, run_a, run_b = runs
    res = CliRunner().invoke(cli(), ["report", str(run_a), str(run_b), "--out", str(tmp_path / "r.html"),
                                     "--figures", str(tmp_path / "figs")])
    assert res.exit_code == 0, res.output
    html = (tmp_path / "r.html").read_text()
    for section in ("sec-summary", "sec-curves", "sec-diagnosis", "sec-heatmaps", "sec-browser"):
        assert f'id="{section}"' in html
    # The SVG namespace name is an identifier the charts script needs, not an address the page fetches.
    fetched = html.replace('"http://www.w3.org/2000/svg"', "")
    assert "http://" not in fetched and "https://" not in fetched
    names = {p.name for p in (tmp_path / "figs").iterdir()}
    assert {"curves.svg", "curves.png", "diagnosis.png", "heat_memory_run_a.png", "heat_questions_run_b.svg"} <= names


def test_hostile_text_is_never_markup(runs, tmp_path: Path) -> None:
    _, run_a, _ = runs
    res = CliRunner().invoke(cli(), ["report", str(run_a), "--out", str(tmp_path / "r.html")])
    assert res.exit_code == 0, res.output
    html = (tmp_path / "r.html").read_text()
    # Exactly our two script blocks exist; the hostile tags survive only in escaped form.
    assert html.count("<script") == 2 and html.count("</script>") == 2
    assert "PWNED" in html and "<img src=x" not in html and "<b>bold" not in html
    assert "\\u003c/script\\u003e" in html


def test_report_without_environment_file_still_renders(runs, tmp_path: Path) -> None:
    env_path, run_a, _ = runs
    moved = tmp_path / "run_copy"
    import shutil

    shutil.copytree(run_a, moved)
    manifest = json.loads((moved / "manifest.json").read_text())
    manifest["environment_file"] = str(tmp_path / "gone.json")
    (moved / "manifest.json").write_text(json.dumps(manifest))
    res = CliRunner().invoke(cli(), ["report", str(moved), "--out", str(tmp_path / "r.html")])
    assert res.exit_code == 0, res.output
    assert "true states not shown" in (tmp_path / "r.html").read_text()


def test_report_on_missing_dir_is_one_line_error(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli(), ["report", str(tmp_path / "nope"), "--out", str(tmp_path / "r.html")])
    assert res.exit_code == 2 and "no such run directory" in flat(res.output)


def test_leaderboard_ranks_and_writes_files(runs, tmp_path: Path) -> None:
    _, run_a, run_b = runs
    res = CliRunner().invoke(cli(), ["leaderboard", str(run_a), str(run_b), "--out-md", str(tmp_path / "b.md"),
                                     "--out-csv", str(tmp_path / "b.csv")])
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader(io.StringIO((tmp_path / "b.csv").read_text())))
    assert [(r["run"], r["rank"]) for r in rows] == [("run_b", "1"), ("run_a", "2")]
    assert "| 1 | 1 | run_b |" in (tmp_path / "b.md").read_text()


def test_compare_finds_the_gain(runs) -> None:
    _, run_a, run_b = runs
    res = CliRunner().invoke(cli(), ["compare", str(run_a), str(run_b), "--bootstrap", "2000"])
    assert res.exit_code == 0, res.output
    assert "mean difference" in res.output and "+0.6667" in res.output


def test_compare_refuses_different_environments(runs, tmp_path: Path) -> None:
    _, run_a, run_b = runs
    import shutil

    other = tmp_path / "other"
    shutil.copytree(run_b, other)
    manifest = json.loads((other / "manifest.json").read_text())
    manifest["protocol"]["environment_sha256"] = "0" * 64
    (other / "manifest.json").write_text(json.dumps(manifest))
    res = CliRunner().invoke(cli(), ["compare", str(run_a), str(other)])
    assert res.exit_code == 2 and "different environments" in flat(res.output)
