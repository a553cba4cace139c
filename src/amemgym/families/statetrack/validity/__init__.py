"""Validity suite (docs/design.md §8): shortcut strategies, reference agents, the data audit and the simulator audit.

Each caller imports the module it needs (``suite.run_suite``, ``strategies.TextVectors``, ``audit``,
``exposure``, ``sim_audit``, ...): a run reads the exposure check and the simulator audit without loading the
suite and its optimiser.
"""
