"""The report in headless Chromium: every section renders, no script errors, the trace browser switches."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from test_report_runs import build_two_runs

from amemgym.report.build import build_report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (apt-get install -y chromium)")


def chromium(url: str, profile: Path, *args: str) -> str:
    """Run headless Chromium on ``url`` and return its stdout."""
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
           "--virtual-time-budget=3000", *args]
    done = subprocess.run([*cmd, url], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def dom(report: Path, profile: Path, fragment: str) -> str:
    return chromium(f"{report.as_uri()}#{fragment}", profile, "--dump-dom")


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("browser")
    _, run_a, run_b = build_two_runs(tmp)
    path = tmp / "report.html"
    path.write_text(build_report([run_a, run_b]).html, encoding="utf-8")
    return path


def selected(page: str) -> str:
    match = re.search(r'id="browser" data-selected="([^"]*)"', page)
    assert match, "trace browser panel missing"
    return match.group(1)


def test_sections_render_and_browser_switches(report: Path, tmp_path: Path) -> None:
    first = dom(report, tmp_path / "p1", "run=0&user=u-0002&period=2")
    second = dom(report, tmp_path / "p2", "run=1&user=u-0001&period=0")
    for page in (first, second):
        assert 'data-ready="1"' in page
        assert re.search(r'<pre id="console-errors" hidden="">\s*</pre>', page), "script errors were recorded"
        for section in ("sec-summary", "sec-curves", "sec-diagnosis", "sec-heatmaps", "sec-browser"):
            assert f'id="{section}"' in page
        assert 'data-charts="1"' in page and "<img" not in page  # no injected image
        assert page.count("<svg") == 6  # curves, diagnosis, and two heat maps per run, drawn from inline data
    assert selected(first) == "run_a/u-0002/2"
    assert selected(second) == "run_b/u-0001/0"
    assert "Session 0 · 2021-03-28 19:20" in first and "Session 0 · 2020-09-28 19:30" in second
    shot = tmp_path / "report.png"
    chromium(report.as_uri(), tmp_path / "p3", f"--screenshot={shot}", "--window-size=1280,2000")
    assert shot.stat().st_size > 10_000


def test_hostile_text_shows_as_text(report: Path, tmp_path: Path) -> None:
    page = dom(report, tmp_path / "p", "run=0&user=u-0001&period=0")
    assert "PWNED</title>" not in page and "data-pwned" not in page.split("<body", 1)[1].split(">", 1)[0]
    assert "<b>bold</b>" not in page
    # The reply, the memory and the evaluation reply all appear, escaped, as text.
    assert page.count("&lt;/script&gt;&lt;script&gt;document.title='PWNED'&lt;/script&gt;") >= 3
    assert re.search(r'<pre id="console-errors" hidden="">\s*</pre>', page)
