"""``python -m amemgym`` runs the command line."""

from .cli import main

main()
