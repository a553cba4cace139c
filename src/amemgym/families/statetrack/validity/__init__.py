"""Validity suite (docs/design.md §8): shortcut strategies, reference agents, the data audit and the simulator audit."""

from .audit import CHECKS, AuditFinding, DataAudit, audit_environment
from .strategies import Strategy, TextVectors, reference_strategies, shortcut_strategies
from .suite import DECISION_RULE, FAMILIES, LeakyQuestion, StrategyScore, ValidityReport, run_suite, wilson

__all__ = [
    "CHECKS",
    "DECISION_RULE",
    "FAMILIES",
    "AuditFinding",
    "DataAudit",
    "LeakyQuestion",
    "Strategy",
    "StrategyScore",
    "TextVectors",
    "ValidityReport",
    "audit_environment",
    "reference_strategies",
    "run_suite",
    "shortcut_strategies",
    "wilson",
]
