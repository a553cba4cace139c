"""A run start leaves the temp files of killed writers where they are."""
import amemgym.engine.runner as unit_runner
import amemgym.families.statetrack.runner as engine

engine.remove_stale_temps = lambda root: 0
unit_runner.remove_stale_temps = lambda root: 0
