"""Writing a file onto something that is not a regular file keeps that thing (docs/design.md §11).

Before: every whole-file write renamed a temp file onto its target, so ``--out-csv /dev/stdout`` replaced the
``/dev/stdout`` link with a regular file, and a device node or FIFO given as an output was replaced too (as
root, the system's ``/dev/full``). Now a link is followed, and a device, FIFO or socket is written into.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from amemgym.cli import app
from amemgym.storage import atomic_write_json, write_output_text
from amemgym.testing.fake_endpoint import FakeEndpoint

PLUGIN = """
import json

class A:
    def act(self, messages, *, event):
        return json.dumps({"tool": "write", "args": {"text": "a note"}})

def make(llm, ctx):
    return A()

make.roles = ("agent",)
"""


def _cli(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(app, list(args))
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    return res.exit_code, res.output


def _temps(*folders: Path) -> list[Path]:
    return [p for folder in folders for p in folder.glob(".*.tmp")]


def test_a_regular_file_is_still_replaced_by_rename(tmp_path: Path) -> None:
    path = tmp_path / "run" / "metrics.json"
    atomic_write_json(path, {"v": 1})
    before = path.stat().st_ino
    atomic_write_json(path, {"v": 2})
    # A new inode: the rename happened, so a kill mid-write leaves the old file whole.
    assert path.stat().st_ino != before and '"v": 2' in path.read_text()
    assert not _temps(path.parent)


def test_a_link_planted_in_a_run_directory_is_replaced_not_followed(tmp_path: Path) -> None:
    # A run's own files never follow a link: one planted as metrics.json must not redirect the write.
    outside = tmp_path / "outside.txt"
    outside.write_text("keep\n")
    link = tmp_path / "run" / "metrics.json"
    link.parent.mkdir()
    link.symlink_to(outside)
    atomic_write_json(link, {"v": 1})
    assert not link.is_symlink() and '"v": 1' in link.read_text() and outside.read_text() == "keep\n"


def test_a_fifo_gets_the_bytes_and_stays_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    write_output_text(fifo, "a,b\n1,2\n")
    reader.join(timeout=10)
    assert got == [b"a,b\n1,2\n"]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and not _temps(tmp_path)


def test_a_symlink_stays_and_its_target_gets_the_content(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "board.csv"
    target.write_text("old\n")
    link = tmp_path / "board.csv"
    link.symlink_to(Path("real") / "board.csv")  # relative, as `ln -s` usually makes them
    write_output_text(link, "new\n")
    assert link.is_symlink() and os.readlink(link) == str(Path("real") / "board.csv")
    assert target.read_text() == "new\n"
    assert not _temps(tmp_path, tmp_path / "real")


def test_a_dangling_symlink_creates_the_file_it_names(tmp_path: Path) -> None:
    link = tmp_path / "out.md"
    link.symlink_to(tmp_path / "made.md")
    write_output_text(link, "# board\n")
    assert link.is_symlink() and (tmp_path / "made.md").read_text() == "# board\n"


def test_a_symlink_loop_is_an_os_error_and_stays(tmp_path: Path) -> None:
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    with pytest.raises(OSError):
        write_output_text(loop, "x")
    assert loop.is_symlink()


def test_a_character_device_stays_a_device(tmp_path: Path) -> None:
    node = tmp_path / "fakedev"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # the null device's numbers
    except (PermissionError, OSError) as exc:
        pytest.skip(f"cannot create a device node here: {exc}")
    try:
        write_output_text(node, "discarded")
    except PermissionError as exc:  # a mount with nodev refuses to open it
        pytest.skip(f"cannot open a device node here: {exc}")
    assert stat.S_ISCHR(os.lstat(node).st_mode) and not _temps(tmp_path)


def test_a_directory_target_is_still_an_error(tmp_path: Path) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    with pytest.raises(IsADirectoryError):
        write_output_text(folder, "x")
    assert folder.is_dir() and not _temps(tmp_path)


@pytest.fixture(scope="module")
def budget_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished budget-family run (a plug-in that writes notes; the endpoint is never asked to answer)."""
    root = tmp_path_factory.mktemp("outputs")
    (root / "notes.py").write_text(textwrap.dedent(PLUGIN), encoding="utf-8")
    code, text = _cli("generate", "--family", "budget", "--domain", "films", "--seed", "0",
                      "--out", str(root / "env"))
    assert code == 0, text
    with FakeEndpoint() as ep:
        code, text = _cli("run", "--env", str(root / "env" / "data.json"), "--agent", f"{root / 'notes.py'}:make",
                          "--out", str(root / "run"), "--set", f"llm.default.base_url={ep.base_url}",
                          "--set", "llm.default.model=fake-model")
    assert code == 0, text
    return root / "run"


def test_leaderboard_out_csv_dev_stdout_prints_the_csv(budget_run: Path) -> None:
    if not os.path.exists("/dev/stdout"):
        pytest.skip("no /dev/stdout on this system")
    res = subprocess.run([sys.executable, "-m", "amemgym", "leaderboard", str(budget_run), "--out-csv", "/dev/stdout"],
                         capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 0, res.stderr
    assert "group,rank,run,agent" in res.stdout and "Traceback" not in res.stderr
    assert os.path.islink("/dev/stdout") or stat.S_ISCHR(os.stat("/dev/stdout").st_mode)


def test_dev_stdout_redirected_to_a_file_keeps_the_table_before_the_csv(budget_run: Path, tmp_path: Path) -> None:
    # `leaderboard --out-csv /dev/stdout > board.txt`: the CSV goes after the table the command printed, into
    # the file the shell opened. Before, the CSV was renamed over board.txt and the table went to the old,
    # unlinked file; opening /dev/stdout anew would have written it over the table from offset 0.
    if not os.path.exists("/dev/stdout"):
        pytest.skip("no /dev/stdout on this system")
    board = tmp_path / "board.txt"
    with board.open("wb") as fh:
        res = subprocess.run([sys.executable, "-m", "amemgym", "leaderboard", str(budget_run), "--out-csv",
                              "/dev/stdout"], stdout=fh, stderr=subprocess.PIPE, text=True, timeout=120, check=False)
    assert res.returncode == 0, res.stderr
    text = board.read_text(encoding="utf-8")
    assert "run" in text.split("group,rank,run,agent")[0]  # the table is still there, before the CSV
    assert text.count("group,rank,run,agent") == 1


def test_reader_outputs_onto_a_link_and_a_folder(budget_run: Path, tmp_path: Path) -> None:
    target = tmp_path / "export.jsonl"
    link = tmp_path / "latest.jsonl"
    link.symlink_to(target)
    code, text = _cli("export", str(budget_run), "-o", str(link))
    assert code == 0, text
    assert link.is_symlink() and target.read_text().count("\n") >= 1
    code, text = _cli("leaderboard", str(budget_run), "--out-md", str(tmp_path))
    assert code == 2 and "--out-md" in text and "a directory" in text and "Traceback" not in text
