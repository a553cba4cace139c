"""``python -m amemgym`` and the ``amemgym`` console script.

The command line is imported inside :func:`main`, so Ctrl-C during that first second ends as it does later: one
line and exit 130, not an import-time traceback.
"""

from __future__ import annotations

import sys


def main() -> None:
    """Import the command line, then run it."""
    try:
        from .cli import app
    except KeyboardInterrupt:
        sys.stderr.write("interrupted; re-run the same command to resume\n")
        raise SystemExit(130) from None
    app()


if __name__ == "__main__":
    main()
