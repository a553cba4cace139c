"""The original AMemGym scripts' module paths, kept so their commands work unchanged.

``python -m amemgym.eval.overall|upperbound|random|diagnosis`` run
:mod:`amemgym.families.statetrack.compat`, which maps the original flags and config
files onto amemgym's runner. Nothing else lives here.
"""
