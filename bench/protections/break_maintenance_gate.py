"""The budget maintenance gate opened: every maintenance question is credited whatever was stored."""
import amemgym.families.budget.scoring as scoring
from amemgym.families.budget.solve import axis_of

scoring.maintenance_credit = lambda episode, ledger: {
    q.id: True for q in episode.questions if axis_of(q.kind) == "maintenance"}
