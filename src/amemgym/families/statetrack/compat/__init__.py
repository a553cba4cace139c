"""Compatibility with the original AMemGym scripts: their flags, config files and output folders.

The original's module paths (``python -m amemgym.eval.overall|upperbound|random|diagnosis``) are thin
entry points in :mod:`amemgym.eval` that run the modules here; results land in amemgym's run-directory
format and, beside it, in the original's output shape (see docs/compat.md).
"""
