"""A run start leaves the temp files of killed writers where they are."""
import amemgym.families.budget.batch as batch
import amemgym.run.engine as engine

engine.remove_stale_temps = lambda root: 0
batch.remove_stale_temps = lambda root: 0
