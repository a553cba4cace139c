"""Compatibility entry points for people coming from the original AMemGym scripts.

``python -m amemgym.eval.overall|upperbound|random|diagnosis`` accept the original flags and map
them onto amemgym's runner; results land in amemgym's run-directory format.
"""
