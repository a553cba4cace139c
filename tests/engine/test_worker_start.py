"""A worker that finds its driver gone while it starts ends quietly (found by killing runs at random moments:
each worker printed concurrent.futures' 'Exception in initializer' traceback on the terminal)."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_a_worker_whose_driver_is_gone_ends_without_a_traceback() -> None:
    code = textwrap.dedent("""
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor
        from concurrent.futures.process import BrokenProcessPool

        from amemgym.engine.processes import _set_reports

        if __name__ == "__main__":
            # pid 1 is never this process: the worker sees a driver that is not its parent, as after a kill.
            ctx = multiprocessing.get_context("spawn")
            with ProcessPoolExecutor(1, mp_context=ctx, initializer=_set_reports, initargs=(None, 1)) as pool:
                try:
                    pool.submit(print, "never").result(timeout=60)
                except BrokenProcessPool:
                    print("broken")
    """)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert "broken" in res.stdout, res.stdout + res.stderr
    assert "Traceback" not in res.stderr and "Exception in initializer" not in res.stderr, res.stderr


def test_ctrl_c_while_the_command_line_imports_is_one_line(tmp_path) -> None:
    import os
    import signal
    import time

    proc = subprocess.Popen([sys.executable, "-m", "amemgym", "info"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    time.sleep(0.3)  # most likely inside the command line's imports; after them the command handles it itself
    os.killpg(proc.pid, signal.SIGINT)
    out, errors = proc.communicate(timeout=120)
    assert "Traceback" not in errors, errors
    assert proc.returncode == 0 or (proc.returncode == 130 and "interrupted" in errors), (proc.returncode, errors)
