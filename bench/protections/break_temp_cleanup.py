"""A run start leaves the temp files of killed writers where they are."""
import amemgym.engine.runner as unit_runner

unit_runner.remove_stale_temps = lambda root: 0
